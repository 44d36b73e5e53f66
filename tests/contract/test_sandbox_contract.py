"""The contract every sandbox backend must pass (run for each registered backend).

Each abuse test checks that the episode goes on (the next action works) and that
the host is untouched.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from backends import backends, chosen_backend, kill_sandbox, need

from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.limits import Limits

PROJECT = Path(__file__).resolve().parents[2]
TREE = FileTree.of([
    Entry("work", DIR, 0o755, 1_600_000_000 * 10**9),
    Entry("work/a.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"alpha\n"),
    Entry("work/run.sh", FILE, 0o755, 1_600_000_000 * 10**9, b"#!/bin/sh\necho run\n"),
])


@pytest.fixture(params=backends(), scope="module")
def backend(request):
    need(request.param)
    return request.param


@pytest.fixture(scope="module")
def box(backend):
    """One sandbox shared by the non-destructive tests of a module."""
    sb = create_sandbox(backend, limits=Limits(timeout=5))
    sb.start()
    sb.load(TREE)
    yield sb
    sb.close()


@pytest.fixture()
def fresh(backend):
    """A sandbox of its own, with short limits, for destructive tests."""
    sb = create_sandbox(backend, limits=Limits(timeout=2, kill_grace=0.5, processes=64,
                                               memory=512 << 20, storage=64 << 20,
                                               output=4096, output_hard=1 << 20))
    sb.start()
    sb.load(TREE)
    yield sb
    sb.close()


def sleeper(marker: str) -> str:
    """A shell command that sleeps with ``marker`` in its command line."""
    return f"(exec -a {marker} sleep 300)"


def host_pids_with(marker: str, settle: float = 2.0) -> list[int]:
    """Host processes whose command line contains ``marker`` (after dying ones are gone)."""
    deadline = time.monotonic() + settle
    while True:
        out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        pids = [int(p) for p in out.stdout.split()]
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


def started_pids_with(marker: str, limit: float = 10.0) -> list[int]:
    """Host processes whose command line contains ``marker``, once one has appeared (a
    process started in the background may not have exec'd yet when its action returns:
    seen on a loaded machine)."""
    deadline = time.monotonic() + limit
    while True:
        pids = host_pids_with(marker, settle=0)
        if pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


# -- the persistent shell --------------------------------------------------------------


def test_state_persists_between_actions(box):
    box.reset()
    assert box.run("cd /work && export GREETING=hi && count=3").exit_code == 0
    box.run("greet() { echo \"$GREETING $1 $count\"; }")
    r = box.run("pwd; greet you")
    assert r.output == "/work\nhi you 3\n"
    assert r.cwd == "/work"


def test_exit_code_and_interleaved_output(box):
    r = box.run("echo one; echo two >&2; echo three; false")
    assert r.output == "one\ntwo\nthree\n"
    assert r.exit_code == 1
    assert box.run("exit_status_test() { return 42; }; exit_status_test").exit_code == 42


def test_syntax_error_is_an_observation(box):
    r = box.run("echo 'unclosed")
    assert r.exit_code == 2 and "unexpected EOF" in r.output
    assert box.run("echo fine").output == "fine\n"


def test_command_not_found_looks_like_bash_c(box):
    r = box.run("no_such_command_xyz")
    assert r.exit_code == 127
    assert r.output == "/bin/bash: line 1: no_such_command_xyz: command not found\n"


def test_stdin_is_empty(box):
    r = box.run("cat; read x; echo \"read=$? x=$x\"")
    assert r.output == "read=1 x=\n"


def test_unicode_round_trip(box):
    r = box.run("echo 'héllo wörld ✓ 中文'")
    assert r.output == "héllo wörld ✓ 中文\n"


def test_multiline_action_and_heredoc(box):
    r = box.run("cat > /tmp/h.txt <<'EOF'\nline 1\nline $2\nEOF\nfor i in 1 2; do\n  echo $i\ndone\ncat /tmp/h.txt")
    assert r.output == "1\n2\nline 1\nline $2\n"


def test_reset_restores_tree_and_shell(box):
    box.run("cd /work; rm a.txt; echo x > new.txt; chmod -x run.sh; mkdir -p /tmp/q/r; V=1")
    box.reset()
    r = box.run("pwd; echo \"V=$V\"; ls -A /work /tmp; cat /work/a.txt; test -x /work/run.sh && echo exec")
    assert r.output == "/\nV=\n/tmp:\n\n/work:\na.txt\nrun.sh\nalpha\nexec\n"
    assert box.diff() == []


def test_exec_outside_the_shell(box):
    box.reset()
    r = box.exec(["/bin/sh", "-c", "echo $0 \"$1\"", "prog", "a b"], cwd="/work")
    assert r.output == "prog a b\n" and r.exit_code == 0
    r = box.exec(["/bin/sh", "-c", "sleep 5"], timeout=0.5)
    assert r.timed_out
    assert box.run("echo ok").output == "ok\n"


# -- isolation ---------------------------------------------------------------------------


def test_identity_is_unprivileged(box):
    r = box.run("id -u; id -un; hostname; echo $HOME")
    uid, name, host, home = r.output.split()
    assert uid != "0" and name != "root"
    assert host == "intercode" and home == f"/home/{name}"


def test_host_files_are_invisible(box):
    home = Path.home()
    for path in (str(PROJECT), str(home / ".bashrc"), "/root/.bash_history"):
        r = box.run(f"ls -d {path!r} 2>&1")
        assert "No such file or directory" in r.output, path
    r = box.run("cat /etc/shadow 2>&1")
    assert "Permission denied" in r.output or "No such file" in r.output


def test_host_system_is_read_only(box):
    r = box.run("touch /usr/intercode_probe /etc/intercode_probe 2>&1; echo $?")
    assert r.output.count("Read-only file system") == 2
    assert not Path("/usr/intercode_probe").exists()


def test_tmp_is_private(box):
    marker = f"intercode-probe-{uuid.uuid4().hex}"
    Path("/tmp", marker).write_text("host")
    try:
        r = box.run(f"ls /tmp/{marker} 2>&1; echo inside > /tmp/{marker}.in")
        assert "No such file" in r.output
        assert not Path("/tmp", marker + ".in").exists()
    finally:
        Path("/tmp", marker).unlink()


def test_sandboxes_do_not_see_each_other(backend):
    with create_sandbox(backend) as a, create_sandbox(backend) as b:
        a.load(TREE)
        b.load(TREE)
        a.run("echo secret > /work/only-a.txt; sleep 60 &")
        r = b.run("ls /work; ps -e -o comm= 2>/dev/null | grep -c sleep")
        assert "only-a.txt" not in r.output
        assert r.output.strip().endswith("0")


def test_network_is_loopback_only(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    server.settimeout(3)

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    try:
        r = box.run(f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; echo rc=$?; "
                    "grep -c ':' /proc/net/dev")
        assert "rc=1" in r.output
        interfaces = int(r.output.strip().splitlines()[-1])
        assert interfaces == 1  # only lo
        r = box.run("curl -sS -m 2 http://1.1.1.1 2>&1; echo rc=$?")
        assert "rc=0" not in r.output
    finally:
        server.close()
        t.join()
    assert accepted == []


# -- limits and abuse --------------------------------------------------------------------


def test_timeout_kills_the_whole_tree(fresh):
    marker = uuid.uuid4().hex[:12]
    started = time.monotonic()
    r = fresh.run(f"({sleeper(marker)} &) ; setsid bash -c '{sleeper(marker)}' & {sleeper(marker)}")
    assert r.timed_out and "timed out" in r.observation
    assert time.monotonic() - started < 8
    assert host_pids_with(marker) == []
    # bash may first report its killed background jobs ("... Killed ..."), as on a terminal
    assert fresh.run("echo after").output.endswith("after\n")


def test_timeout_keeps_shell_state_when_possible(fresh):
    fresh.run("cd /work; KEEP=yes")
    r = fresh.run("sleep 30")
    assert r.timed_out and not r.shell_restarted
    assert fresh.run("echo $KEEP; pwd").output == "yes\n/work\n"


def test_busy_loop_in_the_shell_restarts_it(fresh):
    fresh.run("cd /work")
    r = fresh.run("while :; do :; done")
    assert r.timed_out and r.shell_restarted
    assert "new shell" in r.observation
    r = fresh.run("pwd")
    assert r.output == "/work\n"


def test_fork_bomb_is_contained(fresh):
    marker = uuid.uuid4().hex[:12]
    r = fresh.run(f"bomb_{marker}() {{ bomb_{marker} | bomb_{marker} & }}; bomb_{marker}")
    time.sleep(0.5)  # between actions the bomb is frozen: it uses no CPU and does not grow
    r = fresh.run("echo alive")
    assert "alive" in r.output
    # it runs only during actions, where the watchdog kills it within a few of them
    counts = []
    for _ in range(10):
        r = fresh.run("sleep 0.3; ls /proc | grep -c '^[0-9]'")
        counts += [int(line) for line in r.output.split() if line.isdigit()]
        if counts and counts[-1] < 16:
            break
    assert counts and counts[-1] < 16, counts


def test_background_processes_are_frozen_between_actions(fresh):
    # on docker the freeze after an action is asked by the relay inside the container
    # (armed with the action, sent when its status passes), not by a frame of the host's
    # the ticker renames a whole file into place: a `>` redirection empties the file first, and
    # a freeze (or a reader) that lands between the two would see no tick at all
    fresh.run("(i=0; while :; do i=$((i+1)); echo $i > /work/.t; mv /work/.t /work/ticks; "
              "sleep 0.01; done) & sleep 0.2")
    time.sleep(0.5)  # the freeze comes a few milliseconds after the action
    first = fresh.hashes(["work/ticks"])
    time.sleep(0.3)
    assert fresh.hashes(["work/ticks"]) == first  # no tick while frozen
    out = fresh.run("cat /work/ticks; sleep 0.2; cat /work/ticks").output
    ticks = out.split()
    assert len(ticks) == 2 and int(ticks[1]) > int(ticks[0]), out  # it runs again next action


def test_memory_hog_is_stopped(fresh):
    r = fresh.run("python3 -c 'x = bytearray(8 * 2**30)'")
    assert r.exit_code != 0 and "MemoryError" in r.output
    r = fresh.run("python3 -c 'import time; x = bytearray(400 * 2**20); x[::4096] = b\"x\" * "
                  "len(x[::4096]); time.sleep(2)' & python3 -c 'import time; y = bytearray("
                  "400 * 2**20); y[::4096] = b\"y\" * len(y[::4096]); time.sleep(2)'; wait")
    assert "was killed" in r.observation
    assert fresh.run("echo alive").output == "alive\n"


def test_disk_fill_is_bounded(fresh):
    r = fresh.run("head -c 200M /dev/zero > /work/big; echo rc=$?; df -k /work | tail -1")
    assert "No space left" in r.output or "File too large" in r.output
    fresh.reset()
    r = fresh.run("ls /work; df -k /work | tail -1 | awk '{print $3}'")
    assert "big" not in r.output
    assert int(r.output.split()[-1]) < 1024


def test_the_root_is_writable_and_bounded(fresh):
    """``/`` itself is the agent's (13 NL2Bash golds write there: ``tar -cf /backup.tar``),
    within the storage limit, and a reset takes it back; the image stays read-only."""
    r = fresh.run("echo hi > /new.txt && mkdir /newdir && echo made; "
                  "touch /usr/x 2>/dev/null || echo usr-ro; "
                  "head -c 200M /dev/zero > /big; echo rc=$?")
    assert r.output.startswith("made\nusr-ro\n"), r.output
    assert "No space left" in r.output and r.output.endswith("rc=1\n"), r.output
    changes = {c.path: c.code for c in fresh.diff()}
    assert {"new.txt", "big"} <= set(changes), changes  # an empty directory: as git
    fresh.reset()
    assert fresh.run("ls -d /new.txt /newdir /big 2>/dev/null | wc -l").output == "0\n"
    assert fresh.diff() == []


def test_output_flood_is_cut(fresh):
    started = time.monotonic()
    r = fresh.run("yes flood")
    assert time.monotonic() - started < 10
    assert r.output_truncated and len(r.output) <= 4096
    assert "output truncated" in r.observation
    assert fresh.run("echo alive").output == "alive\n"


def test_background_process_outlives_its_action_until_close(backend):
    marker = uuid.uuid4().hex[:12]
    sb = create_sandbox(backend)
    sb.start()
    sb.load(TREE)
    try:
        r = sb.run(f"{sleeper(marker)} & echo started")
        assert r.output == "started\n"
        # once the sleeper has exec'd (the sandbox freezes a few milliseconds after an
        # action: a process not yet started then waits for the next one)
        waited = sb.run(f"until read -rd '' a < /proc/$!/cmdline && [ \"$a\" = {marker} ]; "
                        "do sleep 0.01; done; echo next")
        assert waited.output == "next\n"
        assert len(started_pids_with(marker)) == 1
    finally:
        sb.close()
    assert host_pids_with(marker) == []


@pytest.mark.parametrize("action", ["exit 3", "kill -9 $$", "exec /bin/echo replaced",
                                    "set -e; false"])
def test_shell_death_is_survived(fresh, action):
    fresh.run("cd /work")
    r = fresh.run(action)
    assert r.shell_restarted and "new shell" in r.observation
    assert fresh.run("pwd").output == "/work\n"


@pytest.mark.parametrize("action", ["exec 62>&- 63<&-", "exec 1>&-", "exec 2>/dev/null",
                                    "kill -STOP $$"])
def test_tampering_with_descriptors_or_stopping_the_shell(fresh, action):
    fresh.run(action)
    r = fresh.run("echo still here")
    # each action starts with its output and error on the observation
    assert r.exit_code == 0 and "still here" in r.output


def test_binary_and_invalid_utf8_output(fresh):
    r = fresh.run("printf 'ok\\xff\\xfe\\x00end\\n'; head -c 3000 /usr/bin/bash | tail -c 100 >/dev/null")
    assert r.output == "ok\ufffd\ufffd\x00end\n"


def test_large_action(fresh):
    payload = "a" * (1 << 20)
    r = fresh.run(f"x='{payload}'; echo ${{#x}}")
    assert r.output == f"{1 << 20}\n"


def test_nul_in_action_is_refused(fresh):
    r = fresh.run("echo a\0b")
    assert r.exit_code is None and "NUL" in r.observation
    assert fresh.run("echo fine").output == "fine\n"


def test_close_leaves_nothing_behind(backend):
    marker = uuid.uuid4().hex[:12]
    before = set(os.listdir("/tmp"))
    sb = create_sandbox(backend)
    sb.start()
    sb.load(TREE)
    # the action returns once the sleeper's shell runs (the sandbox freezes a few
    # milliseconds after an action: a process not yet started then waits for the next)
    sb.run(f"nohup setsid bash -c ': > /tmp/{marker}.up; {sleeper(marker)}' "
           f">/dev/null 2>&1 & disown; echo x > /tmp/{marker}; "
           f"until [ -e /tmp/{marker}.up ]; do sleep 0.01; done")
    assert started_pids_with(marker)
    container = getattr(sb, "_container", None)
    sb.close()
    assert host_pids_with(marker) == []
    assert {n for n in set(os.listdir("/tmp")) - before if marker in n} == set()
    if container is not None:  # docker: the container is gone too
        from intercode.sandbox.docker.engine import DockerEngine

        assert DockerEngine().call("GET", f"/containers/{container}/json")[0] == 404


def test_dead_sandbox_raises_sandbox_error(backend):
    from intercode.errors import SandboxError

    sb = create_sandbox(backend)
    sb.start()
    sb.load(TREE)
    kill_sandbox(sb)  # simulate an infrastructure fault
    with pytest.raises(SandboxError):
        sb.run("echo hi")
    sb.close()


def test_a_prepared_root_file_system_replaces_the_hosts(backend, tmp_path):
    if "docker" in (backend, chosen_backend()):
        pytest.skip("the docker backend's root file system is its image")
    import shutil
    import tempfile

    from intercode.sandbox.layout import Layout

    # world-readable, as a real root file system is (the sandbox may run as nobody)
    rootfs = Path(tempfile.mkdtemp(prefix="intercode-rootfs-"))
    os.chmod(rootfs, 0o755)
    request_cleanup = rootfs
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "usr").symlink_to("/usr")
    for name in ("bin", "lib", "lib64", "sbin"):
        if Path("/", name).is_symlink():
            (rootfs / name).symlink_to(os.readlink(Path("/", name)))
    for name in ("passwd", "group", "hosts", "hostname"):
        (rootfs / "etc" / name).write_text("placeholder\n")
    (rootfs / "etc" / "marker").write_text("from the prepared rootfs\n")
    sb = create_sandbox(backend, layout=Layout(rootfs=rootfs))
    try:
        with sb:
            sb.load(TREE)
            r = sb.run("cat /etc/marker; ls /etc | wc -l; id -un")
            assert r.output == "from the prepared rootfs\n5\nagent\n"
    finally:
        shutil.rmtree(request_cleanup)
    with pytest.raises(Exception, match="no /usr"):
        create_sandbox(backend, layout=Layout(rootfs=tmp_path / "empty")).start()


# a program that speaks the shell protocol itself (what a plugin's interpreter does):
# header "<seq> <length>[ <kind>]\n", the action, a NUL after short actions; output on 1,
# then "<seq> <status> <cwd>\0" on 62
COUNTER = r"""
import os
state = {"n": 0, "os": os}
def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(63, n - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data
while True:
    head = b""
    while not head.endswith(b"\n"):
        head += read(1)
    seq, length = head.split()[:2]
    code = read(int(length)).decode()
    if int(length) <= 4096:
        read(1)
    status = 0
    try:
        exec(code, state)
    except Exception as exc:
        os.write(1, ("%s\n" % exc).encode())
        status = 1
    os.write(62, seq + b" %d /\0" % status)
"""


def test_a_program_speaking_the_protocol_is_a_shell():
    from intercode.sandbox.bwrap import BwrapSandbox
    from intercode.sandbox.limits import Limits

    box = BwrapSandbox(Limits(timeout=2, kill_grace=0.5),
                       shell=["/usr/bin/python3", "-c", COUNTER])
    box.start()
    try:
        box.load(FileTree.of([]))
        assert box.run("n += 1").exit_code == 0
        result = box.run("n += 1; os.write(1, b'n=%d' % n)")
        assert result.output == "n=2" and result.exit_code == 0  # state persists
        assert box.run("1/0").exit_code == 1
        timed = box.run("while True: pass")
        assert timed.timed_out and timed.shell_restarted
        assert box.run("os.write(1, b'%d' % n)").output == "0"  # a fresh interpreter
    finally:
        box.close()


@pytest.mark.parametrize("argv", [[], ["python3"], [""], "perl"])
def test_a_bad_shell_program_is_refused(argv):
    from intercode.sandbox.bwrap import BwrapSandbox

    with pytest.raises(ValueError):
        BwrapSandbox(shell=argv)
def test_the_registry_makes_every_shell_kind(backend):
    import json
    import sqlite3

    from intercode.sandbox.inbox import sqlrepl

    with create_sandbox(backend, Limits(timeout=5), shell="python") as py:
        py.load(FileTree.of([]))
        assert py.run("x = 20").exit_code == 0
        assert py.run("x + 22").output.strip() == "42"
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (v INTEGER)")
    db.execute("INSERT INTO t VALUES (7)")
    db.commit()
    images = sqlrepl.pack_images({"d": db.serialize()})
    with create_sandbox(backend, Limits(timeout=5), shell="sqlite", shell_data=images) as sql:
        sql.reset()
        request = {"db": "d", "sql": "SELECT v FROM t", "timeout": 5, "max_rows": 10,
                   "max_chars": 1000}
        reply = json.loads(sql.run(json.dumps(request), kind="query").reply)
        assert reply["r"] == [[7]]


def test_unknown_backends_and_shells_are_config_errors():
    from intercode.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown sandbox backend 'nope'; known: bwrap"):
        create_sandbox("nope")
    with pytest.raises(ConfigError, match="unknown sandbox shell 'zsh'"):
        create_sandbox("bwrap", shell="zsh")


def test_a_working_directory_with_a_newline_is_reported_whole(box):
    result = box.run("mkdir -p $'/tmp/a\\nb' && cd $'/tmp/a\\nb' && pwd")
    assert result.output == "/tmp/a\nb\n" and result.cwd == "/tmp/a\nb"
    assert box.run("cd /").cwd == "/"


def test_a_malformed_request_gets_a_one_line_error_and_the_sandbox_goes_on(backend):
    """The supervisor checks every request against its schema (inbox/schema.py) before
    it acts: a request that is not an object, of no known operation, with a field of the
    wrong type, an unknown field or a missing one is answered with one line."""
    from intercode.sandbox.inbox import proto

    sb = create_sandbox(backend)
    try:
        sb.start()
        sb.load(TREE)
        channel = sb._channel  # type: ignore[attr-defined]
        for msg in (["x"], "x", {"op": "nope"}, {"op": "hashes", "paths": 5},
                    {"op": "status", "ignore": "abc"}, {"op": "hashes"},
                    {"op": "tree_snap", "id": "1"}, {"op": "tree_snap", "id": True},
                    {"op": "capture", "extra": 1}, {"op": "run", "argv": ["true"], "cwd": 7},
                    {"op": "tree_import", "id": 1, "entries": [],
                     "restore": {"op": "tree_restore", "id": 1, "cwd": 3}}):
            channel._write(proto.encode(msg))
            reply, _ = channel.wait_reply(30.0, what="malformed")
            assert reply["ok"] is False and reply["error"].startswith("malformed request:")
            assert "\n" not in reply["error"]
        channel.send({"op": "freeze", "n": "x"})  # no reply, as for a well-formed one
        assert sb.run("echo still here").output == "still here\n"
        assert sb.diff() == []
    finally:
        sb.close()
