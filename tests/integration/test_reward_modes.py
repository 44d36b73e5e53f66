"""Rewards made for RL: success and baseline beside the paper's, chosen per environment or
run, recorded in every record and in the run's configuration."""

from __future__ import annotations

import json
from pathlib import Path

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
