"""Attacks on the runner and the command line: losing results, hiding failures from the
metrics, two runs in one folder, orphaned workers, and inputs that used to give a
traceback or a silently wrong run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from intercode.agents.base import Action, Policy
from intercode.cli import main
from intercode.envs.bash import BashEnv
from intercode.runner.episode import run_episode
from intercode.runner.logs import ResultsLog
from intercode.runner.run import RunConfig, execute
from intercode.runner.summary import format_summary, summarize

MiB = 1 << 20


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercode", *args], capture_output=True,
                          text=True, timeout=300, **kw)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def gold_run(out: Path, tasks: tuple[int, ...]) -> None:
    execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", output=out, tasks=tasks,
                      workers=1), progress=False)


# -- results.jsonl survives a resume ------------------------------------------------------

def test_repair_keeps_every_finished_record_before_a_torn_multi_mib_tail(tmp_path):
    log = tmp_path / "results.jsonl"
    finished = [json.dumps({"task": t, "status": "ok", "pad": "x" * (17 * MiB // 10)}) + "\n"
                for t in range(5)]
    torn = '{"task": 5, "status": "ok", "pad": "' + "y" * (2 * MiB)
    log.write_text("".join(finished) + torn)
    removed = ResultsLog(log).repair()
    assert removed == len(torn)
    assert log.read_text() == "".join(finished)
    assert [r["task"] for r in ResultsLog(log).read()] == [0, 1, 2, 3, 4]


def test_repair_of_one_torn_line_without_any_newline(tmp_path):
    log = tmp_path / "results.jsonl"
    log.write_text('{"task": 0, "pad": "' + "z" * (3 * MiB))
    assert ResultsLog(log).repair() > 0 and log.read_bytes() == b""
    log.write_text('{"task": 0, "status": "ok"}\n')
    assert ResultsLog(log).repair() == 0 and log.read_text() == '{"task": 0, "status": "ok"}\n'


def test_resume_ignores_malformed_and_foreign_lines_and_keeps_the_good_ones(tmp_path, caplog):
    gold_run(tmp_path, (0, 1))
    log = tmp_path / "results.jsonl"
    good = log.read_text()
    forged = {**json.loads(good.splitlines()[0]), "task": 2, "agent": "someone-else"}
    junk = ['{"task":"abc"}', "[1, 2]", "not json", '{"task": true, "status": "ok"}',
            '{"task": 99999, "status": "ok", "env": "bash", "dataset": "bash-demo", '
            '"agent": "gold", "reward": 1.0, "success": true}',
            '{"task": 3, "status": "ok", "env": "bash", "dataset": "bash-demo", '
            '"agent": "gold", "reward": "1", "success": true}',
            '{"task": 1e999, "status": "ok"}', json.dumps(forged)]
    log.write_text(good + "\n".join(junk) + "\n")
    summary = execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path,
                                tasks=(0, 1, 2, 3), workers=1, resume=True), progress=False)
    assert "not records of this run" in caplog.text
    text = log.read_text()
    assert text.startswith(good + "\n".join(junk) + "\n")  # nothing lost, nothing rewritten
    tail = text.splitlines()[len(good.splitlines()) + len(junk):]
    rerun = [json.loads(line)["task"] for line in tail]
    assert sorted(rerun) == [2, 3]  # the good records were kept; the forged ones not trusted
    assert summary["ok"] == 4 and summary["success"] == 4


def test_an_action_that_is_not_valid_unicode_is_recorded_not_a_crash(tmp_path):
    traj = tmp_path / "t.jsonl"
    traj.write_text(json.dumps({"task": 0, "status": "ok", "reward": 0,
                                "turns": [{"action": "echo \ud800"}]}) + "\n")
    summary = execute(RunConfig(env="bash", dataset="bash-demo", agent="replay", workers=1,
                                trajectories=str(traj), output=tmp_path / "run", tasks=(0,)),
                      progress=False)
    assert summary["finished"] == 1
    (rec,) = lines(tmp_path / "run" / "results.jsonl")
    assert rec["turns"][0]["action"] == "echo \ud800" and rec["success"] is False


def test_a_results_file_with_unicode_line_separators_replays(tmp_path):
    from intercode.agents.replay import load_trajectories

    traj = tmp_path / "results.jsonl"
    turn = {"action": "printf '\\u2028'", "observation": "a\u2028b\x85c\x1cd"}
    traj.write_text("".join(json.dumps({"task": t, "status": "ok", "reward": 0.0,
                                        "turns": [turn]}, ensure_ascii=False) + "\n"
                            for t in (0, 1)), encoding="utf-8")
    assert sorted(load_trajectories(traj)) == [0, 1]


def test_a_huge_error_text_is_bounded_in_the_record(monkeypatch):
    env = BashEnv("bash-demo")

    def execute(action: str):
        raise RuntimeError("echoed action: " + "A" * (10 * MiB))

    monkeypatch.setattr(env, "execute", execute)
    try:
        rec = run_episode(env, 0, Breaks())
        assert rec.status == "error" and len(rec.error) < 5000
        assert rec.error.endswith("more characters]")
    finally:
        env.close()


def test_values_json_does_not_know_never_fail_a_write(tmp_path):
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append({"task": 0, "status": "ok", "reward": np.float64(0.5), "info": {"b": b"x",
                                                                                 "s": {1}}})
    log.close()
    (rec,) = ResultsLog(tmp_path / "results.jsonl").read()
    assert rec["reward"] == 0.5 and rec["info"] == {"b": "b'x'", "s": "{1}"}


# -- an agent cannot remove its failures from the metrics ---------------------------------

def record(task: int, status: str, reward: float | None = None, **more) -> dict:
    return {"task": task, "status": status, "reward": reward,
            "success": None if reward is None else reward == 1.0, "turns": [{}], **more}


def test_the_headline_rate_counts_errors_as_failures_and_leaves_skips_out():
    records = {0: record(0, "ok", 1.0, best_turn=0), 1: record(1, "ok", 0.5),
               2: record(2, "error"), 3: record(3, "error"),
               4: record(4, "skipped", error="needs the network")}
    summary = summarize(records, requested=6)  # task 5 has no record yet: a failure too
    assert summary["scored"] == 5
    assert summary["success_rate"] == pytest.approx(1 / 5)
    assert summary["mean_reward"] == pytest.approx(1.5 / 5)
    assert summary["success_rate_ok"] == pytest.approx(1 / 2)
    assert summary["mean_reward_ok"] == pytest.approx(1.5 / 2)
    assert summary["success_by_turn"] == {"1": pytest.approx(1 / 5)}
    assert summary["skipped_tasks"] == {"4": "needs the network"}
    text = format_summary(summary)
    assert "1/5 = 20.0% of the tasks" in text and "50.0% of the 2 ok episodes" in text
    assert "episodes       5/6 finished: 2 ok, 2 errors, 1 skipped, 1 missing" in text
    assert "skipped tasks  4 (they cannot run here" in text and "error tasks    2, 3" in text


class Breaks(Policy):
    """An agent whose action makes the environment raise (e.g. an unkillable process)."""

    name = "breaker"

    def reset(self, task) -> None:
        self.done = False

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        if self.done:
            return None
        self.done = True
        return Action("break it")


def test_an_agent_caused_fault_is_the_agents_outcome_never_an_error(monkeypatch):
    from intercode.errors import AgentFault
    from intercode.runner.episode import needs_new_env

    env = BashEnv("bash-demo")
    real = env.execute

    def execute(action: str):
        if action == "break it":
            raise AgentFault("processes survived every SIGKILL")
        return real(action)

    monkeypatch.setattr(env, "execute", execute)
    try:
        rec = run_episode(env, 0, Breaks())
        assert rec.status == "ok" and rec.reward == 0.0 and rec.success is False
        assert "SIGKILL" in rec.agent_fault and rec.to_json()["agent_fault"]
        assert needs_new_env(rec)  # the worker starts the next episode afresh
        summary = summarize({0: rec.to_json()}, requested=1)
        assert summary["success_rate"] == 0.0 and summary["errors"] == 0
    finally:
        env.close()


def test_a_fault_raised_before_the_agent_acts_is_not_charged_to_it(monkeypatch):
    from intercode.errors import AgentFault

    env = BashEnv("bash-demo")

    def reset(**kw):
        raise AgentFault("left over from an earlier episode")

    monkeypatch.setattr(env, "reset", reset)
    try:
        rec = run_episode(env, 0, Breaks())
        assert rec.status == "error" and rec.reward is None and rec.agent_fault is None
    finally:
        env.close()


def test_an_innocent_task_after_a_broken_environment_runs_in_a_fresh_one():
    from intercode.agents import GoldPolicy
    from intercode.runner.episode import run_task

    broken = BashEnv("bash-demo")

    def reset(**kw):
        raise FileExistsError("/testbed left behind by the previous agent")

    broken.reset = reset  # what an earlier episode left makes every reset fail
    made: list[BashEnv] = []

    def fresh() -> BashEnv:
        made.append(BashEnv("bash-demo"))
        return made[-1]

    record, env = run_task(broken, fresh, 0, GoldPolicy())
    try:
        assert record.status == "ok" and record.success is True
        assert env is made[0] and len(made) == 1
    finally:
        env.close()
        broken.close()
    calls: list[int] = []

    def always_broken() -> BashEnv:
        calls.append(1)
        return broken

    record, env = run_task(None, always_broken, 1, GoldPolicy())
    assert record.status == "error" and env is None and len(calls) == 2  # once more, no more


def test_a_numpy_task_index_is_accepted(tmp_path):
    summary = execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", workers=1,
                                output=tmp_path, tasks=(np.int64(1), np.int32(1))),
                      progress=False)
    assert summary["requested"] == summary["success"] == 1
    assert json.loads((tmp_path / "config.json").read_text())["tasks"] == [1]
    env = BashEnv("bash-demo")
    try:
        _, info = env.reset(options={"task": np.int64(3)})
        assert info["task"] == 3 and type(info["task"]) is int
        with pytest.raises(ValueError):
            env.reset(options={"task": np.True_})
        rec = run_episode(env, np.int64(2), Breaks())
        assert rec.task == 2 and type(rec.to_json()["task"]) is int
    finally:
        env.close()


# -- one run per output folder ------------------------------------------------------------

def slow_trajectories(path: Path, tasks: int, action: str) -> None:
    with path.open("w") as fh:
        for t in range(tasks):
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0,
                                 "turns": [{"action": action}]}) + "\n")


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    traj = tmp_path / "slow.jsonl"
    slow_trajectories(traj, 4, "sleep 0.5")
    out = tmp_path / "run"
    args = ["eval", "bash", "--dataset", "bash-demo", "--agent", "replay", "--trajectories",
            str(traj), "--workers", "1", "--tasks", "0-3", "--output", str(out), "--no-progress"]
    first = subprocess.Popen([sys.executable, "-m", "intercode", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "config.json").exists() and time.monotonic() < deadline:
            assert first.poll() is None, first.stderr.read()
            time.sleep(0.02)
        second = cli(*args, "--resume")
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"intercode: error: --output {out} is in use by another run (pid {first.pid}); "
            "wait for it to end or choose another --output"]
    finally:
        first.wait(timeout=120)
    assert first.returncode == 0
    assert sorted(r["task"] for r in lines(out / "results.jsonl")) == [0, 1, 2, 3]


def test_the_lock_dies_with_a_killed_run(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from intercode.runner.folder import RunFolder; "
         f"held = RunFolder(Path({str(tmp_path)!r})).acquire(); print('held', flush=True); "
         "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    from intercode.errors import ConfigError
    from intercode.runner.folder import RunFolder

    with pytest.raises(ConfigError, match="in use by another run"):
        RunFolder(tmp_path).acquire()
    holder.kill()
    holder.wait()
    RunFolder(tmp_path).acquire().release()


# -- the workers of a killed run ----------------------------------------------------------

def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_of_a_killed_run_close_their_sandboxes_and_leave_quietly(tmp_path):
    traj = tmp_path / "slow.jsonl"
    slow_trajectories(traj, 2, "sleep 600")
    stderr = tmp_path / "stderr"
    with stderr.open("w") as err:
        run = subprocess.Popen(
            [sys.executable, "-m", "intercode", "eval", "bash", "--dataset", "bash-demo",
             "--agent", "replay", "--trajectories", str(traj), "--workers", "1",
             "--timeout", "600", "--output", str(tmp_path / "run"), "--no-progress"],
            stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 60
    tree: set[int] = set()
    while time.monotonic() < deadline:  # wait until the agent's `sleep 600` runs
        tree = descendants(run.pid)
        if any(cmdline(p).startswith("sleep 600") for p in tree):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the episode never started")
    run.kill()
    run.wait()
    deadline = time.monotonic() + 30  # far less than the 600 s the action would take
    while time.monotonic() < deadline and any(alive(p) for p in tree):
        time.sleep(0.05)
    assert not [p for p in tree if alive(p)]  # worker, sandbox, shell and sleep are gone
    assert "Traceback" not in stderr.read_text() and "Error" not in stderr.read_text()


# -- the command line: one clear line for every bad input ---------------------------------

BAD_ARGS = [
    ["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "1e300"], ["--timeout", "-1"],
    ["--timeout", "0"], ["--turns", "0"], ["--turns", "-1"], ["--workers", "0"],
    ["--workers", "-5"], ["--output", ""], ["--output", " "], ["--backend", "mysql"],
    ["--mysql-url", "mysql://u:p@127.0.0.1"], ["--network"], ["--tasks", "5-3"],
    ["--tasks", ""], ["--tasks", "0-8"], ["--tasks", "-1"], ["--tasks", "a"],
    ["--tasks", "1-2-3"], ["--agent", "nope"], ["--model", "m"],
    ["--trajectories", "x.jsonl"], ["--agent", "react", "--model", "m", "--llm-timeout", "0"],
    ["--agent", "react", "--model", "m", "--llm-timeout", "nan"],
    ["--agent", "react", "--model", "m", "--temperature", "nan"],
    ["--agent", "react", "--model", "m", "--temperature", "-1"],
    ["--agent", "react", "--model", "m", "--top-p", "0"],
    ["--agent", "react", "--model", "m", "--max-tokens", "0"],
    ["--agent", "react", "--model", "m", "--llm-connect-wait", "-1"],
    ["--agent", "react", "--model", "m", "--llm-connect-wait", "nan"],
    ["--agent", "react", "--model", "m", "--llm-connect-wait", "inf"],
    ["--agent", "react", "--model", "m", "--llm-connect-wait", "1e9"],
    ["--llm-connect-wait", "5"],
]


@pytest.mark.parametrize("extra", BAD_ARGS, ids=lambda a: " ".join(a) or "''")
def test_a_bad_argument_is_one_line_and_exit_code_2(extra, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--output", "out"]
    try:
        code = main([*argv, *extra])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "error" in err
    assert not list(tmp_path.rglob("results.jsonl"))  # nothing ran


def test_bad_output_folders_are_one_line_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    for output, why in (("file", "is a file"), ("file/run", "not a folder"),
                        ("/proc/run", "/proc"), ("/proc/self/run", "/proc")):
        code = main(["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--tasks", "0",
                     "--output", output])
        err = capsys.readouterr().err
        assert code == 2 and why in err and len(err.strip().splitlines()) == 1, (output, err)
    assert (tmp_path / "file").read_text() == "x"


def test_a_resume_into_a_folder_with_a_foreign_config_is_one_line(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--tasks", "0",
            "--output", "out"]
    assert main(argv) == 0
    (tmp_path / "out" / "config.json").write_text("[]")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "config.json is not a run's configuration" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("content", ["", "\n\n", "[]", "{", '{"task": 99, "status": "ok", '
                                     '"reward": 1, "turns": [{"action": "ls"}]}\n'])
def test_an_empty_or_malformed_trajectories_file_is_one_error_up_front(content, tmp_path,
                                                                        monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text(content)
    code = main(["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--agent", "replay",
                 "--trajectories", "t.jsonl", "--output", "out"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "t.jsonl" in err
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.parametrize("agent", ["react", "tools", "try-again"])
def test_a_model_that_never_submits_stops_at_the_default_turn_limit(tmp_path, agent):
    """The Python API may leave max_turns out (the command line always sets it): a model
    that answers the same action forever must still end at the strategy's default."""
    from intercode.agents.names import DEFAULT_TURNS
    from intercode.llm.client import ModelConfig
    from intercode.llm.scripted_server import Reply, ScriptedChatServer, call, sequence
    from intercode.runner.run import RunConfig, execute

    text = "Thought 1: look\nAction 1: execute[ls]\n```bash\nls\n```"
    forever = Reply(tool_calls=(call("execute", {"code": "ls"}),)) if agent == "tools" \
        else Reply(text)
    with ScriptedChatServer(sequence([forever])) as server:
        cfg = RunConfig(env="bash", dataset="bash-demo", agent=agent, output=tmp_path / "run",
                        workers=1, tasks=(0,),
                        model=ModelConfig("scripted", base_url=server.url, retries=0))
        summary = execute(cfg, progress=False)
    record = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert summary["ok"] == 1 and record["status"] == "ok"
    assert len(record["turns"]) == DEFAULT_TURNS[agent]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["max_turns"] == DEFAULT_TURNS[agent]
