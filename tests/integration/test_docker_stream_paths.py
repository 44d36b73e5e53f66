"""The two ways the host talks to a docker sandbox's pid 1 (``docker_link``): the unix
socket (the default on Linux, which the contract suite runs on) and the engine's attach
stream (the fallback: Docker Desktop), each forced with ``INTERCODE_DOCKER_STREAM``,
through the behaviours that use the stream: start, actions, reset, interrupt, the
freeze between actions, snapshots, large frames both ways and the host's death."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from backends import need

from intercode.errors import ConfigError
from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.limits import Limits

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9),
                    Entry("work/a.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"alpha\n")])
MODES = ["attach", "socket"]


def _make(mode: str, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> object:
    need("docker")
    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", mode)
    sb = create_sandbox("docker", **kwargs)
    sb.start()
    assert sb.linked == (mode == "socket")  # type: ignore[attr-defined]
    sb.load(TREE)
    return sb


@pytest.fixture(params=MODES)
def box(request, monkeypatch):
    sb = _make(request.param, monkeypatch,
               limits=Limits(timeout=2, kill_grace=0.5, output=4096, output_hard=1 << 20))
    yield sb
    sb.close()


def test_the_default_takes_the_socket_on_linux(monkeypatch):
    need("docker")
    monkeypatch.delenv("INTERCODE_DOCKER_STREAM", raising=False)
    with create_sandbox("docker") as sb:
        assert sb.linked == sys.platform.startswith("linux")
        sb.load(TREE)
        assert sb.run("cat /work/a.txt").output == "alpha\n"


def test_a_bad_mode_is_a_config_error(monkeypatch):
    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", "pigeon")
    with pytest.raises(ConfigError, match="INTERCODE_DOCKER_STREAM"):
        create_sandbox("docker")


def test_actions_and_state(box):
    box.run("cd /work; X=41")
    r = box.run("echo $((X+1)); pwd; echo err >&2; false")
    assert r.output == "42\n/work\nerr\n" and r.exit_code == 1


def test_reset_restores_tree_and_shell(box):
    box.run("rm /work/a.txt; echo new > /work/b.txt; cd /tmp; Y=1")
    assert {c.path for c in box.diff()} == {"work/a.txt", "work/b.txt"}
    box.reset()
    assert box.diff() == []
    assert box.run("cat /work/a.txt; pwd; echo ${Y:-unset}").output == "alpha\n/\nunset\n"


def test_timeout_interrupts_and_the_shell_goes_on(box):
    box.run("KEEP=yes")
    r = box.run("sleep 30")
    assert r.timed_out and not r.shell_restarted
    assert box.run("echo $KEEP").output == "yes\n"


@pytest.mark.parametrize("mode", MODES)
def test_the_python_interpreter_is_interrupted(mode, monkeypatch):
    sb = _make(mode, monkeypatch, limits=Limits(timeout=2, kill_grace=0.5), shell="python")
    try:
        sb.run("keep = 'me'")
        r = sb.run("while True: pass")
        assert r.timed_out and "KeyboardInterrupt" in r.output
        assert sb.run("keep").output == "'me'\n"
    finally:
        sb.close()


def test_background_processes_are_frozen_between_actions(box):
    # the counter is written whole, by a rename: `echo > file` truncates first, and a
    # read (or a freeze) between the truncation and the write saw an empty file
    box.run("(i=0; while :; do i=$((i+1)); echo $i > /work/ticks.new; "
            "mv -f /work/ticks.new /work/ticks; sleep 0.01; done) & sleep 0.2")
    time.sleep(0.5)  # the freeze comes a few milliseconds after the action
    first = box.hashes(["work/ticks"])
    time.sleep(0.3)
    assert box.hashes(["work/ticks"]) == first
    ticks = box.run("cat /work/ticks; sleep 0.2; cat /work/ticks").output.split()
    assert int(ticks[1]) > int(ticks[0])


def test_snapshot_and_restore(box):
    box.run("cd /work; echo one > f")
    box.tree_snapshot(1)
    box.run("echo two > f; rm a.txt")
    box.tree_restore(1, "/work")
    assert box.run("pwd; cat f a.txt").output == "/work\none\nalpha\n"
    box.tree_drop(1)


def test_large_frames_both_ways(box):
    big = "x" * (3 << 20)
    r = box.run(f": {big}; echo ok")
    assert r.output == "ok\n"
    r = box.run("head -c 1000000 /dev/zero | tr '\\0' y")  # under the hard limit
    assert r.output_truncated and r.output_bytes == 1_000_000 and r.output == "y" * 4096
    assert box.run("echo after").output == "after\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_killed_host_process_leaves_no_container(mode):
    need("docker")
    from intercode.sandbox.docker.engine import DockerEngine

    script = textwrap.dedent("""
        import sys, time
        from intercode.sandbox import create_sandbox
        box = create_sandbox("docker")
        box.start()
        print(box._container, box.linked, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "INTERCODE_DOCKER_STREAM": mode})
    assert proc.stdout is not None
    container, linked = proc.stdout.readline().split()
    assert linked == str(mode == "socket")
    engine = DockerEngine()
    assert engine.call("GET", f"/containers/{container}/json")[0] == 200
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60  # the engine notices the closed stream; not a speed test
    while engine.call("GET", f"/containers/{container}/json")[0] != 404:
        assert time.monotonic() < deadline, "the container outlived its killed process"
        time.sleep(0.2)


@pytest.mark.parametrize("mode", ["auto", "socket"])
def test_a_socket_pid_1_cannot_reach_leaves_it_on_the_attach_stream(mode, monkeypatch):
    """As on Docker Desktop, whose file sharing does not carry unix sockets: in ``auto``
    pid 1 stays on the attach stream and the host follows; ``socket`` fails with the
    reason (an infrastructure error, no container left)."""
    need("docker")
    from intercode.errors import SandboxError
    from intercode.sandbox.docker import link as docker_link

    real = docker_link.Listener.spec
    monkeypatch.setattr(docker_link.Listener, "spec", lambda listener: {
        **real(listener), "path": f"{docker_link.TARGET}/no-such-socket"})
    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", mode)
    sb = create_sandbox("docker")
    try:
        if mode == "socket":
            with pytest.raises(SandboxError, match="cannot connect to the host's socket"):
                sb.start()
            assert not sb.alive
            return
        sb.start()
        assert not sb.linked
        sb.load(TREE)
        assert sb.run("cat /work/a.txt").output == "alpha\n"
        sb.reset()
        assert sb.run("echo again").output == "again\n"
    finally:
        sb.close()


def test_a_directory_the_engine_cannot_bind_leaves_auto_on_the_attach_stream(monkeypatch):
    """A host process in a container of its own: the engine does not see its paths."""
    need("docker")
    from intercode.sandbox.docker import link as docker_link

    real = docker_link.Listener.mount
    monkeypatch.setattr(docker_link.Listener, "mount", lambda listener: {
        **real(listener), "Source": f"/nonexistent-{os.getpid()}/intercode-link"})
    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", "auto")
    with create_sandbox("docker") as sb:
        assert not sb.linked
        sb.load(TREE)
        assert sb.run("cat /work/a.txt").output == "alpha\n"
