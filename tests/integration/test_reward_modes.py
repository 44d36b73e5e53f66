"""Rewards made for RL: success and baseline beside the paper's, chosen per environment or
run, recorded in every record and in the run's configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import intercode
from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.errors import ConfigError
from intercode.runner.run import execute, run_config


def episode(reward: str, actions: list[str], task: int = 0) -> tuple[float, dict]:
    env = intercode.make("bash", dataset="bash-demo", reward=reward)
    try:
        env.reset(options={"task": task})
        for action in actions:
            env.step(action)
        _, value, _, _, info = env.step("submit")
        return float(value), info
    finally:
        env.close()


def test_doing_nothing_earns_the_paper_floor_and_zero_otherwise() -> None:
    paper, _ = episode("paper", [])
    assert 0.3 < paper < 1.0  # InterCode's partial credit for the untouched tree
    for mode in ("success", "baseline"):
        value, info = episode(mode, [])
        assert value == 0.0 and info["reward_mode"] == mode
        assert info["paper_reward"] == paper
    assert episode("baseline", [])[1]["baseline"] == paper


def test_solving_is_one_and_doing_harm_is_below_zero_under_baseline() -> None:
    gold = get("bash").gold_action(load_dataset("bash-demo")[0])
    for mode in ("paper", "success", "baseline"):
        assert episode(mode, [gold])[0] == 1.0
    harm, info = episode("baseline", ["echo wrong; touch /tmp/zz"])
    assert harm < 0.0 and info["paper_reward"] < info["baseline"]
    assert episode("success", ["echo wrong"])[0] == 0.0


def test_the_mode_is_recorded_and_a_resume_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    execute(run_config(env="bash", dataset="bash-demo", agent="noop", output=out,
                       tasks=(0, 1), workers=1, reward="baseline"), progress=False)
    assert json.loads((out / "config.json").read_text())["reward"] == "baseline"
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in records] == [0.0, 0.0]
    assert all(r["reward_info"]["reward_mode"] == "baseline" for r in records)
    with pytest.raises(ConfigError, match="reward was 'baseline'"):
        execute(run_config(env="bash", dataset="bash-demo", agent="noop", output=out,
                           tasks=(0, 1), workers=1, resume=True), progress=False)


def test_an_unknown_mode_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="unknown reward 'bogus'"):
        intercode.make("bash", dataset="bash-demo", reward="bogus")


def answer_env(tmp_path: Path, check: str) -> Any:
    from intercode.envs.bash import BashEnv

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": 0, "query": "Print alpha then beta.", "gold": "echo alpha beta"}\n')
    return BashEnv(str(tasks), answer_check=check)


@pytest.mark.parametrize(("answer", "tfidf", "strict"), [
    ("echo alpha beta", 1.0, 1.0),
    ("echo beta alpha", 1.0, 0.67),         # order: TF-IDF cannot see it
    ("echo ALPHA beta", 1.0, 0.67),         # case
    ("echo alpha, beta!", 1.0, 0.67),       # punctuation
    ("printf 'alpha beta  \\r\\n\\n'", 1.0, 1.0),  # line ends and trailing blanks only
])
def test_the_strict_answer_check_sees_order_case_and_punctuation(tmp_path: Path, answer: str,
                                                                 tfidf: float,
                                                                 strict: float) -> None:
    for check, expected in (("tfidf", tfidf), ("strict", strict)):
        env = answer_env(tmp_path, check)
        try:
            env.reset(options={"task": 0})
            env.step(answer)
            _, reward, _, _, info = env.step("submit")
            assert reward == expected, (check, answer, info)
            assert info["answer_exact"] is (strict == 1.0)
        finally:
            env.close()


def test_the_answer_check_is_an_option_of_bash_only(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from intercode.cli import main

    code = main(["eval", "sql", "--answer-check", "strict", "--agent", "gold",
                 "--output", str(tmp_path / "r")])
    said = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and said == ["intercode: error: --answer-check applies only to the bash "
                                  "environment, not sql"]
