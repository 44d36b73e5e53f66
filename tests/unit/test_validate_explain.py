"""What gold validation says about a task that did not score 1.0."""

from __future__ import annotations

from intercode.validate import explain


def test_python_reward_below_one_shows_the_reward_information():
    record = {"reward": 0.6666666666666666, "turns": [{"exit_code": None}],
              "reward_info": {"tests": [{"passed": True}, {"passed": False,
                                                           "error": "TimeoutError"}]}}
    text = explain(record)
    assert text.startswith("reward 0.666")
    assert "TimeoutError" in text


def test_bash_parts_still_explain_themselves():
    record = {"reward": 0.5, "turns": [{"exit_code": 0}],
              "reward_info": {"reward_parts": {"answer_similarity": 0.1},
                              "similarity": 0.3}}
    assert explain(record) == "output differs between two runs (similarity 0.300)"


def test_a_gold_that_scores_one_says_so():
    assert explain({"reward": 1.0, "turns": [], "reward_info": {}}) == "scores 1.0"
