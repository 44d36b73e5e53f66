"""``intercode eval`` starts its workers' fork server before it parses its arguments."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercode.benchmarks import builtin
from intercode.cli import early
from intercode.runner import workerserver

FAKE_PID = 4242  # what the fake start says it started


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def fake_start(env: str, fork: bool = False) -> int:
        calls.append(env)
        return FAKE_PID

    monkeypatch.setattr(workerserver, "start", fake_start)
    return calls


@pytest.mark.parametrize("argv", [
    ["eval", "bash"],
    ["eval", "bash", "--dataset", "nl2bash", "--workers", "2", "--tasks", "0-9"],
    ["eval", "sql", "--agent", "gold", "--executor", "local"],
    ["eval", "python", "--agent=replay", "--trajectories", "t.jsonl"],
])
def test_a_local_eval_of_a_built_in_environment_starts_it(started: list[str],
                                                           argv: list[str]) -> None:
    assert early.start_workers_early(argv) == FAKE_PID
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
    assert early.start_workers_early(argv) is None
    assert started == []


def test_the_built_in_environments_modules_are_the_registrys() -> None:
    modules = {b.name: str(b.core).split(":", 1)[0] for b in builtin.BENCHMARKS}
    assert modules == workerserver.BUILTIN_ENV_MODULES


FIRST = """
import sys
import time
from intercode.runner import workerserver

def start(env, fork=False):
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


WHO_FORKS = """
import sys
from intercode.runner import workerserver

entry = sys.argv[1]

def start(env, fork=False):
    print(entry, "forks" if fork else "spawns")
    raise SystemExit(0)

workerserver.start = start
import intercode.cli as cli
sys.argv = ["intercode", "eval", "bash"]
cli.main() if entry == "main" else cli.run()
"""


@pytest.mark.parametrize(("entry", "how"), [("main", "spawns"), ("run", "forks")])
def test_only_the_program_itself_forks_its_server(entry: str, how: str) -> None:
    """``run`` (the console script, ``python -m intercode``) may fork the server from its
    process; ``main`` (a program's own call, with its own objects and descriptors) spawns
    it, with or without arguments."""
    proc = subprocess.run([sys.executable, "-c", WHO_FORKS, entry], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [entry, how]


def test_ctrl_c_while_the_server_starts_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(env: str, fork: bool = False) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(workerserver, "start", interrupted)
    from intercode.cli import main

    assert main(["eval", "bash", "--dataset", "bash-demo"]) == 130
    assert capsys.readouterr().err.strip() == "intercode: interrupted"


def test_a_command_that_fails_stops_the_server_it_started(monkeypatch: pytest.MonkeyPatch,
                                                          started: list[str]) -> None:
    stopped: list[int] = []
    monkeypatch.setattr(workerserver, "stop", stopped.append)
    from intercode.cli import main

    with pytest.raises(SystemExit) as raised:  # argparse's exit on a bad value
        main(["eval", "bash", "--workers", "0"])
    assert raised.value.code == 2
    assert started == ["bash"] and stopped == [FAKE_PID]


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
import os, signal, sys
from intercode.runner import workerserver
from multiprocessing import forkserver

def report(conn):
    handler = signal.getsignal(signal.SIGINT)
    conn.send("%s, server lock held %s" % (
        {signal.default_int_handler: "default", signal.SIG_IGN: "ignore"}.get(
            handler, repr(handler)), forkserver._forkserver._lock.locked()))

def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as fh:
        return fh.read()

def pipes(pid):
    return {os.readlink("/proc/%d/fd/%s" % (pid, fd)) for fd in os.listdir("/proc/%d/fd" % pid)}

def ignored_by(pid):
    with open("/proc/%d/status" % pid) as fh:
        mask = int(next(l for l in fh if l.startswith("SigIgn:")).split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))

