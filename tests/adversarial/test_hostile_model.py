"""A hostile model (or model server) against ``--agent tools`` and the client.

What it controls: every byte of its replies (tool calls, their ids, names, arguments,
how many), whole or streamed. None of it may crash the runner, exceed the turn limit,
turn the episode into an infrastructure error, or print raw control characters.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from intercode.agents.llm import StrategyOptions, ToolsPolicy
from intercode.cli import main
from intercode.envs.factory import create_env
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.replies import MAX_ID_CHARS, MAX_TOOL_CALLS
from intercode.llm.scripted_server import Reply, ScriptedChatServer, call, sequence
from intercode.runner.episode import run_episode
from intercode.runner.run import RunConfig, execute


def episode(replies, turns=10, stream=False, env="bash", dataset="bash-demo", task=0,
            retries=0):
    e = create_env(env, dataset)
    try:
        with ScriptedChatServer(sequence(replies)) as server:
            client = ChatClient(ModelConfig("m", base_url=server.url, retries=retries,
                                            stream=stream))
            record = run_episode(e, task, ToolsPolicy(env, client, StrategyOptions()),
                                 max_turns=turns)
            return record, server.requests
    finally:
        e.close()


@pytest.mark.parametrize("stream", [False, True])
def test_thousands_of_tool_calls_in_one_reply_stay_within_the_turn_limit(stream):
    calls = tuple(call("execute", {"code": f"echo {i}"}, f"c{i}") for i in range(5000))
    # one retry: in two of three CI runs (never here, in 40 runs with load), the first
    # call of the non-streamed case failed as "APIConnectionError: Connection error."
    # (the client now names the cause)
    record, sent = episode([Reply(tool_calls=calls)], turns=10, stream=stream, retries=1)
    assert record.status == "ok", record.error
    assert len(record.turns) == 10
    assert len({json.dumps(request["messages"]) for request in sent}) == 1  # one turn asked
    assert record.turns[0].llm["tool_calls"] == 5000


def test_past_the_cap_the_rest_of_a_reply_is_not_run_and_the_model_is_told():
    calls = tuple(call("execute", {"code": f"echo {i}"}, f"c{i}") for i in range(200))
    record, sent = episode([Reply(tool_calls=calls), Reply(tool_calls=(call("submit", {}),))],
                           turns=MAX_TOOL_CALLS + 1)
    assert record.status == "ok" and len(record.turns) == MAX_TOOL_CALLS + 1
    second = sent[1]["messages"]
    assert len(second[2]["tool_calls"]) == MAX_TOOL_CALLS  # what was echoed: what was run
    assert sum(1 for m in second if m["role"] == "tool") == MAX_TOOL_CALLS
    assert second[-1]["role"] == "user" and f"other {200 - MAX_TOOL_CALLS}" in second[-1][
        "content"]
    assert record.turns[-1].submit


def test_huge_or_deeply_nested_arguments_are_answered_as_tool_errors():
    huge = json.dumps({"code": "echo " + "x" * (1 << 21)})
    nested = "[" * 200_000 + "]" * 200_000
    replies = [Reply(tool_calls=(call("execute", huge, "h"), call("execute", nested, "n"),
                                 call("x" * 100_000, "{}", "name"))),
               Reply(tool_calls=(call("submit", {}, "s"),))]
    record, _ = episode(replies)
    assert record.status == "ok" and [t.valid for t in record.turns] == [False] * 3 + [True]
    assert record.turns[0].observation.startswith("error: the code is 2097157 characters")
    assert "not valid JSON" in record.turns[1].observation or "nested too deeply" in \
        record.turns[1].observation
    assert len(record.turns[2].observation) < 300  # a long name is not quoted back whole
    assert all(len(t.action) < 3000 for t in record.turns)  # nor kept whole in the record


def test_control_characters_and_odd_ids_neither_crash_nor_reach_the_terminal(tmp_path):
    nasty = "id\x1b[2J\x00\u202e\n"
    raw = (b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", '
           b'"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": '
           b'"assistant", "content": null, "tool_calls": ['
           + json.dumps({"id": nasty, "type": "function", "function": {
               "name": "execute\x1b]0;pwned\x07", "arguments": '{"code": "echo hi"}'}}).encode()
           + b", " + json.dumps({"id": 12345, "type": "function", "function": {
               "name": "execute", "arguments": '{"code": "echo \\u001b[31mred"}'}}).encode()
           + b", " + json.dumps({"id": "y" * (MAX_ID_CHARS + 1), "function": None}).encode()
           + b", " + json.dumps({"type": "function", "function": {
               "name": ["execute"], "arguments": {"code": "ls"}}}).encode()
           + b"]}}]}")
    replies = [Reply(raw=raw), Reply(tool_calls=(call("submit", {}),))]
    with ScriptedChatServer(sequence(replies)) as server:
        cfg = RunConfig(env="bash", dataset="bash-demo", agent="tools", output=tmp_path / "run",
                        workers=1, tasks=(0,), max_turns=10,
                        model=ModelConfig("m", base_url=server.url, retries=0))
        summary = execute(cfg, progress=False)
        sent = server.requests
    assert summary["ok"] == 1 and summary["errors"] == 0
    answered = [m["tool_call_id"] for m in sent[1]["messages"] if m["role"] == "tool"]
    assert answered == [nasty, "call_1", "call_2", "call_3"]  # echoed exactly, or replaced
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert [t["valid"] for t in record["turns"]] == [False, True, False, False, True]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(tmp_path / "run"), "--task", "0"]) == 0
    assert "\x1b" not in out.getvalue() and "\x00" not in out.getvalue()
    assert "\x07" not in out.getvalue()


def test_a_stream_of_endless_tool_call_indices_is_bounded():
    chunks = []
    for i in range(3000):
        chunks.append({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
                           {"index": i * 7919, "id": f"c{i}", "type": "function",
                            "function": {"name": "execute",
                                         "arguments": json.dumps({"code": "true"})}}]}}]})
    chunks.append({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                   "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}]})
    raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    raw += b"data: [DONE]\n\n"
    with ScriptedChatServer(sequence([Reply(raw=raw)])) as server:
        got = ChatClient(ModelConfig("m", base_url=server.url, stream=True)).complete(
            [{"role": "user", "content": "hi"}])
    assert len(got.tool_calls) == MAX_TOOL_CALLS
    assert got.dropped_calls == 3000 - MAX_TOOL_CALLS


def test_a_model_that_never_calls_a_tool_spends_its_turns_and_scores_its_state():
    record, sent = episode([Reply("I refuse to use tools.")], turns=4)
    assert record.status == "ok" and len(record.turns) == 4 and len(sent) == 4
    assert not any(t.valid for t in record.turns) and record.reward == 0.0


def test_a_submit_answer_cannot_smuggle_a_second_action():
    from intercode.datasets import load_dataset

    gold = load_dataset("intercode-ctf")[4].gold
    replies = [Reply(tool_calls=(call("submit", {"answer": f"picoCTF{{x}}\nsubmit {gold}"},
                                      "a"),)), Reply("giving up")]
    record, _ = episode(replies, turns=2, env="ctf", dataset="intercode-ctf", task=4)
    assert record.turns[0].valid is False and record.reward == 0.0
