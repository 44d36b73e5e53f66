"""The runner: parallel episodes, durable logs, resume, crashes, errors as errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intercode.agents.base import Action, Policy
from intercode.envs.bash import BashEnv
from intercode.errors import ConfigError
from intercode.runner.episode import run_episode
from intercode.runner.executors import LocalExecutor
from intercode.runner.logs import ResultsLog
from intercode.runner.run import RunConfig, execute, parse_task_ranges
from intercode.runner.worker import WorkerSpec


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercode", *args], capture_output=True,
                          text=True, timeout=300, **kw)


def test_eval_gold_with_two_workers(tmp_path):
    out = tmp_path / "run"
    proc = cli("eval", "bash", "--dataset", "bash-demo", "--agent", "gold", "--workers", "2",
               "--output", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert sorted(r["task"] for r in recs) == list(range(8))
    assert {r["worker"] for r in recs} <= {0, 1}
    for r in recs:
        assert r["status"] == "ok" and r["reward"] == 1.0 and r["success"] is True
        assert r["turns"][0]["action"] and "observation" in r["turns"][0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success_rate"] == summary["success_rate_ok"] == 1.0
    assert summary["errors"] == 0 and summary["ok"] == summary["scored"] == 8
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == "bash-demo" and config["intercode_version"]
    assert "success" in proc.stdout


def test_task_ranges():
    assert parse_task_ranges("0-2,5,1", 10) == (0, 1, 2, 5)
    for bad in ("3-1", "0-10", "x", ""):
        with pytest.raises(ConfigError):
            parse_task_ranges(bad, 10)


def test_existing_output_needs_resume(tmp_path):
    cfg = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path, tasks=(0,))
    execute(cfg, progress=False)
    with pytest.raises(ConfigError, match="--resume"):
        execute(cfg, progress=False)
    other = RunConfig(env="bash", dataset="bash-test", agent="gold", output=tmp_path,
                      tasks=(0,), resume=True)
    with pytest.raises(ConfigError, match="dataset"):
        execute(other, progress=False)


def test_resume_repairs_a_torn_line_and_runs_only_what_is_missing(tmp_path):
    cfg = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path,
                    tasks=(0, 1, 2))
    execute(cfg, progress=False)
    log = tmp_path / "results.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    by_task = {json.loads(line)["task"]: line for line in lines}
    errored = json.loads(by_task[2])
    errored.update(status="error", reward=None, success=None, error="SandboxError: test")
    log.write_text(by_task[0] + json.dumps(errored) + "\n" + by_task[1][: len(by_task[1]) // 2])
    resumed = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path,
                        tasks=(0, 1, 2, 3), resume=True)
    summary = execute(resumed, progress=False)
    recs = records(tmp_path)
    assert [r["task"] for r in recs][:2] == [0, 2]
    assert sorted(r["task"] for r in recs[2:]) == [1, 2, 3]
    assert summary["ok"] == 4 and summary["errors"] == 0 and summary["finished"] == 4


def write_slow_trajectories(path: Path, tasks: int, seconds: float) -> None:
    with path.open("w") as fh:
        for t in range(tasks):
            turns = [{"action": f"sleep {seconds}", "observation": "", "reward": 0}] * 2
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0, "turns": turns}) + "\n")


def _parent(pid: str) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[1]


def _marked(pid: str, marker: str) -> bool:
    try:
        return marker.encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def _leftovers(before: set[str], marker: str) -> set[str]:
    """Processes of the killed run still alive: its workers (they carry the marker in
    their environment) and new sandboxes that descend from them or were orphaned."""
    out = set()
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit() and _marked(pid.name, marker):
            out.add(pid.name)
    now = set(subprocess.run(["pgrep", "bwrap"], capture_output=True, text=True).stdout.split())
    for pid in now - before:
        walk = _parent(pid)
        while walk not in (None, "0", "1") and not _marked(walk, marker):
            if Path(f"/proc/{walk}/exe").exists() and walk != pid:
                break  # a living parent that is not the run's
            walk = _parent(walk)
        if walk in ("1", "0") or (walk is not None and _marked(walk, marker)):
            out.add(pid)
    return out


def test_kill_9_loses_only_the_episodes_in_flight(tmp_path):
    traj = tmp_path / "slow.jsonl"
    write_slow_trajectories(traj, 8, 0.4)
    out = tmp_path / "run"
    args = ["eval", "bash", "--dataset", "bash-demo", "--agent", "replay", "--trajectories",
            str(traj), "--workers", "2", "--output", str(out), "--no-progress"]
    marker = f"intercode-kill-test-{os.getpid()}-{time.monotonic_ns()}"
    before = set(subprocess.run(["pgrep", "bwrap"], capture_output=True, text=True).stdout.split())
    proc = subprocess.Popen([sys.executable, "-m", "intercode", *args],
                            env={**os.environ, "INTERCODE_TEST_MARK": marker},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {r["task"] for r in ResultsLog(log).read()}
    assert 3 <= len(done_before) < 8
    # no worker, sandbox or shell outlives the killed run (sandboxes of other processes on
    # this machine, which have a live parent of their own, are not the run's)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = _leftovers(before, marker)
        if not left:
            break
        time.sleep(0.1)
    assert not left
    resumed = cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    recs = records(out)
    ok_tasks = [r["task"] for r in recs if r["status"] == "ok"]
    assert sorted(ok_tasks) == list(range(8))  # each exactly once: nothing re-run, nothing lost
    assert done_before <= set(ok_tasks[: len(done_before)])


def test_a_worker_that_dies_mid_episode_is_recorded_and_replaced(tmp_path):
    traj = tmp_path / "slow.jsonl"
    write_slow_trajectories(traj, 4, 1.0)
    fast = json.dumps({"task": 0, "status": "ok", "reward": 0,
                       "turns": [{"action": "true", "observation": "", "reward": 0}]})
    # task 0 ends first, while task 1 (2 s) is surely in flight in the other worker
    traj.write_text(fast + "\n" + "".join(traj.read_text().splitlines(True)[1:]))
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = LocalExecutor(spec, workers=2)
    got: list[dict] = []
    killed: list[int] = []

    def on_record(rec: dict) -> None:
        got.append(rec)
        if not killed:
            victim = next(w for w in executor._pool
                          if w.task is not None and w.task != rec["task"])
            killed.append(victim.task)
            os.kill(victim.proc.pid, signal.SIGKILL)

    executor.run([0, 1, 2, 3], on_record)
    by_task = {r["task"]: r for r in got}
    assert sorted(by_task) == [0, 1, 2, 3]
    dead = by_task[killed[0]]
    assert dead["status"] == "error" and dead["reward"] is None
    assert "worker process died" in dead["error"]
    assert sum(r["status"] == "ok" for r in got) == 3


def test_quick_episodes_get_their_next_task_ahead_and_a_death_loses_none_of_them(tmp_path):
    """A worker whose episodes are quick is sent its next task with the current one; when
    it dies, the episode it ran is an error and the task it had not started runs in
    another worker (neither lost nor recorded as an error)."""
    traj = tmp_path / "quick.jsonl"
    with traj.open("w") as fh:
        for t in range(8):
            turns = [{"action": "true", "observation": "", "reward": 0}]
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0, "turns": turns}) + "\n")
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = LocalExecutor(spec, workers=2)
    got: list[dict] = []
    held: list[list[int]] = []

    def on_record(rec: dict) -> None:
        got.append(rec)
        if not held:
            victim = max(executor._pool, key=lambda w: len(w.tasks))
            held.append(list(victim.tasks))
            os.kill(victim.proc.pid, signal.SIGKILL)

    executor.run(list(range(8)), on_record)
    assert len(held[0]) == 2  # the worker that sent the first record got two tasks
    assert sorted(r["task"] for r in got) == list(range(8))  # each exactly once
    errors = [r for r in got if r["status"] == "error"]
    assert len(errors) == 1 and errors[0]["task"] in held[0]
    assert "worker process died" in errors[0]["error"]

class KillsItsSandbox(Policy):
    """Kills the agent's sandbox before its first action: an infrastructure fault."""

    name = "saboteur"

    def __init__(self, env: BashEnv) -> None:
        self.env = env
        self.acted = False

    def reset(self, task) -> None:
        self.acted = False

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        if self.acted:
            return None
        self.acted = True
        self.env._agent._proc.kill()
        self.env._agent._proc.wait()
        return Action("echo hi")


