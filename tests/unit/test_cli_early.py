"""``intercode eval`` starts its workers' fork server before it parses its arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from intercode.benchmarks import builtin
from intercode.cli import early
from intercode.runner import workerserver


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(workerserver, "start", calls.append)
    return calls


@pytest.mark.parametrize("argv", [
    ["eval", "bash"],
    ["eval", "bash", "--dataset", "nl2bash", "--workers", "2", "--tasks", "0-9"],
    ["eval", "sql", "--agent", "gold", "--executor", "local"],
    ["eval", "python", "--agent=replay", "--trajectories", "t.jsonl"],
])
def test_a_local_eval_of_a_built_in_environment_starts_it(started: list[str],
                                                           argv: list[str]) -> None:
    assert early.start_workers_early(argv)
    assert started == [argv[1]]


@pytest.mark.parametrize("argv", [
    [], ["eval"], ["validate", "bash"], ["serve", "bash"], ["-v", "eval", "bash"],
    ["eval", "my-plugin-env"], ["eval", "--dataset", "nl2bash"],
    ["eval", "bash", "--help"], ["eval", "bash", "-h"], ["eval", "bash", "--he"],
    ["eval", "bash", "--agent", "human"], ["eval", "bash", "--agent=human"],
    ["eval", "bash", "--ag", "human"],
    ["eval", "bash", "--executor", "ray"], ["eval", "bash", "--executor=ray"],
    ["eval", "bash", "--exec", "ray", "--ray-address", "auto"],
])
def test_nothing_is_started_where_it_would_be_wasted_or_unsure(started: list[str],
                                                               argv: list[str]) -> None:
    assert not early.start_workers_early(argv)
    assert started == []


def test_the_built_in_environments_modules_are_the_registrys() -> None:
    modules = {b.name: str(b.env).split(":", 1)[0] for b in builtin.BENCHMARKS}
    assert modules == workerserver.BUILTIN_ENV_MODULES


FIRST = """
import sys
from intercode.runner import workerserver

def start(env):
    print("app imported" if "intercode.cli.app" in sys.modules else "first", env)
    raise SystemExit(0)

workerserver.start = start
from intercode.cli import main
main(["eval", "bash", "--dataset", "nl2bash"])
"""


def test_the_server_starts_before_the_command_line_is_imported() -> None:
    proc = subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["first", "bash"]


def test_ctrl_c_while_the_server_starts_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(env: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(workerserver, "start", interrupted)
    from intercode.cli import main

    assert main(["eval", "bash", "--dataset", "bash-demo"]) == 130
    assert capsys.readouterr().err.strip() == "intercode: interrupted"


def test_a_command_that_fails_stops_the_server_it_started(monkeypatch: pytest.MonkeyPatch,
                                                          started: list[str]) -> None:
    stopped: list[bool] = []
    monkeypatch.setattr(workerserver, "stop", lambda: stopped.append(True))
    from intercode.cli import main

    with pytest.raises(SystemExit) as raised:  # argparse's exit on a bad value
        main(["eval", "bash", "--workers", "0"])
    assert raised.value.code == 2
    assert started == ["bash"] and stopped == [True]


def test_a_server_that_cannot_start_is_the_commands_one_line_error(tmp_path) -> None:
    """A temporary folder whose path is too long for a unix socket: the server cannot
    start; the command says so in one line, as before the server started early."""
    deep = tmp_path / ("a" * 60) / ("b" * 60)
    deep.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "intercode", "eval", "bash", "--dataset",
                           "bash-demo", "--tasks", "0", "--output", str(tmp_path / "run"),
                           "--no-progress"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(deep)})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == ["intercode: error: AF_UNIX path too long"]


SERVER = """
import os, signal
from intercode.runner import workerserver
from multiprocessing import forkserver

def report(conn):
    conn.send(signal.getsignal(signal.SIGINT) is signal.default_int_handler)

if __name__ == "__main__":
    workerserver.start("bash")
    pid = forkserver._forkserver._forkserver_pid
    with open("/proc/%d/status" % pid) as fh:
        ignored = int(next(l for l in fh if l.startswith("SigIgn:")).split()[1], 16)
    print("server ignores SIGINT", bool(ignored & (1 << (signal.SIGINT - 1))))
    print("here the default", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    ctx = workerserver.worker_context("bash")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=report, args=(child,))  # forked from the server
    proc.start()
    print("its children the default", parent.recv())
    proc.join()
    workerserver.stop()
    try:
        os.kill(pid, 0)
        gone = False
    except ProcessLookupError:
        gone = True
    print("stopped", gone and forkserver._forkserver._forkserver_pid is None)
"""


def test_the_server_starts_deaf_to_ctrl_c_and_stop_ends_it(tmp_path: Path) -> None:
    """The server ignores SIGINT from its start (a Ctrl-C during its imports printed
    their traceback); the command's own handler is back once it started, and so is the
    default handler of what the server forks (a program's own processes, where the fork
    server is its default too)."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["server ignores SIGINT True", "here the default True",
                                        "its children the default True", "stopped True"]


TWO_COMMANDS = """
import sys
from intercode.cli import main

if __name__ == "__main__":
    try:
        main(["eval", "bash", "--workers", "0"])
    except SystemExit as exc:
        print("refused", exc.code)
    print("ran", main(["eval", "bash", "--dataset", "bash-demo", "--tasks", "0",
                       "--output", sys.argv[1], "--no-progress"]))
"""


def test_a_caller_runs_a_command_after_one_that_stopped_the_server(tmp_path: Path) -> None:
    """A refused command stops the fork server it started; the same process's next run
    starts a new one (multiprocessing must not think the killed one still serves)."""
    script = tmp_path / "two.py"
    script.write_text(TWO_COMMANDS)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "refused 2" and lines[-1] == "ran 0", proc.stdout
