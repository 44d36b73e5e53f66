"""The gold's side's answers kept for the same question (``envs/outcome_memo.py``)."""

from __future__ import annotations

from intercode.envs.outcome_memo import OutcomeMemo, decided_alone

GOLD_Q = {"steps": ["", "def f(x):\n    return x"], "tests": ["assert f(1) == 1"], "timeout": 5.0}
PASS = [{"output": "", "error": ""}]
FAIL = [{"error": "Error: "}]
LATE = [{"error": "Error: the test took more than 5 s"}]


def answer(value):
    return {"tests": [{"template": "assert __u(0) == 1", "units": [{"v": value}]}],
            "timeout": 5.0}


def confirmed(memo, outcomes=PASS):
    memo.saw_gold(GOLD_Q, outcomes)
    memo.saw_gold(GOLD_Q, outcomes)
    return memo


def test_a_gold_is_kept_once_two_scorings_agree():
    memo = OutcomeMemo()
    memo.saw_gold(GOLD_Q, PASS)
    assert memo.gold(GOLD_Q) is None
    memo.saw_gold(GOLD_Q, PASS)
    assert memo.gold(GOLD_Q) == PASS


def test_a_gold_whose_scorings_differ_is_never_kept():
    memo = OutcomeMemo()
    memo.saw_gold(GOLD_Q, PASS)
    memo.saw_gold(GOLD_Q, FAIL)
    for _ in range(3):
        memo.saw_gold(GOLD_Q, PASS)
    assert memo.gold(GOLD_Q) is None
    # and one confirmed, then contradicted, is dropped for good
    memo = confirmed(OutcomeMemo())
    memo.saw_gold(GOLD_Q, FAIL)
    memo.saw_gold(GOLD_Q, PASS)
    assert memo.gold(GOLD_Q) is None


def test_an_answer_is_kept_only_when_it_matches_the_confirmed_gold():
    memo = OutcomeMemo()
    memo.saw_answer(GOLD_Q, answer(1), PASS)  # the gold not confirmed yet
    assert memo.answer(GOLD_Q, answer(1)) is None
    confirmed(memo)
    memo.saw_answer(GOLD_Q, answer(2), FAIL)  # a failure is always judged afresh
    assert memo.answer(GOLD_Q, answer(2)) is None
    memo.saw_answer(GOLD_Q, answer(1), PASS)
    assert memo.answer(GOLD_Q, answer(1)) == PASS
    assert memo.answer(GOLD_Q, answer(1.0)) is None  # another value: another question
    other_gold = {**GOLD_Q, "timeout": 6.0}
    assert memo.answer(other_gold, answer(1)) is None


def test_outcomes_of_a_test_that_ran_out_of_time_are_never_kept():
    assert not decided_alone(LATE) and decided_alone(PASS) and decided_alone(FAIL)
    memo = confirmed(OutcomeMemo(), LATE)
    assert memo.gold(GOLD_Q) is None
    memo = confirmed(OutcomeMemo())
    memo.saw_answer(GOLD_Q, answer(1), LATE)
    assert memo.answer(GOLD_Q, answer(1)) is None


def test_copies_are_handed_out_and_the_memo_is_bounded():
    memo = confirmed(OutcomeMemo(entries=3))
    got = memo.gold(GOLD_Q)
    assert got is not None
    got[0]["error"] = "tampered"
    assert memo.gold(GOLD_Q) == PASS
    for value in range(10):
        memo.saw_answer(GOLD_Q, answer(value), PASS)
    kept = [v for v in range(10) if memo.answer(GOLD_Q, answer(v)) is not None]
    assert kept == [7, 8, 9]


def test_the_memo_is_bounded_by_size_too(monkeypatch):
    from intercode.envs import outcome_memo

    monkeypatch.setattr(outcome_memo, "MAX_MAP_CHARS", 200)
    memo = confirmed(OutcomeMemo())
    for value in range(20):
        memo.saw_answer(GOLD_Q, answer(value), PASS)
    kept = [v for v in range(20) if memo.answer(GOLD_Q, answer(v)) is not None]
    assert 0 < len(kept) < 20 and kept == list(range(20 - len(kept), 20))
    assert memo._answers.total == sum(memo._answers.sizes.values()) <= 200
    big = [{"output": "x" * (outcome_memo.MAX_CHARS + 1), "error": ""}]
    memo = OutcomeMemo()
    memo.saw_gold(GOLD_Q, big)
    memo.saw_gold(GOLD_Q, big)
    assert memo.gold(GOLD_Q) is None
