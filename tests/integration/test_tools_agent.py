"""``--agent tools`` end to end: the real client, the scripted server, real environments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from intercode.agents import prompts
from intercode.agents.llm import StrategyOptions, ToolsPolicy
from intercode.datasets import load_dataset
from intercode.envs.factory import create_env
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import Reply, ScriptedChatServer, call, refusing, sequence
from intercode.runner.episode import run_episode
from intercode.runner.run import RunConfig, execute

CASES = {"bash": ("bash-demo", (0, 1, 2, 3)), "sql": ("spider-dev", (0, 1, 2, 3)),
         "python": ("mbpp-prompt", (0, 1, 2, 3)), "ctf": ("intercode-ctf", (0, 3, 4, 5)),
         "swe": ("swe-demo", (0, 1, 2))}


def run(tmp_path, env, server, stream=False, show_reward=False, turns=10, tasks=None, **kw):
    dataset, default = CASES[env]
    cfg = RunConfig(env=env, dataset=dataset, agent="tools", output=tmp_path / "run",
                    workers=2, tasks=tasks or default, max_turns=turns,
                    model=ModelConfig("scripted", base_url=server.url, retries=1, backoff=0.0,
                                      stream=stream, **kw),
                    strategy=StrategyOptions(show_reward=show_reward))
    summary = execute(cfg, progress=False)
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    return summary, {json.loads(x)["task"]: json.loads(x) for x in lines}


def messages_of(tmp_path):
    lines = (tmp_path / "run" / "messages.jsonl").read_text().splitlines()
    return {m["id"]: m for m in map(json.loads, lines)}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("env", sorted(CASES))
def test_the_gold_answering_model_scores_one_on_every_environment(tmp_path, env, stream):
    dataset, tasks = CASES[env]
    with ScriptedChatServer(GoldResponder(load_dataset(dataset), detour=3)) as server:
        summary, records = run(tmp_path, env, server, stream=stream)
        sent = server.requests
    assert summary["errors"] == 0 and summary["success"] == len(tasks)
    assert all(r["reward"] == 1.0 and r["turns"][-1]["submit"] for r in records.values())
    assert summary["llm"]["calls"] == len(sent)
    assert all(r["tools"] == prompts.tools(env) for r in sent)
    for index, record in records.items():
        valid = [t["valid"] for t in record["turns"]]
        # a detour (no tool call) is one invalid turn, answered with the nudge
        assert valid.count(False) == (1 if index % 3 == 0 else 0)
        if index % 3 == 0:
            assert record["turns"][0]["observation"] == prompts.no_tool_call(env)
    table = messages_of(tmp_path)
    tool_messages = [m for m in table.values() if m["role"] == "tool"]
    called = {c["id"] for m in table.values() for c in m.get("tool_calls", [])}
    assert tool_messages and {m["tool_call_id"] for m in tool_messages} <= called


@pytest.mark.parametrize("env", ["bash", "sql", "python"])
def test_with_the_reward_shown_each_action_is_scored_and_a_solution_ends_it(tmp_path, env):
    dataset, tasks = CASES[env]
    with ScriptedChatServer(GoldResponder(load_dataset(dataset), detour=0)) as server:
        summary, records = run(tmp_path, env, server, show_reward=True)
    assert summary["success"] == len(tasks)
    for record in records.values():
        first = record["turns"][0]
        assert first["reward"] is not None and record["best_turn"] is not None
    if env != "python":  # the gold's execute already scores 1: the pending submit never runs
        assert all(len(r["turns"]) == 1 for r in records.values())
    assert "a reward between 0 and 1" in prompts.tools_system(env, True)
    assert "reward" not in prompts.tools_system(env, False)
    assert prompts.tools_result("out", 0.5, True) == "out\nReward: 0.50"
    assert prompts.tools_result("", 0.5, False) == prompts.NO_OUTPUT


def test_ctf_refuses_show_reward_before_the_run(tmp_path):
    from intercode.errors import ConfigError

    with (ScriptedChatServer(sequence(["x"])) as server,
          pytest.raises(ConfigError, match="shows no reward")):
        run(tmp_path, "ctf", server, show_reward=True)
    assert not (tmp_path / "run").exists()


def episode(env, dataset, index, replies, show_reward=False, turns=10, **kw):
    e = create_env(env, dataset)
    try:
        with ScriptedChatServer(sequence(replies)) as server:
            policy = ToolsPolicy(env, ChatClient(ModelConfig("m", base_url=server.url, **kw)),
                                 StrategyOptions(show_reward=show_reward))
            record = run_episode(e, index, policy, max_turns=turns)
            return record, server.requests
    finally:
        e.close()


def test_the_calls_of_one_reply_run_in_order_each_answered_by_its_id():
    replies = [Reply(tool_calls=(call("execute", {"code": "echo one"}, "c1"),
                                 call("execute", {"code": "echo two"}, "c2"))),
               Reply("done", tool_calls=(call("submit", {}, "c3"),))]
    record, sent = episode("bash", "bash-demo", 0, replies)
    assert [t.action for t in record.turns] == ["echo one", "echo two", "submit"]
    assert [t.llm["calls"] for t in record.turns] == [1, 0, 1]
    assert [t.llm["tool_call"]["id"] for t in record.turns] == ["c1", "c2", "c3"]
    assert len(sent) == 2
    second = sent[1]["messages"]
    assert second[2]["role"] == "assistant" and second[2]["content"] is None
    assert [c["id"] for c in second[2]["tool_calls"]] == ["c1", "c2"]
    assert second[3] == {"role": "tool", "tool_call_id": "c1", "content": "one\n"}
    assert second[4] == {"role": "tool", "tool_call_id": "c2", "content": "two\n"}
    assert record.status == "ok" and record.turns[-1].submit


def test_mistakes_are_answered_to_the_model_never_raised():
    gold = load_dataset("bash-demo")[0].gold
    replies = [Reply(tool_calls=(call("execute", '{"code": "ls', "bad"),
                                 call("rm_everything", {"code": "x"}, "unknown"),
                                 call("execute", {}, "nocode"),
                                 call("execute", '["ls"]', "notobject"),
                                 call("execute", {"code": 42}, "number"))),
               Reply("I think I am done."),
               Reply(tool_calls=(call("execute", {"code": gold}, "gold"),
                                 call("submit", {"answer": "ignored"}, "end")))]
    record, sent = episode("bash", "bash-demo", 0, replies)
    assert [t.valid for t in record.turns] == [False] * 6 + [True, True]
    assert record.status == "ok" and record.reward == 1.0
    notes = [t.observation for t in record.turns[:6]]
    assert notes[0].startswith("error: execute: the arguments are not valid JSON")
    assert notes[1].startswith("error: there is no tool 'rm_everything'")
    assert notes[2] == notes[4] == "error: execute needs a non-empty string argument 'code'"
    assert notes[3] == "error: execute: the arguments must be a JSON object, not list"
    assert notes[5] == prompts.no_tool_call("bash")
    second = sent[1]["messages"]
    assert [m.get("tool_call_id") for m in second[3:8]] == ["bad", "unknown", "nocode",
                                                            "notobject", "number"]
    third = sent[2]["messages"]
    assert third[-2] == {"role": "assistant", "content": "I think I am done."}
    assert third[-1] == {"role": "user", "content": prompts.no_tool_call("bash")}


def test_each_tool_call_counts_against_the_turn_limit():
    calls = tuple(call("execute", {"code": f"echo {i}"}, f"c{i}") for i in range(8))
    record, sent = episode("bash", "bash-demo", 0, [Reply(tool_calls=calls)], turns=3)
    assert len(record.turns) == 3 and len(sent) == 1 and record.status == "ok"


def test_python_submits_a_function_name_and_needs_one():
    task = load_dataset("mbpp-prompt")[0]
    name = task.gold.split("def ", 1)[1].split("(", 1)[0]
    replies = [Reply(tool_calls=(call("execute", {"code": task.gold}, "a"),
                                 call("submit", {}, "b"),
                                 call("submit", {"answer": f"{name}\nprint(1)"}, "c"),
                                 call("submit", {"answer": f" {name} "}, "d")))]
    record, sent = episode("python", "mbpp-prompt", 0, replies)
    described = sent[0]["tools"][1]["function"]
    assert described["parameters"]["required"] == ["answer"]
    assert "the name of the function to test" in described["description"]
    assert [t.valid for t in record.turns] == [True, False, False, True]
    assert record.turns[-1].action == f"submit {name}" and record.reward == 1.0


def test_python_scores_the_function_the_submit_tool_names():
    """The gold's function is defined, but the submit tool names one that is not: 0."""
    task = load_dataset("mbpp-prompt")[0]
    replies = [Reply(tool_calls=(call("execute", {"code": task.gold}, "a"),
                                 call("submit", {"answer": "nonexistent"}, "b")))]
    record, _ = episode("python", "mbpp-prompt", 0, replies)
    assert record.turns[-1].action == "submit nonexistent" and record.reward == 0.0


