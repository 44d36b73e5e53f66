"""``intercode export inspect``: a run as an Inspect log that read_eval_log reads."""

from __future__ import annotations

import json

import pytest
from inspect_ai.log import read_eval_log, resolve_sample_attachments
from report_helpers import records, spider_run

from intercode.cli import main
from intercode.datasets import load_dataset


@pytest.fixture(scope="module")
def try_again_run(tmp_path_factory):
    """A try-again run of three SQL tasks (two take a detour before the gold)."""
    out = tmp_path_factory.mktemp("export") / "run"
    spider_run(out, wander=0, detour=2, tasks=(0, 1, 2))
    return out


def test_a_model_run_exports_with_what_the_model_saw(try_again_run, tmp_path, capsys):
    target = tmp_path / "run.eval"
    assert main(["export", "inspect", str(try_again_run), "-o", str(target)]) == 0
    log = read_eval_log(str(target))
    records = {json.loads(line)["task"]: json.loads(line)
               for line in (try_again_run / "results.jsonl").read_text().splitlines()}
    assert log.eval.task == "intercode/sql" and log.eval.model == "scripted"
    assert sorted(s.id for s in log.samples) == [0, 1, 2]
    for s in log.samples:
        record = records[s.id]
        score = s.scores["intercode_scorer"]
        assert score.value == record["reward"]
        assert score.metadata["success"] == record["success"]
        roles = [m.role for m in s.messages]
        assert roles[0] == "system" and roles[-1] == "assistant"
        assert record["query"] in s.messages[1].text
        assert s.messages[-1].text == record["turns"][-1]["llm"]["reply"]
    metrics = log.results.scores[0].metrics
    assert metrics["mean"].value == pytest.approx(
        sum(r["reward"] for r in records.values()) / 3)


def test_a_gold_run_exports_its_turns(tmp_path):
    run = tmp_path / "gold"
    assert main(["eval", "bash", "--dataset", "bash-demo", "--tasks", "0-1", "--agent",
                 "gold", "--output", str(run), "--no-progress"]) == 0
    target = tmp_path / "gold.eval"
    assert main(["export", "inspect", str(run), "-o", str(target)]) == 0
    log = read_eval_log(str(target))
    assert [s.scores["intercode_scorer"].value for s in log.samples] == [1.0, 1.0]
    first = log.samples[0]
    assert [m.role for m in first.messages] == ["user", "assistant", "user"]
    assert first.messages[1].text == load_dataset("bash-demo")[0].gold


def test_not_a_run_is_one_line(tmp_path, capsys):
    assert main(["export", "inspect", str(tmp_path / "nothing"), "-o",
                 str(tmp_path / "x.eval")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.fixture(scope="module")
def tools_run(tmp_path_factory):
    """An ``--agent tools`` run of three SQL tasks: tasks 0 and 2 first reply without a
    tool call, task 1 calls execute and submit in one reply."""
    out = tmp_path_factory.mktemp("export-tools") / "run"
    spider_run(out, agent="tools", wander=0, detour=2, tasks=(0, 1, 2))
    return out


def _export(run, tmp_path):
    target = tmp_path / "run.eval"
    assert main(["export", "inspect", str(run), "-o", str(target)]) == 0
    log = read_eval_log(str(target))
    log.samples = [resolve_sample_attachments(s) for s in log.samples]
    return log


def test_tool_calls_export_as_tool_calls_and_tool_messages(tools_run, tmp_path):
    """Native tool calls are Inspect's tool calls and tool messages (not text), each result
    answering its call, and the transcript has a model event per model call and a tool
    event per call run."""
    log = _export(tools_run, tmp_path)
    recs = records(tools_run)
    for s in log.samples:
        record = recs[s.id]
        turns = record["turns"]
        assert not any("[tool call" in m.text or "[result of" in m.text for m in s.messages)
        called = {c.id: c.function for m in s.messages if m.role == "assistant"
                  for c in m.tool_calls or []}
        answered = [(m.tool_call_id, m.function) for m in s.messages if m.role == "tool"]
        assert answered and all(called.get(cid) == fn for cid, fn in answered)
        assert s.messages[-1].role == "tool" and s.messages[-1].function == "submit"
        run_calls = [t["llm"]["tool_call"] for t in turns if t["llm"].get("tool_call")]
        tools = [e for e in s.events if e.event == "tool"]
        assert [(e.id, e.function) for e in tools] == [(c["id"], c["name"]) for c in run_calls]
        executed = next(t for t in turns if t["llm"].get("tool_call"))
        assert tools[0].function == "execute"
        assert tools[0].arguments == {"code": executed["action"]}
        models = [e for e in s.events if e.event == "model"]
        assert len(models) == record["llm"]["calls"]
        assert [e.output.message.tool_calls is not None for e in models] == [
            bool(t["llm"].get("tool_call")) for t in turns if t["llm"]["calls"]]
        # a reply without a tool call is said in the transcript
        assert len([e for e in s.events if e.event == "info"]) == sum(
            not t["valid"] for t in turns)


def test_an_export_has_times_usage_target_and_a_1_based_best_turn(try_again_run, tmp_path):
    """What `inspect view` shows of a native run: the run's and each sample's start and end,
    the tokens the run recorded, the gold as target, the score; best_turn counts from 1."""
    log = _export(try_again_run, tmp_path)
    recs = records(try_again_run)
    gold = load_dataset("spider-dev")
    assert log.stats.started_at and log.stats.completed_at
    assert log.stats.started_at <= log.stats.completed_at
    assert log.stats.model_usage["scripted"].input_tokens == sum(
        r["llm"]["prompt_tokens"] for r in recs.values())
    assert log.stats.model_usage["scripted"].output_tokens == sum(
        r["llm"]["completion_tokens"] for r in recs.values())
    for s in log.samples:
        record = recs[s.id]
        assert s.target == gold[s.id].gold
        assert s.started_at and s.completed_at and s.started_at < s.completed_at
        assert s.started_at.startswith(record["started_at"].removesuffix("+00:00"))
        used = s.model_usage["scripted"]
        assert (used.input_tokens, used.output_tokens) == (record["llm"]["prompt_tokens"],
                                                          record["llm"]["completion_tokens"])
        score = s.scores["intercode_scorer"]
        assert score.metadata["best_turn"] == record["best_turn"] + 1
        assert score.answer == record["turns"][record["best_turn"]]["action"]
        models = [e for e in s.events if e.event == "model"]
        assert len(models) == record["llm"]["calls"]
        assert models[-1].output.completion == record["turns"][-1]["llm"]["reply"]
        scored = next(e for e in s.events if e.event == "score")
        assert scored.score.value == record["reward"]
