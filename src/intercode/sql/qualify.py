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
byte for byte. This is a convenience for agents, not a boundary: where a statement can
reach is decided by the backend (attached images, server grants).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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

TABLE_WORDS = {"FROM", "JOIN", "STRAIGHT_JOIN", "UPDATE", "INTO", "TABLE", "TABLES",
               "REFERENCES"}
EXPR_WORDS = {"SELECT", "WHERE", "ON", "USING", "SET", "VALUES", "VALUE", "GROUP", "ORDER",
              "HAVING", "LIMIT", "WINDOW", "UNION", "EXCEPT", "INTERSECT", "RETURNING"}
FIRST_WORDS = {"DESCRIBE", "DESC", "EXPLAIN"}  # a table only as a statement's first word
FROM_FUNCTIONS = {"TRIM", "EXTRACT", "SUBSTRING", "SUBSTR", "POSITION", "OVERLAY"}
INDEX_WORDS = {"INDEX", "TRIGGER"}  # CREATE INDEX i ON t (...): that ON names a table


@dataclass(frozen=True)
class Token:
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
    out = []
    for m in _LEXERS[backslash_escapes].finditer(sql):
        kind = m.lastgroup or "other"
        if not significant or kind not in ("ws", "comment"):
            out.append(Token(kind, m.group(), m.start()))
    return out


@dataclass
class _Level:
    """The clause a parenthesis level is in."""

    table: bool = False
    function_from: bool = False  # TRIM(x FROM y) and friends: that FROM is no table


class _Walker:
    """Tracks clauses across the tokens and yields the database parts."""

    def __init__(self, toks: list[Token], is_database: Callable[[str, str], bool]) -> None:
        self.toks = toks
        self.is_database = is_database
        self.levels = [_Level()]
        self.first = True  # at a statement's first word
        self.index_on = False

    def walk(self) -> Iterator[Token]:
        i = 0
        while i < len(self.toks):
            chain = self._chain(i)
            if len(chain) > 1:
                found = self._database(chain)
                if found is not None:
                    yield found
                i += 2 * len(chain) - 1
                self.first = False
                continue
            self._clause(i)
            i += 1

    def _chain(self, i: int) -> list[Token]:
        """``a.b`` or ``a.b.c`` (``*`` allowed last) starting at token ``i``."""
        toks = self.toks
        if toks[i].name is None or (i > 0 and toks[i - 1].text == "."):
            return [toks[i]]
        chain = [toks[i]]
        j = i + 1
        while (len(chain) < 3 and j + 1 < len(toks) and toks[j].text == "."
               and (toks[j + 1].name is not None or toks[j + 1].text == "*")):
            chain.append(toks[j + 1])
            j += 2
            if chain[-1].text == "*":
                break
        return chain

    def _database(self, chain: list[Token]) -> Token | None:
        head, table = chain[0], chain[1]
        if head.name is None or table.name is None:
            return None
        if len(chain) == 3 or self.levels[-1].table:
            return head if self.is_database(head.name, table.name) else None
        return None

    def _clause(self, i: int) -> None:
        tok = self.toks[i]
        level = self.levels[-1]
        if tok.text == "(":
            before = self.toks[i - 1].word if i > 0 else ""
            self.levels.append(_Level(table=level.table,
                                      function_from=before in FROM_FUNCTIONS))
        elif tok.text == ")":
            if len(self.levels) > 1:
                self.levels.pop()
        elif tok.text == ";":
            self.levels = [_Level()]
            self.first, self.index_on = True, False
            return
        word = tok.word
        if self.first and word in FIRST_WORDS:
            level.table = True
        elif word == "ON" and self.index_on and len(self.levels) == 1:
            level.table, self.index_on = True, False
        elif word == "FROM" and level.function_from:
            level.table = False
        elif word == "UPDATE" and i > 0 and self.toks[i - 1].word == "KEY":
            level.table = False  # ON DUPLICATE KEY UPDATE: assignments follow
        elif word in TABLE_WORDS:
            level.table = True
        elif word in EXPR_WORDS:
            level.table = False
        elif word in INDEX_WORDS and len(self.levels) == 1:
            self.index_on = True
        self.first = False


def database_parts(sql: str, is_database: Callable[[str, str], bool],
                   backslash_escapes: bool = True) -> list[Token]:
    """The tokens of ``sql`` that name a database: the ``db`` of ``db.table`` in a table
    position and of ``db.table.column`` anywhere, where ``is_database(db, table)``."""
    return list(_Walker(tokens(sql, backslash_escapes), is_database).walk())