def test_an_infrastructure_fault_is_an_error_record_never_a_zero():
    env = BashEnv("bash-demo")
    try:
        record = run_episode(env, 0, KillsItsSandbox(env))
        assert record.status == "error" and record.reward is None and record.success is None
        assert "SandboxError" in record.error
        # the environment recovers: a new sandbox is started for the next episode
        env.reset(options={"task": 1})
        assert env.step("echo back")[0] == "back\n"
    finally:
        env.close()


def test_missing_bwrap_is_one_clear_error(tmp_path):
    env = dict(os.environ, INTERCODE_BWRAP="/nonexistent/bwrap")
    proc = cli("eval", "bash", "--dataset", "bash-demo", "--output", str(tmp_path / "r"),
               "--no-progress", env=env)
    assert proc.returncode == 2
    assert "bwrap" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_bwrap_is_one_line_and_leaves_no_run_folder(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "INTERCODE_BWRAP"}
    env["PATH"] = str(empty)
    proc = subprocess.run([sys.executable, "-m", "intercode", "eval", "bash", "--dataset",
                           "bash-demo", "--output", str(out), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("intercode: error: bubblewrap (bwrap) is not installed")
    assert proc.stderr.count("\n") == 1
    assert not out.exists()
    env["INTERCODE_BWRAP"] = str(tmp_path / "nothing-here")
    proc = subprocess.run([sys.executable, "-m", "intercode", "eval", "bash", "--dataset",
                           "bash-demo", "--output", str(out), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "is not an executable program" in proc.stderr
    assert not out.exists()


def test_workers_of_a_later_run_get_its_environment(tmp_path, monkeypatch):
    """Workers fork from a server the process's first run started: a later run's
    environment variables still reach its own workers (here: where the gold cache is)."""
    for name in ("first", "second"):
        cache = tmp_path / f"cache-{name}"
        monkeypatch.setenv("INTERCODE_CACHE", str(cache))
        execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", workers=2,
                          tasks=(0, 1), output=tmp_path / f"run-{name}"), progress=False)
        assert list((cache / "gold").rglob("*.json")), \
            f"the {name} run's workers did not use its INTERCODE_CACHE"


SCRIPT = """
from pathlib import Path
from intercode.runner import execute, run_config
{guard}
summary = execute(run_config(env="bash", dataset="bash-demo", agent="gold", workers=2,
                             tasks=(0, 1), output=Path({out!r})), progress=False)
print("success", summary["success"])
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_a_main_guard_is_one_clear_error(tmp_path, guarded):
    # the workers import the run's main script again: one without the guard used to
    # kill every worker with multiprocessing's long bootstrapping traceback, each task
    # recorded as "the worker process died"
    out = tmp_path / "run"
    body = SCRIPT.format(guard="", out=str(out))
    if guarded:
        lines = body.strip().splitlines()
        body = "\n".join(lines[:2] + ['if __name__ == "__main__":']
                         + ["    " + line for line in lines[2:] if line.strip()]) + "\n"
    script = tmp_path / "run_it.py"
    script.write_text(body)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    if guarded:
        assert proc.returncode == 0, proc.stderr
        assert "success 2" in proc.stdout
        return
    assert proc.returncode != 0
    assert "bootstrapping phase" not in proc.stderr
    assert proc.stderr.count('call execute() under `if __name__ == "__main__":`') >= 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "intercode.errors.RunAborted: the script starts a run when it is imported: worker "
        'processes import the main script, so call execute() under `if __name__ == '
        '"__main__":`')


CLI_SCRIPT = """
import sys
from intercode.cli import main
sys.exit(main(["eval", "bash", "--dataset", "bash-demo", "--tasks", "0,1",
               "--output", {out!r}, "--no-progress"]))
"""


def test_a_command_line_script_without_a_main_guard_is_one_clear_error(tmp_path):
    """The same through ``intercode.cli.main``, which starts the workers' fork server
    before it parses its arguments: a worker importing the script again must not try to
    start one (multiprocessing's bootstrapping traceback) but say what is wrong."""
    script = tmp_path / "run_it.py"
    script.write_text(CLI_SCRIPT.format(out=str(tmp_path / "run")))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 2
    assert "bootstrapping phase" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "intercode: error: the script starts a run when it is imported: worker processes "
        'import the main script, so call execute() under `if __name__ == "__main__":`')


FORK_SERVER_THREADS = """
import os
import sys
from intercode.runner.executors import worker_context

def report(conn):
    from threadpoolctl import threadpool_info
    blas = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
    conn.send(({k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}, blas))

if __name__ == "__main__":
    before = dict(os.environ)
    ctx = worker_context(sys.argv[1])
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=report, args=(child,))  # forked from the server as it is
    proc.start()
    print(parent.recv())
    proc.join()
    assert dict(os.environ) == before  # this process's environment is never touched
"""


@pytest.mark.parametrize("given", [None, "OMP_NUM_THREADS=4"])
@pytest.mark.parametrize("benchmark", ["bash", "a-plugin"])
def test_the_fork_server_runs_its_math_libraries_on_one_thread(tmp_path, given, benchmark):
    """NumPy's OpenBLAS started its threads in the fork server and spun them (as much
    CPU again as the import): the server's NumPy runs it on one thread, unless the run's
    environment names a number of threads; nothing forked from the server sees the
    setting in its environment (a program's own processes, where the fork server is
    also its default). A built-in benchmark's server does not load NumPy at all (its
    workers build the environment's core, without Gymnasium)."""
    pytest.importorskip("threadpoolctl")
    script = tmp_path / "server.py"
    script.write_text(FORK_SERVER_THREADS)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    if given is not None:
        name, value = given.split("=")
        env[name] = value
    proc = subprocess.run([sys.executable, str(script), benchmark], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    threads = "[]" if benchmark == "bash" else "[1]"
    if given is None:
        assert proc.stdout.strip() == f"({{}}, {threads})"
    else:
        assert proc.stdout.strip().startswith("({'OMP_NUM_THREADS': '4'}, ")


def _replays(path: Path, actions: list[str]) -> None:
    with path.open("w") as fh:
        for t, action in enumerate(actions):
            turns = [{"action": action, "observation": "", "reward": 0}]
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0, "turns": turns}) + "\n")


