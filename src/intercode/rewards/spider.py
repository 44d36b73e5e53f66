"""The query text Spider's official execution evaluator compares, in its two settings.

``taoyds/test-suite-sql-eval`` (``exec_eval.py``, ``eval_exec_match``) first repairs
spaced comparison operators (``> =`` becomes ``>=``, likewise ``< =`` and ``! =``,
anywhere in the text). Then, unless it runs with ``--keep_distinct``, it deletes every
``DISTINCT`` keyword from both the gold and the predicted query (a token-level
deletion that leaves the white space around it: ``COUNT(DISTINCT x)`` becomes
``COUNT( x)``; strings and quoted names are kept) and executes what is left on the
pristine database. Both results are compared with ``result_eq``
(:func:`intercode.rewards.sql.result_eq`), in order only when the gold, after these
edits, contains ``order by``.

intercode's ``exec_match`` is the ``--keep_distinct`` setting; ``exec_match_nodistinct``
is the evaluator's default.
"""

from __future__ import annotations

import re

__all__ = ["METRICS", "official_text", "remove_distinct"]

METRICS = ("exec_match", "exec_match_nodistinct")
_OPERATORS = (("> =", ">="), ("< =", "<="), ("! =", "!="))
# what is kept whole (strings, quoted names, comments), or the keyword as a word of its own
_DISTINCT = re.compile(r"""
    ( '(?:[^'\\]|\\.|'')*(?:'|\Z) | "(?:[^"\\]|\\.|"")*(?:"|\Z) | `(?:[^`]|``)*(?:`|\Z)
    | /\*.*?(?:\*/|\Z) | --[^\n]* | \#[^\n]* )
  | (?<![\w$])distinct(?![\w$])
""", re.I | re.S | re.X)


def repair_operators(sql: str) -> str:
    """The evaluator's post-processing of a query: spaced comparison operators joined."""
    for spaced, joined in _OPERATORS:
        sql = sql.replace(spaced, joined)
    return sql


def remove_distinct(sql: str) -> str:
    """``sql`` without its ``DISTINCT`` keywords (words only; the rest kept as is)."""
    return _DISTINCT.sub(lambda m: m.group(1) or "", sql)


def official_text(sql: str, keep_distinct: bool) -> str:
    """The query text the evaluator executes, with or without ``--keep_distinct``."""
    sql = repair_operators(sql)
    return sql if keep_distinct else remove_distinct(sql)
