"""Attacks on the docker sandbox's direct line: the unix socket between the host and the
container's pid 1 (``sandbox/docker/link.py``, ``inbox/link.py``).

The socket must be out of the agent's reach (the bind of its directory is gone from the
root the agent sees, its descriptor in pid 1 only, close-on-exec), and the host must take
exactly one connection, the one that sends the token: a user of the host who finds the
path and connects first is refused, and nothing can
connect once the sandbox's pid 1 has.
"""

from __future__ import annotations

import os
import socket
import time

import pytest
from backends import need

from intercode.errors import SandboxError
from intercode.sandbox import create_sandbox
from intercode.sandbox.docker import link as docker_link
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.limits import Limits

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9),
                    Entry("work/a.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"alpha\n")])
O_CLOEXEC = 0o2000000


class Recorder:
    """The listeners made while it is installed (their paths outlive them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[docker_link.Listener] = []
        real = docker_link.Listener.__init__

        def init(listener: docker_link.Listener, required: bool) -> None:
            real(listener, required)
            self.made.append(listener)
            self.on_listen(listener)

        monkeypatch.setattr(docker_link.Listener, "__init__", init)

    def on_listen(self, listener: docker_link.Listener) -> None:
        """What happens right after a listener was made (nothing here)."""


@pytest.fixture(scope="module")
def linked():
    """A docker sandbox on the socket, and the path its host listened on."""
    need("docker")
    mp = pytest.MonkeyPatch()
    mp.setenv("INTERCODE_DOCKER_STREAM", "socket")
    rec = Recorder(mp)
    sb = create_sandbox("docker", limits=Limits(timeout=5))
    try:
        sb.start()
        sb.load(TREE)
        assert sb.linked and len(rec.made) == 1
        yield sb, rec.made[0]
    finally:
        sb.close()
        mp.undo()


def test_the_agent_cannot_see_the_socket_or_its_directory(linked):
    box, listener = linked
    r = box.run(f"ls -a {docker_link.TARGET} 2>&1 | head -1; "
                f"grep -c -e intercode-link -e {listener.name} /proc/self/mountinfo; "
                f"grep -c -e intercode-link -e {listener.dir} /proc/net/unix; "
                "find / -path /proc -prune -o -type s -print 2>/dev/null | wc -l; "
                f"ls -d {listener.dir} 2>&1 | head -1")
    lines = r.output.splitlines()
    assert "No such file" in lines[0], r.output
    assert lines[1:4] == ["0", "0", "0"], r.output
    assert "No such file" in lines[4], r.output


def test_no_process_the_agent_sees_holds_a_socket(linked):
    box, _ = linked
    box.run("(exec -a icsocktest sleep 300) & disown")
    r = box.run("for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null; done "
                "| grep -c 'socket:'; ls /proc/1/fd 2>&1 | head -1")
    lines = r.output.splitlines()
    assert lines[0] == "0", r.output
    assert "Permission denied" in lines[1], r.output  # pid 1's own are not readable


def _fds(pid: int) -> dict[int, str]:
    found = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
    return found


def test_the_socket_is_pid_1s_only_high_and_close_on_exec(linked):
    """From the host (root here): the container's processes, by their host pids."""
    box, _ = linked
    if os.geteuid() != 0:
        pytest.skip("reading the container's descriptors from the host needs root")
    from intercode.sandbox.docker.engine import DockerEngine

    box.run("(exec -a icsocktest2 sleep 300) & disown; cat /dev/null")
    engine = DockerEngine()
    info = engine.ok("GET", f"/containers/{box._container}/json")
    pid1 = int(info["State"]["Pid"])
    top = engine.ok("GET", f"/containers/{box._container}/top", query={"ps_args": "-o pid"})
    pids = [int(row[0]) for row in top["Processes"]]
    assert pid1 in pids and len(pids) >= 3, pids  # pid 1, the shell, the sleep
    sockets = {fd: link for fd, link in _fds(pid1).items() if link.startswith("socket:")}
    assert len(sockets) == 1, _fds(pid1)
    (fd,) = sockets
    assert fd >= 64
    with open(f"/proc/{pid1}/fdinfo/{fd}") as f:
        flags = int(next(line for line in f if line.startswith("flags:")).split()[1], 8)
    assert flags & O_CLOEXEC
    for pid in pids:
        if pid != pid1:
            held = [link for link in _fds(pid).values() if link.startswith("socket:")]
            assert held == [], (pid, held)


def test_nothing_can_connect_once_pid_1_has(linked):
    _, listener = linked
    assert not os.path.exists(listener.path) and not os.path.exists(listener.dir)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s, \
            pytest.raises((FileNotFoundError, ConnectionRefusedError)):
        s.connect(listener.path)


def _client(path: str, token: bytes | None) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if token is not None:
        s.sendall(token)
    return s


def _take(listener: docker_link.Listener, other: int, tries: int = 50) -> socket.socket | None:
    for _ in range(tries):
        conn = listener.take(listener.wait(other, 0.1))
        if conn is not None:
            return conn
    return None


def _closed(s: socket.socket) -> bool:
    s.settimeout(10)
    return s.recv(1) == b""


def test_the_listener_takes_only_the_token_and_then_nothing():
    listener = docker_link.Listener(required=True)
    other_r, other_w = os.pipe()
    try:
        wrong = _client(listener.path, os.urandom(docker_link.TOKEN_BYTES))
        short = _client(listener.path, listener.token[:-1])
        silent = _client(listener.path, None)
        assert _take(listener, other_r, tries=5) is None
        assert _closed(wrong)
        right = _client(listener.path, listener.token)
        conn = _take(listener, other_r)
        assert conn is not None
        conn.sendall(b"hello")
        assert right.recv(5) == b"hello"
        listener.close()
        assert _closed(silent)
        short.close()
        with pytest.raises((FileNotFoundError, ConnectionRefusedError)):
            _client(listener.path, listener.token)
        assert not os.path.exists(listener.dir)
        conn.close()
        right.close()
    finally:
        listener.close()
        os.close(other_r)
        os.close(other_w)


def test_a_flood_of_silent_connections_does_not_push_pid_1_out():
    """More silent connections than the listener keeps, before and after pid 1's: its
    token, sent with its connect, is read as it is accepted. (The clients connect from a
    thread: a full backlog blocks a connect until the host accepts.)"""
    import threading

    listener = docker_link.Listener(required=True)
    other_r, other_w = os.pipe()
    clients: list[socket.socket] = []
    right: list[socket.socket] = []

    def flood() -> None:
        clients.extend(_client(listener.path, None) for _ in range(docker_link.PENDING))
        right.append(_client(listener.path, listener.token))
        try:
            for _ in range(3 * docker_link.PENDING):
                clients.append(_client(listener.path, None))
        except OSError:  # the listener closed once it took pid 1's
            pass

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        conn = _take(listener, other_r, tries=300)
        assert conn is not None
        listener.close()
        thread.join(30)
        conn.sendall(b"x")
        assert right[0].recv(1) == b"x"
        conn.close()
        right[0].close()
    finally:
        listener.close()
        thread.join(30)
        for c in clients:
            c.close()
        os.close(other_r)
        os.close(other_w)


def test_the_listener_is_private_to_the_host_user():
    listener = docker_link.Listener(required=False)
    try:
        dir_mode = os.stat(listener.dir).st_mode & 0o777
        sock_mode = os.stat(listener.path).st_mode & 0o777
        if os.geteuid() == 0:
            assert (dir_mode, sock_mode) == (0o700, 0o600)
        else:  # the container's root (no CAP_DAC_OVERRIDE) passes; only the token admits
            assert dir_mode == 0o711 and sock_mode == 0o666
        assert not os.access(listener.dir, os.R_OK) or os.stat(listener.dir).st_uid \
            == os.geteuid()
        assert listener.spec()["token"] == listener.token.hex()
    finally:
        listener.close()


@pytest.mark.parametrize("mode", ["socket", "auto"])
def test_connections_before_pid_1s_are_refused_and_the_sandbox_links(mode, monkeypatch):
    """A local user who found the path and connects first, with a wrong token or none,
    is refused; the sandbox's own connection is taken."""
    need("docker")
    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", mode)
    rogues: list[socket.socket] = []

    class Rogue(Recorder):
        def on_listen(self, listener: docker_link.Listener) -> None:
            rogues.append(_client(listener.path, b"0" * docker_link.TOKEN_BYTES))
            rogues.append(_client(listener.path, None))

    Rogue(monkeypatch)
    try:
        with create_sandbox("docker") as sb:
            assert sb.linked
            sb.load(TREE)
            assert sb.run("cat /work/a.txt").output == "alpha\n"
            assert len(rogues) == 2 and all(_closed(r) for r in rogues)
    finally:
        for r in rogues:
            r.close()


@pytest.mark.parametrize("mode", ["socket", "auto"])
def test_pid_1_with_a_wrong_token_is_refused(mode, monkeypatch):
    """The host refuses a connection whose token is wrong even when it comes from the
    container: the start fails with a reason (an infrastructure error), no sandbox runs
    on it and no container is left."""
    need("docker")
    from intercode.sandbox.docker.engine import DockerEngine

    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", mode)
    real = docker_link.Listener.spec

    def wrong(listener: docker_link.Listener) -> dict[str, object]:
        return {**real(listener), "token": os.urandom(docker_link.TOKEN_BYTES).hex()}

    monkeypatch.setattr(docker_link.Listener, "spec", wrong)
    sb = create_sandbox("docker")
    made: list[str] = []
    real_attach = DockerEngine.attach

    def attach(engine, container, *args, **kwargs):
        made.append(container)
        return real_attach(engine, container, *args, **kwargs)

    monkeypatch.setattr(DockerEngine, "attach", attach)
    with pytest.raises(SandboxError):
        sb.start()
    assert not sb.alive and made
    deadline = time.monotonic() + 60  # not a speed test
    while DockerEngine().call("GET", f"/containers/{made[0]}/json")[0] != 404:
        assert time.monotonic() < deadline, "the container outlived its failed start"
        time.sleep(0.2)


def test_closing_the_attach_stream_ends_a_linked_sandbox(monkeypatch):
    """The attach stream stays the sandbox's lifeline on the socket too: its stdin's end
    (the host gone) ends pid 1, and the engine removes the container."""
    need("docker")
    from intercode.sandbox.docker.engine import DockerEngine

    monkeypatch.setenv("INTERCODE_DOCKER_STREAM", "socket")
    sb = create_sandbox("docker")
    try:
        sb.start()
        assert sb.linked
        container = sb._container
        sb._stream.attach.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 60  # not a speed test
        while DockerEngine().call("GET", f"/containers/{container}/json")[0] != 404:
            assert time.monotonic() < deadline, "the container outlived its stdin"
            time.sleep(0.2)
        with pytest.raises(SandboxError):
            sb.load(TREE)
            sb.run("echo hi")
    finally:
        sb.close()


def test_the_containers_root_reaches_a_non_root_hosts_socket():
    """A host user other than root (the ``docker`` group): the container's root, which has
    no ``CAP_DAC_OVERRIDE``, must pass the directory (711) and connect (666), with the
    capabilities pid 1 starts with; the host takes it by the token. (Run as root, the
    test makes the listener in a child that became ``nobody``.)"""
    need("docker")
    if os.geteuid() != 0:
        pytest.skip("becoming another user needs root (run as non-root, the suite covers it)")
    import json

    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.docker.sandbox import SETUP_CAPS, default_image

    report_r, report_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe and exits)
        code = 1
        try:
            os.close(report_r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            listener = docker_link.Listener(required=True)
            os.write(report_w, json.dumps({**listener.spec(), "dir": listener.dir}).encode()
                     + b"\n")
            idle_r, _idle_w = os.pipe()
            conn = _take(listener, idle_r, tries=600)  # at most a minute: not a speed test
            code = 0 if conn is not None else 2
            listener.close()
        finally:
            os._exit(code)
    os.close(report_w)
    with os.fdopen(report_r) as report:
        spec = json.loads(report.readline())
    engine = DockerEngine()
    script = (f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({spec['path']!r}); "
              f"s.sendall(bytes.fromhex({spec['token']!r}))")
    made = engine.ok("POST", "/containers/create", {
        "Image": default_image(), "Cmd": ["python3", "-c", script], "User": "0:0",
        "HostConfig": {"CapDrop": ["ALL"], "CapAdd": SETUP_CAPS,
                       "SecurityOpt": ["no-new-privileges"], "NetworkMode": "none",
                       "Mounts": [{"Type": "bind", "Source": spec["dir"],
                                   "Target": docker_link.TARGET, "ReadOnly": True}]}})
    try:
        engine.ok("POST", f"/containers/{made['Id']}/start")
        waited = engine.ok("POST", f"/containers/{made['Id']}/wait", timeout=120)
        assert waited["StatusCode"] == 0
    finally:
        engine.call("DELETE", f"/containers/{made['Id']}", query={"force": "1"})
        _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # the host took it
