"""examples/best_of_n.py: best-of-n with backtracking, against the scripted server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import intercode
from intercode import testing
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import ScriptedChatServer

PATH = Path(__file__).resolve().parents[2] / "examples" / "best_of_n.py"
spec = importlib.util.spec_from_file_location("best_of_n", PATH)
assert spec is not None and spec.loader is not None
best_of_n = importlib.util.module_from_spec(spec)
sys.modules["best_of_n"] = best_of_n  # dataclasses look their module up
spec.loader.exec_module(best_of_n)


@pytest.mark.parametrize("name", ["sql", "bash"])
def test_one_candidate_per_turn_backtracks_until_the_gold_and_ends_in_the_best_state(name):
    env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    try:
        env.reset(options={"task": 0})
        responder = best_of_n.DemoResponder(GoldResponder(env.dataset))
        with ScriptedChatServer(responder) as server:
            client = ChatClient(ModelConfig("scripted", base_url=server.url, retries=0))
            out = best_of_n.search(env, client, n=1, turns=3)
        assert out.reward == 1.0
        assert out.backtracks == 2  # the useless and the harmful command did not help
        assert [a for a, _o in env.history] == [a for a, _o, _r in out.steps]
        assert len(out.steps) == 1  # the best state is the gold from the start, not after junk
        assert env.evaluate().reward == 1.0
    finally:
        env.close()


def test_without_the_gold_the_search_keeps_the_best_state_it_saw():
    out = best_of_n.run("sql", task=0, n=2, turns=1)  # a useless and a harmful command
    assert out.reward < 1.0 and out.calls == 2 and out.backtracks == 1
    assert out.steps == []  # neither beat the start, so the start is kept


def test_the_command_line_reports_the_best_reward(capsys):
    argv, sys.argv = sys.argv, ["best_of_n.py", "--env", "sql", "--n", "3", "--turns", "2"]
    try:
        assert best_of_n.main() == 0
    finally:
        sys.argv = argv
    assert "best reward 1.00" in capsys.readouterr().out