if __name__ == "__main__":
    # a caller with Python's handler, or one that ignores Ctrl-C itself (set here: a test
    # run started in the background of a script has it ignored from the start)
    signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[1] == "ignoring"
                  else signal.default_int_handler)
    before = signal.getsignal(signal.SIGINT)
    mine, theirs = os.pipe()  # a descriptor of the caller's (inheritable or not)
    os.set_inheritable(mine, True)
    import resource  # and one far above the others
    far = os.dup2(mine, min(resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1, 1 << 16))
    pid = workerserver.start("bash", fork=sys.argv[2] == "fork")
    print("server ignores SIGINT", ignored_by(pid))
    print("here as before", signal.getsignal(signal.SIGINT) is before)
    print("a second start", workerserver.start("bash"))
    ctx = workerserver.worker_context("bash")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=report, args=(child,))  # forked from the server
    proc.start()
    print("its children", parent.recv())
    proc.join()
    print("a fork of this process", cmdline(pid) == cmdline(os.getpid()))  # (it has served)
    print("the caller's descriptors kept", bool(pipes(pid) & {os.readlink("/proc/self/fd/%d" % fd)
                                                           for fd in (mine, theirs, far)}))
    workerserver.stop(pid + 1)  # not the server this process started: left alone
    print("another pid stopped nothing", forkserver._forkserver._forkserver_pid == pid)
    workerserver.stop(pid)
    try:
        os.kill(pid, 0)
        gone = False
    except ProcessLookupError:
        gone = True
    print("stopped", gone and forkserver._forkserver._forkserver_pid is None)
"""


@pytest.mark.parametrize("how", ["spawn", "fork"])
@pytest.mark.parametrize(("caller", "children"), [("default", "default"),
                                                   ("ignoring", "ignore")])
def test_the_server_starts_deaf_to_ctrl_c_and_stop_ends_it(tmp_path: Path, caller: str,
                                                           children: str, how: str) -> None:
    """The server ignores SIGINT from its start (a Ctrl-C during its imports printed
    their traceback); the command's own handler is back once it started, and what the
    server forks has the handler it would have had without this: Python's default, or
    the caller's ignoring it (a program's own processes, where the fork server is its
    default too). ``stop`` ends only the server its pid names. A server forked from the
    command's process (``fork``) keeps none of its descriptors: the standard three, its
    socket and its pipe, as a spawned one."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    proc = subprocess.run([sys.executable, str(script), caller, how], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "server ignores SIGINT True", "here as before True", "a second start None",
        f"its children {children}, server lock held False",
        f"a fork of this process {how == 'fork'}",
        "the caller's descriptors kept False",
        "another pid stopped nothing True", "stopped True"]


def test_ctrl_c_before_the_commands_handler_is_one_line_and_stops_the_server(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        started: list[str]) -> None:
    from intercode.cli import app, main

    stopped: list[int] = []
    monkeypatch.setattr(workerserver, "stop", stopped.append)

    def interrupted(argv: object) -> int:  # a Ctrl-C while the parser is built, say
        raise KeyboardInterrupt

    monkeypatch.setattr(app, "main", interrupted)
    assert main(["eval", "bash", "--dataset", "bash-demo"]) == 130
    assert capsys.readouterr().err.strip() == "intercode: interrupted"
    assert stopped == [FAKE_PID]




TWO_COMMANDS = """
import sys
import time
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


UNTRACKED = """
import os, sys, time
from intercode.runner import workerserver
from multiprocessing import resource_tracker
pid = workerserver.start("bash")
time.sleep(0.5)
children = []
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            stat = open("/proc/%s/stat" % entry).read()
            cmdline = open("/proc/%s/cmdline" % entry, "rb").read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            children.append(b"resource_tracker" in cmdline)
