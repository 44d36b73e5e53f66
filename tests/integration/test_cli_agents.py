"""`intercode eval` with LLM and human agents, as a user runs it: kill -9, Ctrl-C, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from intercode.datasets import load_dataset
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import ScriptedChatServer, sequence


def slow_gold(delay: float):
    gold = GoldResponder(load_dataset("bash-demo"), detour=0)

    def respond(request):
        return replace(gold(request), delay=delay)

    return respond


def cli(*args):
    return [sys.executable, "-m", "intercode", *args]


def start_run(server, output, wait_for):
    """A run in the background, once it has written ``wait_for`` records."""
    # SIGINT as a terminal delivers it: a test run started in the background by a
    # non-interactive shell (CI) inherits it ignored, and Python then never raises
    # KeyboardInterrupt
    proc = subprocess.Popen(cli(*eval_args(server, output)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_records(output, wait_for, proc)
    return proc


def eval_args(server, output, *more):
    return ["eval", "bash", "--dataset", "bash-demo", "--agent", "try-again", "--model",
            "scripted", "--base-url", server.url, "--workers", "2", "--output", str(output),
            "--no-progress", *more]


def records(output):
    lines = (output / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def wait_for_records(output, count, proc, limit=60.0):
    path = output / "results.jsonl"
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError("the run wrote no records in time")


def test_kill_9_loses_only_the_episodes_in_flight_and_resume_finishes(tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(slow_gold(0.4)) as server:
        proc = start_run(server, out, 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        before = records(out)  # every line written is whole
        assert 2 <= len(before) < 8
        time.sleep(1.0)  # orphaned workers find their pipe closed and stop
        assert len(records(out)) == len(before)  # nobody else writes the log
        done = subprocess.run(cli(*eval_args(server, out, "--resume")), capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    after = records(out)
    assert sorted(r["task"] for r in after) == list(range(8))  # each task exactly once
    assert after[:len(before)] == before and all(r["status"] == "ok" for r in after)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == 8 and summary["success"] == 8


def test_a_torn_last_line_is_repaired_on_resume(tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(slow_gold(0.0)) as server:
        first = subprocess.run(cli(*eval_args(server, out, "--tasks", "0-3")),
                               capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stderr
        with (out / "results.jsonl").open("a") as fh:
            fh.write('{"task": 5, "status": "ok", "rew')  # a crash in the middle of a write
        done = subprocess.run(cli(*eval_args(server, out, "--tasks", "0-7", "--resume")),
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stderr
    assert sorted(r["task"] for r in records(out)) == list(range(8))


def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path):
    out = tmp_path / "run"
    with ScriptedChatServer(slow_gold(0.4)) as server:
        proc = start_run(server, out, 1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "finished episodes are saved" in err
        partial = json.loads((out / "summary.json").read_text())
        assert partial["finished"] == len(records(out)) < 8
        done = subprocess.run(cli(*eval_args(server, out, "--resume")), capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(r["task"] for r in records(out)) == list(range(8))


def test_a_refused_key_stops_the_run_with_a_clear_message(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": "sk-wrong"}
    with ScriptedChatServer(sequence(["x"]), api_key="sk-right") as server:
        done = subprocess.run(cli(*eval_args(server, out)), capture_output=True, text=True,
                              timeout=120, env=env)
    assert done.returncode == 2
    assert "refused the credentials" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "results.jsonl").exists() or records(out) == []


def test_llm_agents_need_a_model_and_a_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    no_model = subprocess.run(cli("eval", "bash", "--dataset", "bash-demo", "--agent", "react",
                                  "--output", str(tmp_path / "a")),
                              capture_output=True, text=True, timeout=60, env=env)
    assert no_model.returncode == 2 and "needs a model (--model)" in no_model.stderr
    no_key = subprocess.run(cli("eval", "bash", "--dataset", "bash-demo", "--agent", "react",
                                "--model", "gpt-4o-mini", "--output", str(tmp_path / "b")),
                            capture_output=True, text=True, timeout=60, env=env)
    assert no_key.returncode == 2 and "no API key: set $OPENAI_API_KEY" in no_key.stderr


def test_the_summary_is_printed_with_tokens(tmp_path):
    with ScriptedChatServer(slow_gold(0.0)) as server:
        args = [a for a in eval_args(server, tmp_path / "run", "--tasks", "0-2")
                if a != "--no-progress"]
        done = subprocess.run(cli(*args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # progress on a pipe: plain lines, the last one with the model's tokens per second
    final = [line for line in done.stderr.splitlines() if line.startswith("progress 3/3 ")]
    assert len(final) == 1 and "ok 3  err 0  success 100.0%" in final[0]
    assert "tok/s" in final[0] and "done after" in final[0]
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
    lines = done.stdout.splitlines()
    assert "success        3/3 = 100.0% of the tasks (errors and missing count as failures)" in lines
    assert "success ok     100.0% of the 3 ok episodes" in lines
    assert any(line.startswith("model          3 calls, ") for line in lines)
    assert "\x1b" not in done.stdout  # not a terminal: plain text


@pytest.mark.parametrize("env", ["bash", "python"])
def test_a_person_plays_an_eval_run_at_the_terminal(tmp_path, env):
    if env == "bash":
        args, typed = ["--dataset", "bash-demo", "--tasks", "0"], (
            "ls /project\n:task\ncat /project/src/*.py | wc -l\n")
    else:
        gold = load_dataset("mbpp-prompt")[0].gold.replace("\r\n", "\n")
        body = "\n".join(line for line in gold.splitlines() if line.strip())
        args, typed = ["--dataset", "mbpp-prompt", "--tasks", "0"], body + "\n\n"
    done = subprocess.run(cli("eval", env, "--agent", "human", "--no-progress", "--output",
                              str(tmp_path / "run"), *args), input=typed,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "task 0 of" in done.stdout and "[turn 1 · score" in done.stdout
    record = records(tmp_path / "run")[0]
    assert record["agent"] == "human" and record["success"] is True


def free_port():
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_endpoint_nothing_listens_on_stops_the_run_in_one_line(tmp_path):
    """No episode is recorded as an error: every one would fail the same way."""
    out = tmp_path / "run"
    base = f"http://127.0.0.1:{free_port()}/v1"
    args = ["eval", "bash", "--dataset", "bash-demo", "--agent", "try-again", "--model", "m",
            "--base-url", base, "--workers", "2", "--output", str(out), "--no-progress",
            "--llm-connect-wait", "0", "--llm-retries", "3"]
    done = subprocess.run(cli(*args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot reach the model server at {base} (1 attempt over 0 s" in lines[0]
    assert "refused" in lines[0]
    assert not (out / "results.jsonl").exists() or records(out) == []


def test_an_endpoint_that_dies_mid_run_errs_the_episodes_left_and_the_run_goes_on(tmp_path):
    """A server that answered may come back: its refused connections are retried and
    the episodes they fail are errors (run again by --resume), not the end of the run."""
    out = tmp_path / "run"
    with ScriptedChatServer(slow_gold(0.2)) as server:
        args = eval_args(server, out, "--workers", "1", "--llm-retries", "1",
                         "--llm-connect-wait", "0")
        proc = subprocess.Popen(cli(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        wait_for_records(out, 2, proc)
    _, stderr = proc.communicate(timeout=300)
    assert "cannot reach" not in stderr and "Traceback" not in stderr, stderr
    got = records(out)
    assert sorted(r["task"] for r in got) == list(range(len(load_dataset("bash-demo"))))
    assert [r["status"] for r in got[:2]] == ["ok", "ok"]
    failed = [r for r in got if r["status"] == "error"]
    # one worker takes the tasks in order: once the server is gone, every later episode is
    # an error (how many finished before it went depends on the machine's load)
    statuses = [r["status"] for r in sorted(got, key=lambda r: r["task"])]
    assert failed and all(s == "error" for s in statuses[statuses.index("error"):]), statuses
    assert all("failed 2 times" in r["error"] and "refused" in r["error"] for r in failed)
