"""`intercode eval --executor ray` as a user runs it: kill -9 of the driver and --resume,
and a cluster started with `ray start --head`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from intercode.runner.logs import ResultsLog


def cli(*args: str, timeout: float = 300,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "intercode", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def write_slow_trajectories(path: Path, tasks: int, seconds: float) -> None:
    with path.open("w") as fh:
        for t in range(tasks):
            turns = [{"action": f"sleep {seconds}", "observation": "", "reward": 0}] * 2
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0, "turns": turns}) + "\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_run_on_a_cluster_started_with_ray_start(ray_env, tmp_path):
    """(First in the session: before the simulated cluster starts.)
    `ray start --head --block` with token authentication, as docs/scaling.md says
    (stopped by us at the end: never `ray stop`, which would stop every Ray cluster of
    this machine)."""
    ray_cmd = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    assert ray_cmd, "the ray command is missing"
    token = tmp_path / "ray-token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    port = _free_port()
    head = subprocess.Popen([ray_cmd, "start", "--head", "--block", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false",
                             "--object-store-memory=80000000", "--disable-usage-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, env=env)
    try:
        out = tmp_path / "run"
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while not _listening(port):  # the head's GCS is up
            assert head.poll() is None and time.monotonic() < deadline, "no head"
            time.sleep(0.2)
        done = cli("eval", "bash", "--dataset", "bash-demo", "--tasks", "0-3",
                   "--executor", "ray", "--ray-address", address, "--workers", "2",
                   "--output", str(out), "--no-progress", env=env)
        assert done.returncode == 0, done.stderr
        recs = records(out)
        assert sorted(r["task"] for r in recs) == [0, 1, 2, 3]
        assert all(r["status"] == "ok" and r["reward"] == 1.0 for r in recs)
    finally:
        # the whole session of `ray start` (its graceful stop takes half a minute)
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        assert head.stderr is not None
        head.stderr.close()
    deadline = time.monotonic() + 30
    while _session(head.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _session(head.pid), "processes of the Ray head outlived it"


def _session(sid: int) -> list[str]:
    """The processes of session ``sid`` still alive."""
    out = subprocess.run(["ps", "-s", str(sid), "-o", "pid="], capture_output=True, text=True)
    return out.stdout.split()


def test_resume_after_kill_9_of_the_driver(ray_cluster, tmp_path):
    traj = tmp_path / "slow.jsonl"
    write_slow_trajectories(traj, 8, 0.5)
    out = tmp_path / "run"
    args = ["eval", "bash", "--dataset", "bash-demo", "--agent", "replay", "--trajectories",
            str(traj), "--workers", "3", "--executor", "ray", "--ray-address",
            ray_cluster.address, "--output", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "intercode", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 2:
            break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.stderr is not None
    proc.stderr.close()
    done_before = {r["task"] for r in ResultsLog(log).read()}
    assert 2 <= len(done_before) < 8
    resumed = cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    ok_tasks = [r["task"] for r in records(out) if r["status"] == "ok"]
    assert sorted(ok_tasks) == list(range(8))  # each exactly once: nothing re-run, nothing lost
    assert done_before <= set(ok_tasks[: len(done_before)])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] == summary["finished"] == 8
