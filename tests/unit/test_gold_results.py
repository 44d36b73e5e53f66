"""The gold results a SQL backend keeps are bounded: a long run over many tasks with
large results keeps the latest used, no more."""

from __future__ import annotations

from intercode.sql import backend
from intercode.sql.backend import GoldResults
from intercode.sql.results import QueryResult


def test_the_latest_used_are_kept_and_no_more(monkeypatch):
    monkeypatch.setattr(backend, "MAX_GOLD_RESULTS", 3)
    kept = GoldResults()
    results = {n: QueryResult(rows=[(n,)]) for n in range(5)}
    for n in range(3):
        kept[("db", str(n))] = results[n]
    assert kept.get(("db", "0")) is results[0]  # used: now the latest
    kept[("db", "3")] = results[3]
    assert len(kept) == 3
    assert kept.get(("db", "1")) is None  # the least recently used went
    assert kept.get(("db", "0")) is results[0] and kept.get(("db", "3")) is results[3]
    kept[("db", "0")] = results[4]
    assert len(kept) == 3 and kept.get(("db", "0")) is results[4]


def test_their_size_together_is_bounded(monkeypatch):
    monkeypatch.setattr(backend, "MAX_GOLD_SIZE", 1000)
    kept = GoldResults()
    big = QueryResult(rows=[("x" * 300,)])  # about 380 bytes (result_size)
    assert 300 < backend.result_size(big) < 500
    kept[("db", "a")] = big
    kept[("db", "b")] = big
    kept[("db", "c")] = big  # over 1000 together: the least recently used goes
    assert len(kept) == 2 and kept.get(("db", "a")) is None
    kept[("db", "huge")] = QueryResult(rows=[("y" * 2000,)])  # alone over the budget
    assert kept.get(("db", "huge")) is None and len(kept) == 2
    kept[("db", "b")] = QueryResult(rows=[(1,)])  # replaced: its old size is given back
    kept[("db", "d")] = big
    assert len(kept) == 3
