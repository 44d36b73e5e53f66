"""Find the ``db`` of ``db.table`` references in a statement, the way MySQL reads them.

MySQL resolves a dotted name by where it stands. In a table position (after ``FROM``,
``JOIN``, ``UPDATE``, ``INTO``, ``TABLE``, ``REFERENCES``, a first ``DESCRIBE``, ...)
``a.b`` is database ``a``, table ``b``. In an expression ``a.b`` is table (or alias)
``a``, column ``b``, and only ``a.b.c`` names a database. So ``orchestra.Orchestra`` in
``SELECT ... FROM orchestra ORDER BY orchestra.Orchestra`` is a column, even though
database ``orchestra`` has a table ``orchestra``.

The statement is split into tokens (strings, quoted names and comments are single
tokens, so nothing inside them is touched); clauses are tracked per parenthesis level.
Only the spans of the database parts found are replaced; the rest of the text is kept
byte for byte. A statement in which no database name is followed by a dot is not
tokenised at all, and one longer than ``MAX_CHARS`` (64 KiB) is passed on as written (its
``db.table`` names are not mapped), which bounds the host time a hostile statement costs.

This is a convenience for agents, not a boundary: where a statement can reach is
decided by the backend (attached images, server grants).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import NamedTuple

__all__ = ["Token", "database_parts", "tokens"]

_COMMON = r"""
  (?P<ws>\s+)