print(len(children), sum(children), os.readlink("/proc/self/fd/%d" % resource_tracker.getfd()))
workerserver.stop(pid)
"""


def test_the_early_server_starts_no_resource_tracker() -> None:
    """The fork server the command line starts comes without multiprocessing's resource
    tracker (a whole interpreter at every run's busiest moment): its one child is the
    server, and what the workers would report to the tracker goes to /dev/null."""
    proc = subprocess.run([sys.executable, "-c", UNTRACKED], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "0", os.devnull]


def test_a_process_with_a_resource_tracker_keeps_it(tmp_path: Path) -> None:
    """A caller whose process already runs the tracker (it made a shared resource) keeps
    it: only a process without one gets /dev/null."""
    script = tmp_path / "kept.py"
    script.write_text(UNTRACKED.replace(
        "pid = workerserver.start", "resource_tracker.ensure_running()\npid = workerserver.start"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    count, trackers, target = proc.stdout.split()
    assert (count, trackers) == ("2", "1") and target != os.devnull


ORPHANED = """
import os, sys, threading, time
from intercode.runner import workerserver

if __name__ == "__main__":
    if sys.argv[1] == "threaded":  # a caller running a thread: a fork could inherit its locks
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    pid = workerserver.start("bash", fork=True)
    ctx = workerserver.worker_context("bash")
    worker = ctx.Process(target=len, args=((),))  # served: the server runs its loop
    worker.start()
    worker.join()
    with open("/proc/%d/cmdline" % pid, "rb") as fh:
        spawned = b"multiprocessing.forkserver" in fh.read()
    print(pid, "spawned" if spawned else "forked", flush=True)
    os._exit(0)  # no clean-up: the server must notice on its own
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize(("caller", "how"), [("plain", "forked"), ("threaded", "spawned")])
def test_a_forked_server_ends_with_its_caller_and_a_threaded_caller_spawns_it(
        tmp_path: Path, caller: str, how: str) -> None:
    """The server forked from the command's process keeps no write end of its "alive"
    pipe: when the caller dies without a word, the pipe's EOF ends it, as it ends a spawned
    one. A caller running another thread gets a spawned server (a fork could inherit a
    lock that thread held)."""
    script = tmp_path / "orphan.py"
    script.write_text(ORPHANED)
    proc = subprocess.run([sys.executable, str(script), caller], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pid, started = proc.stdout.split()
    assert started == how
    deadline = time.monotonic() + 60
    while not _gone(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(int(pid))


FORKED_STATE = """
import os, sys, threading
from multiprocessing import forkserver, resource_tracker
from intercode.runner import workerserver

tracker = resource_tracker._resource_tracker
tracker._fd, tracker._pid = os.open(os.devnull, os.O_WRONLY), 4242  # the caller's tracker
callers = tracker._fd
server = forkserver._forkserver
report_r, report_w = os.pipe()
spare = os.open(os.devnull, os.O_RDONLY)  # one of the caller's, to be closed

def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False

def loop(listener, alive_r, preload):  # stands in for multiprocessing's
    os.write(report_w, repr((tracker._fd, tracker._pid, server._lock.locked(),
                             is_open(spare), is_open(callers))).encode())
    raise SystemExit

with server._lock:  # held across the fork, as _fork_server holds it
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        workerserver._serve_forked(server, loop, 0, 1, [spare, tracker._fd], [])
os.close(report_w)
_, status = os.waitpid(pid, 0)
print(os.read(report_r, 4096).decode(), os.waitstatus_to_exitcode(status))
"""


def test_the_forked_server_starts_clean() -> None:
    """In the forked server: the caller's resource tracker forgotten (a spawned server has
    none; its stale descriptor number would be reused), the server's lock free, the
    caller's other descriptors closed, and the loop's end an exit status of 0."""
    proc = subprocess.run([sys.executable, "-c", FORKED_STATE], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["(None,", "None,", "False,", "False,", "False)", "0"]


NO_PROC = """
import sys
from intercode.runner import workerserver

def unlisted():
    raise FileNotFoundError(2, "No such file or directory", "/proc/self/fd")

workerserver._open_descriptors = unlisted  # as where /proc is not mounted
pid = workerserver.start("bash", fork=True)
ctx = workerserver.worker_context("bash")
worker = ctx.Process(target=len, args=((),))
worker.start()
worker.join()
with open("/proc/%d/cmdline" % pid, "rb") as fh:
    print("spawned" if b"multiprocessing.forkserver" in fh.read() else "forked")
"""


def test_without_a_listing_of_descriptors_the_server_is_spawned() -> None:
    """Where the descriptors cannot be listed (no /proc), a fork could not close them all
    cheaply: the server is spawned, as before."""
    proc = subprocess.run([sys.executable, "-c", NO_PROC], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["spawned"]
