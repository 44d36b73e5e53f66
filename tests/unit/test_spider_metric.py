"""The query text Spider's official execution evaluator runs, in both of its settings."""

from __future__ import annotations

import pytest

from intercode.rewards.spider import official_text, remove_distinct, repair_operators


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT DISTINCT country FROM singer", "SELECT  country FROM singer"),
    ("select distinct(country) from singer", "select (country) from singer"),
    ("SELECT count(DISTINCT Nationality) FROM conductor",
     "SELECT count( Nationality) FROM conductor"),
    ("SELECT COUNT(*) FROM (SELECT DiStInCt a FROM t)", "SELECT COUNT(*) FROM (SELECT  a FROM t)"),
    # strings, quoted names, longer words and comments keep the word
    ("SELECT a FROM t WHERE b = 'distinct'", "SELECT a FROM t WHERE b = 'distinct'"),
    ("SELECT `distinct`, distinct_id FROM t", "SELECT `distinct`, distinct_id FROM t"),
    ("SELECT a /* distinct */ FROM t", "SELECT a /* distinct */ FROM t"),
    ("SELECT a FROM t", "SELECT a FROM t"),
])
def test_remove_distinct(sql: str, expected: str) -> None:
    assert remove_distinct(sql) == expected


def test_spaced_operators_are_joined_in_both_settings() -> None:
    assert repair_operators("a > = 1 AND b < = 2 AND c ! = 3") == "a >= 1 AND b <= 2 AND c != 3"
    sql = "SELECT DISTINCT a FROM t WHERE b > = 1"
    assert official_text(sql, keep_distinct=True) == "SELECT DISTINCT a FROM t WHERE b >= 1"
    assert official_text(sql, keep_distinct=False) == "SELECT  a FROM t WHERE b >= 1"
