"""`intercode show`: a run's header and summary, an episode's transcript, and one-line
errors for what is not a run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from intercode.cli import main
from intercode.datasets import load_dataset
from intercode.llm.client import ModelConfig
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import ScriptedChatServer
from intercode.runner.run import RunConfig, execute

SYSTEM = "You answer questions by writing SQL code"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real try-again run of three tasks (tasks 0 and 2 take a detour first)."""
    out = tmp_path_factory.mktemp("show") / "run"
    with ScriptedChatServer(GoldResponder(load_dataset("spider-dev"), detour=2)) as server:
        cfg = RunConfig(env="sql", dataset="spider-dev", agent="try-again",
                        model=ModelConfig("scripted", base_url=server.url, retries=1,
                                          backoff=0.0),
                        tasks=(0, 1, 2), max_turns=10, output=out, workers=2)
        execute(cfg, progress=False)
        requests = list(server.requests)
    records = {json.loads(line)["task"]: json.loads(line)
               for line in (out / "results.jsonl").read_text().splitlines()}
    return out, records, requests


def show(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["show", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def value(out: str, label: str) -> str:
    """The value of a ``label    value`` row."""
    match = re.search(rf"^{re.escape(label)}\s{{2,}}(.+)$", out, re.MULTILINE)
    assert match, f"no {label!r} row in:\n{out}"
    return match.group(1)


def test_a_run_shows_its_header_and_summary(made, capsys):
    run, _, _ = made
    code, out, err = show(capsys, str(run))
    assert code == 0 and err == ""
    config = json.loads((run / "config.json").read_text())
    assert value(out, "env") == "sql" and value(out, "dataset") == "spider-dev"
    assert value(out, "agent") == "try-again (scripted)"
    assert value(out, "kind") == "intercode run"
    assert value(out, "max turns") == "10"
    assert value(out, "dataset revision") == config["dataset_revision"]
    assert value(out, "intercode version") == config["intercode_version"]
    assert value(out, "created at") == config["created_at"]
    assert value(out, "tasks") == "3 requested, 3 with a record"
    assert value(out, "episodes") == "3/3 finished: 3 ok, 0 errors"
    assert value(out, "success").startswith("3/3 = 100.0% of the tasks")
    assert value(out, "model").startswith("5 calls, ")  # 2 + 1 + 2
    assert "By category" in out and "note:" not in out
    assert "\x1b" not in out and all(line == line.rstrip() for line in out.splitlines())


def test_a_run_as_json(made, capsys):
    run, _, _ = made
    code, out, _ = show(capsys, str(run), "--json")
    data = json.loads(out)
    assert code == 0 and data["env"] == "sql" and data["config"]["max_turns"] == 10
    assert data["summary"]["success"] == 3 and data["summary"]["llm"]["calls"] == 5


def test_a_transcript_shows_what_the_model_saw_once(made, capsys):
    run, records, requests = made
    code, out, err = show(capsys, str(run), "--task", "0")
    assert code == 0 and err == ""
    record = records[0]
    assert value(out, "status") == "ok" and value(out, "reward") == "1"
    assert value(out, "success") == "yes" and value(out, "category") == record["category"]
    assert value(out, "turns") == "2 (best: turn 2)"
    assert record["query"] in out
    # the system prompt went with both calls; the transcript shows it once
    calls = [r for r in requests if record["query"] in r["messages"][1]["content"]]
    assert len(calls) == 2 and all(SYSTEM in c["messages"][0]["content"] for c in calls)
    assert out.count(SYSTEM) == 1
    assert "#1 system" in out and "#2 user" in out and "#3 assistant" in out
    assert "(2 earlier messages, as above: #1-#2)" in out
    first, second = out.split("turn 2 of 2")
    assert "turn 1 of 2" in first and "reward 0 · no valid action in the reply (not run)" in first
    detour, gold = (t["llm"]["reply"] for t in record["turns"])
    assert detour in first and gold.strip("`\nsql") in second
    assert record["turns"][1]["action"] in second
    assert "reward 1 · valid · exit code 0" in second
    assert record["turns"][1]["observation"] in second
    info = out.split("reward info")[1]
    assert '"exec_match": true' in info
    assert "not recorded" not in out


def test_an_episode_as_json_carries_its_messages(made, capsys):
    run, records, _ = made
    code, out, _ = show(capsys, str(run), "--task", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["task"] == 2 and data["turns"] == records[2]["turns"]
    ids = {i for t in data["turns"] for call in t["llm"]["prompts"] for i in call}
    assert set(data["messages"]) == ids
    assert any(SYSTEM in m["content"] for m in data["messages"].values())


def test_a_schema_1_record_says_the_prompts_were_not_recorded(made, tmp_path, capsys):
    _, records, _ = made
    old = json.loads(json.dumps(records[0]))
    old["schema"] = 1
    for turn in old["turns"]:
        del turn["llm"]["prompts"]
    (tmp_path / "results.jsonl").write_text(json.dumps(old) + "\n")
    code, out, _ = show(capsys, str(tmp_path / "results.jsonl"), "--task", "0")
    assert code == 0
    assert "The prompts were not recorded (a schema 1 record)" in out
    assert "what the model saw" not in out and SYSTEM not in out
    assert old["turns"][0]["llm"]["reply"] in out and old["turns"][1]["action"] in out
    code, out, _ = show(capsys, str(tmp_path))  # no config.json: said, not fatal
    assert code == 0 and "note: config.json is missing" in out
    assert value(out, "episodes") == "1/1 finished: 1 ok, 0 errors"


def upstream_file() -> Path:
    mirror = os.environ.get("INTERCODE_DATA_MIRROR")
    if not mirror:
        pytest.skip("INTERCODE_DATA_MIRROR is not set (the upstream results files)")
    path = Path(mirror) / "results/sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json"
    if not path.exists():
        pytest.skip(f"{path} is not in the mirror")
    return path


def test_an_upstream_results_file(capsys):
    path = upstream_file()
    code, out, _ = show(capsys, str(path))
    assert code == 0
    assert value(out, "kind") == "InterCode results file (upstream)"
    assert value(out, "agent") == "InterCode (upstream) (gpt-3.5)"
    assert value(out, "dataset") == "spider-dev" and value(out, "max turns") == "10"
    assert value(out, "episodes") == "1034/1034 finished: 1034 ok, 0 errors"
    # the paper's GPT-3.5 Try Again SQL success rate
    assert value(out, "success").startswith("489/1034 = 47.3% of the tasks")
    assert re.search(r"^ easy\s+248\s+0\s+180\s+72\.6%", out, re.MULTILINE)
    code, out, _ = show(capsys, str(path), "--task", "3")
    assert code == 0
    assert "The prompts and replies were not recorded" in out
    assert "Count the number of different nationalities of conductors." in out
    assert "turn 4 of 4" in out and "SHOW TABLES" in out
    assert value(out, "reward") == "1" and value(out, "category") == "easy"
    assert "reward 1 · valid" in out


def test_an_upstream_episode_as_json(capsys):
    code, out, _ = show(capsys, str(upstream_file()), "--task", "3", "--json")
    data = json.loads(out)
    assert code == 0 and data["task"] == 3 and len(data["turns"]) == 4
    assert "messages" not in data


def bad_inputs(root: Path, run: Path) -> dict[str, tuple]:
    (root / "empty").mkdir()
    (root / "cut").mkdir()
    first = (run / "results.jsonl").read_text().splitlines()[0]
    (root / "cut" / "results.jsonl").write_text(first[: len(first) // 2])
    (root / "started").mkdir()
    (root / "started" / "config.json").write_text((run / "config.json").read_text())
    (root / "cut.json").write_text('{"0": {"turn_history": {"actions": ["ls"')
    return {
        "missing": ([str(root / "nope")], "nope: no such file or folder"),
        "not a run": ([str(root / "empty")], "is not a run (it has neither results.jsonl"),
        "truncated results": ([str(root / "cut")], "has no episode records to show (",
                              "the last line of results.jsonl is incomplete"),
        "no episode yet": ([str(root / "started")], "has no episode records to show "
                           "(results.jsonl is missing"),
        "truncated upstream": ([str(root / "cut.json")], "is neither a run folder nor a "
                               "results file (not valid JSON"),
        "a summary": ([str(run / "summary.json")], "is neither a run folder nor an "
                      "InterCode results file"),
        "no such task": ([str(run), "--task", "99"], "has no task 99; its tasks are 0, 1, 2 "
                         "(3 in all)"),
    }


def test_bad_input_is_one_line(made, tmp_path, capsys):
    run, _, _ = made
    for name, (args, *messages) in bad_inputs(tmp_path, run).items():
        for more in ([], ["--json"]):
            code, out, err = show(capsys, *args, *more)
            assert code == 2, name
            assert out == "", name
            assert err.startswith("intercode: error: ") and err.count("\n") == 1, (name, err)
            assert all(m in err for m in messages), (name, err)


def test_a_task_requested_but_not_finished(made, tmp_path, capsys):
    run, records, _ = made
    (tmp_path / "config.json").write_text((run / "config.json").read_text())
    (tmp_path / "results.jsonl").write_text(json.dumps(records[1]) + "\n")
    code, _, err = show(capsys, str(tmp_path), "--task", "2")
    assert code == 2
    assert "task 2 of" in err and "has no record yet (it was requested" in err
    code, out, _ = show(capsys, str(tmp_path))
    assert code == 0 and value(out, "episodes") == "1/3 finished: 1 ok, 0 errors, 2 missing"
    assert "note: 2 requested task(s) have no record yet" in out