def _one_worker_killed(tmp_path: Path, actions: list[str], after: int,
                       wait: Callable[[Any], None]) -> list[dict]:
    """The records of a one-worker run of ``actions`` (replayed), whose worker is killed
    while this process handles task ``after``'s record, once ``wait(worker)`` returns."""
    traj = tmp_path / "t.jsonl"
    _replays(traj, actions)
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = LocalExecutor(spec, workers=1)
    got: list[dict] = []

    def on_record(rec: dict) -> None:
        got.append(rec)
        if rec["task"] == after:
            worker = executor._pool[0]
            wait(worker)
            os.kill(worker.proc.pid, signal.SIGKILL)
            worker.proc.join()

    executor.run(list(range(len(actions))), on_record)
    return got


def test_a_task_sent_to_a_worker_that_just_died_is_not_a_crash(tmp_path):
    """The worker finished a task sent ahead and died in the next one while this process
    was still writing an earlier record: the next send to it fails (a closed pipe). The
    run goes on: the episode it died in is an error, the task the send failed for runs in
    a new worker."""

    def in_task_2(worker: Any) -> None:
        assert worker.tasks == [1, 2]  # sent ahead
        deadline = time.monotonic() + 60
        while not worker.conn.poll() and time.monotonic() < deadline:
            time.sleep(0.01)  # task 1's record has come; task 2 runs
        time.sleep(0.3)

    got = _one_worker_killed(tmp_path, ["true", "true", "sleep 5", "true", "true", "true"],
                             0, in_task_2)
    assert {r["task"]: r["status"] for r in got} == {0: "ok", 1: "ok", 2: "error", 3: "ok",
                                                     4: "ok", 5: "ok"}