def test_ctf_hands_in_the_flag_and_a_wrong_one_goes_on():
    gold = load_dataset("intercode-ctf")[4].gold
    replies = [Reply(tool_calls=(call("submit", {"answer": "picoCTF{guess}"}, "w"),)),
               Reply(tool_calls=(call("submit", {"answer": gold}, "r"),))]
    record, sent = episode("ctf", "intercode-ctf", 4, replies)
    assert sent[1]["messages"][-1]["role"] == "tool"
    assert sent[1]["messages"][-1]["content"].startswith("The flag is wrong")
    assert "Reward" not in sent[1]["messages"][-1]["content"]
    assert record.reward == 1.0 and len(record.turns) == 2


def test_a_reasoning_model_behind_openais_refusals_runs_and_its_tokens_are_summed(tmp_path):
    gold = GoldResponder(load_dataset("bash-demo"), detour=0)

    def respond(request):
        return replace(gold(request), reasoning_tokens=7)

    server = ScriptedChatServer(refusing(respond, ("max_tokens", "temperature")))
    with server:
        summary, records = run(tmp_path, "bash", server, tasks=(0, 1, 2))
        sent = server.requests
    assert summary["errors"] == 0 and summary["success"] == 3
    answered = [r for r in sent if "max_tokens" not in r and "temperature" not in r]
    assert summary["llm"]["calls"] == len(answered)
    assert summary["llm"]["reasoning_tokens"] == 7 * len(answered)
    assert all(r["llm"]["reasoning_tokens"] == 7 * r["llm"]["calls"] for r in records.values())
    first = records[0]["turns"][0]["llm"]
    assert first["adjusted"] == ["max_tokens sent as max_completion_tokens",
                                 "temperature not sent"]
    shown = subprocess.run([sys.executable, "-m", "intercode", "show", str(tmp_path / "run")],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "250"})
    assert f"({7 * len(answered):,} of them reasoning)" in shown.stdout


