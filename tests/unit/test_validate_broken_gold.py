"""A broken gold that fails to run: its episode is an error (it cannot be scored), which
validation files under the known failures, not under unexpected errors."""

from __future__ import annotations

from intercode.datasets import load_dataset
from intercode.datasets.known_issues import KnownIssue
from intercode.validate import classify


def test_a_known_broken_gold_that_fails_is_a_known_failure() -> None:
    ds = load_dataset("spider-dev", "sql")
    failed = {"status": "error", "error": "RewardError: the gold query failed (You have an "
              "error in your SQL syntax); the episode cannot be scored"}
    broken = KnownIssue("spider", 0, "broken_gold", "`COUNT (*)` is a syntax error in MySQL",
                        None)
    report = classify("sql", ds, {0: failed, 1: failed}, {0: broken})
    assert [e["task"] for e in report["fail_known"]] == [0]
    assert [e["task"] for e in report["errors"]] == [1]  # no known issue: unexpected
    assert [e["task"] for e in report["unexpected"]] == [1]