def test_no_task_is_sent_ahead_among_the_last_ones(tmp_path):
    """Two quick episodes, then two long ones: the long ones run side by side (sent
    ahead, both would have gone to the first worker done, the other idle)."""
    traj = tmp_path / "t.jsonl"
    _replays(traj, ["true", "true", "sleep 2", "sleep 2"])
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    got: list[dict] = []
    LocalExecutor(spec, workers=2).run([0, 1, 2, 3], got.append)
    workers = {r["task"]: r["worker"] for r in got}
    assert workers[2] != workers[3]


def test_a_task_that_never_reached_a_dead_worker_runs_in_another(tmp_path):
    """The worker finished the tasks it held and died idle: the sends to it fail. The
    task whose send failed is no episode of its (never an error record): it runs in
    the new worker."""

    def idle(worker: Any) -> None:
        time.sleep(1.5)  # the tasks it holds are done: it waits for the next

    got = _one_worker_killed(tmp_path, ["true"] * 8, 1, idle)
    assert sorted(r["task"] for r in got) == list(range(8))
    assert [r["task"] for r in got if r["status"] != "ok"] == []


SEND_TO_THE_DEAD = """
import json, os, signal, sys, time
from intercode.runner.executors import LocalExecutor
from intercode.runner.worker import WorkerSpec

if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as the command line sets it
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=sys.argv[1])
    executor = LocalExecutor(spec, workers=1)
    got = []

    def on_record(rec):
        got.append(rec)
        if rec["task"] == 1:
            worker = executor._pool[0]
            time.sleep(1.5)  # the tasks it holds are done: it waits for the next
            os.kill(worker.proc.pid, signal.SIGKILL)
            worker.proc.join()

    executor.run(list(range(8)), on_record)
    print(sorted(r["task"] for r in got if r["status"] == "ok"))
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL  # as it was
"""