| (?P<comment>--[^\n]*|\#[^\n]*|/\*.*?(?:\*/|\Z))
| (?P<quoted>`(?:[^`]|``)*(?:`|\Z))
| (?P<string>{string})
| (?P<word>[\w$]+)
| (?P<other>.)
"""
_MYSQL_STRING = r"'(?:[^'\\]|\\.|'')*(?:'|\Z)|\"(?:[^\"\\]|\\.|\"\")*(?:\"|\Z)"
_SQLITE_STRING = r"'(?:[^']|'')*(?:'|\Z)|\"(?:[^\"]|\"\")*(?:\"|\Z)"
_LEXERS = {
    True: re.compile(_COMMON.format(string=_MYSQL_STRING), re.S | re.X),
    False: re.compile(_COMMON.format(string=_SQLITE_STRING), re.S | re.X),
}

MAX_CHARS = 1 << 16
TABLE_WORDS = {"FROM", "JOIN", "STRAIGHT_JOIN", "UPDATE", "INTO", "TABLE", "TABLES",
               "REFERENCES"}
EXPR_WORDS = {"SELECT", "WHERE", "ON", "USING", "SET", "VALUES", "VALUE", "GROUP", "ORDER",
              "HAVING", "LIMIT", "WINDOW", "UNION", "EXCEPT", "INTERSECT", "RETURNING"}
FIRST_WORDS = {"DESCRIBE", "DESC", "EXPLAIN"}  # a table only as a statement's first word
FROM_FUNCTIONS = {"TRIM", "EXTRACT", "SUBSTRING", "SUBSTR", "POSITION", "OVERLAY"}
INDEX_WORDS = {"INDEX", "TRIGGER"}  # CREATE INDEX i ON t (...): that ON names a table


class Token(NamedTuple):
    """One token: its kind (a group name of the lexer), text and start offset."""

    kind: str
    text: str
    start: int

    @property
    def word(self) -> str:
        """The upper-cased text of a bare word, else ``""``."""
        return self.text.upper() if self.kind == "word" else ""

    @property
    def name(self) -> str | None:
        """The identifier a bare or backquoted name stands for."""
        if self.kind == "word":
            return self.text
        if self.kind == "quoted" and len(self.text) >= 2 and self.text.endswith("`"):
            return self.text[1:-1].replace("``", "`")
        return None


def tokens(sql: str, backslash_escapes: bool = True, significant: bool = True) -> list[Token]:
    """The tokens of ``sql``; only the significant ones (no white space, no comments)
    unless ``significant`` is false (then they cover the text)."""
    skip = ("ws", "comment") if significant else ()
    return [Token(m.lastgroup or "other", m.group(), m.start())
            for m in _LEXERS[backslash_escapes].finditer(sql) if m.lastgroup not in skip]


@lru_cache(maxsize=8)
def _prefilter(names: frozenset[str]) -> re.Pattern[str]:
    """A database name, maybe backquoted, then a dot: the statements worth a walk."""
    alternatives = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    return re.compile(rf"(?<![\w$])`?(?:{alternatives})`?\s*\.", re.I)


class _Walk:
    """One pass over the tokens: clause per parenthesis level, dotted chains."""

    def __init__(self, toks: list[Token], is_database: Callable[[str, str], bool]) -> None:
        self.toks = toks
        self.is_database = is_database
        self.table = [False]  # per parenthesis level: in a table position
        self.function_from = [False]  # TRIM(x FROM y) and friends: that FROM is no table
        self.first = True  # at a statement's first word
        self.index_on = False
        self.found: list[Token] = []

    def run(self) -> list[Token]:
        toks, n, i = self.toks, len(self.toks), 0
        while i < n:
            if i + 2 < n and toks[i + 1].text == "." and (i == 0 or toks[i - 1].text != "."):
                i = self._chain(i)
            else:
                self._clause(i)
                i += 1
        return self.found

    def _chain(self, i: int) -> int:
        """``a.b`` or ``a.b.c`` (``*`` last allowed) at token ``i``; the index after it."""
        toks = self.toks
        parts = [toks[i]]
        j = i + 1
        while (len(parts) < 3 and j + 1 < len(toks) and toks[j].text == "."
               and (toks[j + 1].name is not None or toks[j + 1].text == "*")):
            parts.append(toks[j + 1])
            j += 2
            if parts[-1].text == "*":
                break
        if len(parts) == 1:  # a lone name before a dot (or a number)
            self._clause(i)
            return i + 1
        head, table = parts[0].name, parts[1].name
        if (head is not None and table is not None and (len(parts) == 3 or self.table[-1])
                and self.is_database(head, table)):
            self.found.append(parts[0])
        self.first = False
        return j

    def _clause(self, i: int) -> None:
        tok = self.toks[i]
        text = tok.text
        if text == "(":
            before = self.toks[i - 1].word if i > 0 else ""
            self.table.append(self.table[-1])
            self.function_from.append(before in FROM_FUNCTIONS)
        elif text == ")":
            if len(self.table) > 1:
                self.table.pop()
                self.function_from.pop()
        elif text == ";":
            self.table, self.function_from = [False], [False]
            self.first, self.index_on = True, False
            return
        word = tok.word
        if word:
            self._word(word, i)
        self.first = False

    def _word(self, word: str, i: int) -> None:
        top = len(self.table) == 1
        if self.first and word in FIRST_WORDS:
            self.table[-1] = True
        elif word == "ON" and self.index_on and top:
            self.table[-1], self.index_on = True, False
        elif word == "FROM" and self.function_from[-1]:
            self.table[-1] = False
        elif word == "UPDATE" and i > 0 and self.toks[i - 1].word == "KEY":
            self.table[-1] = False  # ON DUPLICATE KEY UPDATE: assignments follow
        elif word in TABLE_WORDS:
            self.table[-1] = True
        elif word in EXPR_WORDS:
            self.table[-1] = False
        elif word in INDEX_WORDS and top:
            self.index_on = True


def database_parts(sql: str, is_database: Callable[[str, str], bool],
                   backslash_escapes: bool = True,
                   names: Collection[str] = ()) -> list[Token]:
    """The tokens of ``sql`` that name a database: the ``db`` of ``db.table`` in a table
    position and of ``db.table.column`` anywhere, where ``is_database(db, table)``.

    ``names``: the database names, if known; a statement where none of them is followed
    by a dot is then answered without tokenising it. A statement longer than
    ``MAX_CHARS`` has none.
    """
    if len(sql) > MAX_CHARS:
        return []
    if names and not _prefilter(frozenset(names)).search(sql):
        return []
    return _Walk(tokens(sql, backslash_escapes), is_database).run()