def cli(*args):
    return subprocess.run([sys.executable, "-m", "intercode", *args], capture_output=True,
                          text=True, timeout=300)


def test_the_command_line_runs_tools_with_streaming_and_extra_body(tmp_path):
    with ScriptedChatServer(GoldResponder(load_dataset("bash-demo"), detour=0)) as server:
        done = cli("eval", "bash", "--dataset", "bash-demo", "--agent", "tools", "--model",
                   "scripted", "--base-url", server.url, "--tasks", "0-2", "--stream",
                   "--reasoning-effort", "low", "--extra-body", '{"top_k": 5}',
                   "--output", str(tmp_path / "run"), "--no-progress")
        sent = server.requests
    assert done.returncode == 0, done.stderr
    assert all(r["stream"] and r["reasoning_effort"] == "low" and r["top_k"] == 5 for r in sent)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"]["stream"] is True and "show_reward" not in config["strategy"]
    shown = cli("show", str(tmp_path / "run"), "--task", "0")
    assert shown.returncode == 0 and "[tool call execute id=" in shown.stdout


@pytest.mark.parametrize(("args", "pattern"), [
    (["--agent", "tools", "--extra-body", "{bad"], "--extra-body is not valid JSON"),
    (["--agent", "tools", "--extra-body", '{"messages": []}'], "may not set messages"),
    (["--agent", "try-again", "--show-reward"], "--show-reward applies only to --agent tools"),
    (["--agent", "gold", "--stream"], "applies only to LLM agents"),
    (["--agent", "tools", "--dialogue-limit", "4"], "--dialogue-limit does not apply"),
    (["--agent", "tools", "--reasoning-effort", "max"], "invalid choice"),
])
def test_bad_model_options_are_one_line(tmp_path, args, pattern):
    done = cli("eval", "bash", "--dataset", "bash-demo", "--model", "m", "--base-url",
               "http://127.0.0.1:9/v1", "--output", str(tmp_path / "run"), *args)
    assert done.returncode == 2 and pattern in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()