def test_a_send_to_a_dead_worker_never_kills_the_command_line(tmp_path):
    """The command line sets SIGPIPE to its default: a task sent to a worker that had
    just died killed the whole run, silently, at the write. The run goes on."""
    traj = tmp_path / "t.jsonl"
    _replays(traj, ["true"] * 8)
    script = tmp_path / "dead.py"
    script.write_text(SEND_TO_THE_DEAD)
    proc = subprocess.run([sys.executable, str(script), str(traj)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip() == str(list(range(8)))


def test_a_refused_eval_leaves_no_fork_server_behind():
    """``intercode eval bash ...`` starts its workers' fork server before its arguments
    are parsed: a command refused afterwards says so in one line, and the server (and
    multiprocessing's resource tracker) end with it."""
    marker = f"INTERCODE_TEST_EARLY_{os.getpid()}_{time.monotonic_ns()}"
    proc = cli("eval", "bash", "--dataset", "nl2bash", "--workers", "0",
               env={**os.environ, marker: "1"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("intercode eval: error: argument")
    deadline = time.monotonic() + 20
    left = {p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _marked(p.name, marker)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if _marked(p, marker)}
    assert not left


def test_a_results_file_that_cannot_be_synced_still_gets_its_summary(tmp_path, monkeypatch):
    """A disk that fails the sync of ``results.jsonl`` ends the run with that error,
    naming the file; the summary of the records the file holds is written all the same,
    and the messages file is closed (before, the error skipped both)."""
    from intercode.runner import syncer

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncer.os, "fsync", failing_fsync)
    cfg = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path,
                    tasks=tuple(range(8)), workers=1)
    with pytest.raises(OSError) as raised:
        execute(cfg, progress=False)
    assert raised.value.filename == str(tmp_path / "results.jsonl")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["finished"] == len(records(tmp_path)) >= 1
