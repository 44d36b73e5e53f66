"""The sandbox's network: ``--network`` must not reach the host's loopback services.

With ``--network`` the CTF sandbox shared the host's network namespace, so an
agent could read a host loopback service (the MariaDB greeting on 127.0.0.1:3306).
``network=True`` is now an isolated slirp4netns network with host loopback disabled;
``network="host"`` keeps the old sharing as an explicit opt-in.

Every address these tests contact is on this machine: the host listener is on
127.0.0.1; from the isolated sandbox 10.0.2.2 is slirp4netns's gateway (it would be
the host's loopback without ``--disable-host-loopback``) and 127.0.0.1 the sandbox's own.
Each isolated test first checks that the sandbox is on slirp's network (tap0 with the
default route), so that on a build that shares the host's network the test fails before
it sends anything to 10.0.2.2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_listener import HostListener

import intercode
from intercode.envs.ctf import CtfEnv
from intercode.errors import ConfigError, SandboxUnavailableError
from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout

GREETING = b"HOST-LOOPBACK-SECRET 5.5.5-10.11-MariaDB\n"
SRC = Path(intercode.__file__).resolve().parents[1]  # the intercode under test

# Runs inside the sandbox: connect, print what was read or why it failed.
PROBE = (
    "python3 -c \"import socket,sys\n"
    "try:\n"
    "    s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)\n"
    "    s.settimeout(5); print('CONNECTED', s.recv(100))\n"
    "except OSError as e: print('FAILED', type(e).__name__)\n"
    "\" {host} {port}"
)
# Runs inside the sandbox: the interfaces' IPv4 addresses and the default route's device.
ROUTES = (
    "python3 -c \"import fcntl,socket,struct\n"
    "s=socket.socket()\n"
    "for n in sorted(x for _,x in socket.if_nameindex()):\n"
    "    try: a=socket.inet_ntoa(fcntl.ioctl(s.fileno(),0x8915,struct.pack('256s',n.encode()))[20:24])\n"
    "    except OSError: a='-'\n"
    "    print('addr',n,a)\n"
    "for l in open('/proc/net/route').read().splitlines()[1:]:\n"
    "    f=l.split()\n"
    "    print('route',f[0],f[1],socket.inet_ntoa(struct.pack('<I',int(f[2],16))))\n"
    "\""
)


@pytest.fixture()
def listener() -> Iterator[HostListener]:
    srv = HostListener(GREETING)
    yield srv
    srv.close()


def _box(network: bool | str) -> BwrapSandbox:
    box = BwrapSandbox(layout=Layout(network=network))
    box.start()
    box.load(FileTree.of([]))
    return box


@pytest.fixture(scope="module")
def isolated() -> Iterator[BwrapSandbox]:
    box = _box(True)
    yield box
    box.close()


def _probe(box: BwrapSandbox, host: str, port: int) -> str:
    return box.run(PROBE.format(host=host, port=port), timeout=30).output.strip()


def _assert_on_slirp_network(box: BwrapSandbox) -> None:
    lines = box.run(ROUTES).output.split("\n")
    assert "addr tap0 10.0.2.100" in lines, lines
    assert "route tap0 00000000 10.0.2.2" in lines, lines  # the default route
    assert not [ln for ln in lines if ln.startswith("addr ") and ln.split()[1] not in
                ("lo", "tap0")], lines  # none of the host's interfaces


def test_isolated_network_has_tap0_a_default_route_and_slirp_dns(isolated):
    _assert_on_slirp_network(isolated)
    assert isolated.run("cat /etc/resolv.conf").output.split() == ["nameserver", "10.0.2.3"]


def test_host_loopback_is_unreachable_through_the_gateway(isolated, listener):
    _assert_on_slirp_network(isolated)
    out = _probe(isolated, "10.0.2.2", listener.port)
    assert out.startswith("FAILED"), out
    assert "SECRET" not in out and listener.accepted == 0


def test_the_sandbox_loopback_is_its_own(isolated, listener):
    out = _probe(isolated, "127.0.0.1", listener.port)
    assert out.startswith("FAILED"), out
    assert "SECRET" not in out and listener.accepted == 0


def test_host_mode_is_an_explicit_opt_in_that_reaches_host_loopback(listener):
    """The same probe succeeds with ``network="host"``: the tests above can fail."""
    box = _box("host")
    try:
        out = _probe(box, "127.0.0.1", listener.port)
    finally:
        box.close()
    assert out.startswith("CONNECTED") and "SECRET" in out, out
    assert listener.accepted == 1


def test_network_true_means_isolated_in_ctf_and_the_cli():
    from intercode.cli import build_parser

    env = CtfEnv(network=True)
    try:
        assert env.network_mode == "isolated"
        assert env.layout.etc_files()["resolv.conf"] == b"nameserver 10.0.2.3\n"
    finally:
        env.close()
    host = CtfEnv(network="host")
    assert host.network_mode == "host" and host.unavailable(host.dataset[9]) is None
    assert "resolv.conf" not in host.layout.etc_files()  # the host's own
    with pytest.raises(ConfigError, match="network must be"):
        CtfEnv(network="bogus")
    parser = build_parser()
    assert parser.parse_args(["eval", "ctf", "--network"]).network is True
    assert parser.parse_args(["eval", "--network", "ctf"]).env == "ctf"  # any order
    assert parser.parse_args(["eval", "ctf", "--host-network"]).host_network is True
    assert parser.parse_args(["eval", "ctf"]).network is False


def _slirp_children() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == os.getpid() and comm in ("slirp4netns", "nsenter"):
            found.add(int(entry))
    return found


def test_slirp4netns_dies_with_the_sandbox():
    before = _slirp_children()
    box = _box(True)
    running = _slirp_children() - before
    assert len(running) == 1
    box.close()
    assert not (_slirp_children() & running)


def test_missing_slirp4netns_is_one_clear_error_never_the_host_network(monkeypatch):
    monkeypatch.setenv("INTERCODE_SLIRP4NETNS", "/nonexistent/slirp4netns")
    box = BwrapSandbox(layout=Layout(network=True))
    with pytest.raises(SandboxUnavailableError) as err:
        box.start()
    assert "slirp4netns" in str(err.value) and "\n" not in str(err.value)
    assert not box.alive
    with pytest.raises(SandboxUnavailableError, match="apt-get install slirp4netns"):
        CtfEnv(network=True)
    from intercode.cli import main

    assert main(["eval", "ctf", "--network", "--agent", "gold", "--tasks", "9",
                 "--output", "/nonexistent/never-created"]) == 2


NONROOT_SCRIPT = """
import socket, sys
from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
with BwrapSandbox(layout=Layout(network=True)) as box:
    box.load(FileTree.of([]))
    routes = box.run(sys.argv[1]).output
    print(routes)
    if "route tap0 00000000 10.0.2.2" in routes.splitlines():  # else 10.0.2.2 is not slirp's
        print(box.run(sys.argv[2]).output)
"""


def _nobody_python(pythonpath: str) -> str | None:
    """An interpreter user nobody can run that imports this intercode."""
    for exe in (sys.executable, "/usr/bin/python3"):
        ok = subprocess.run(["runuser", "-u", "nobody", "--", "env", f"PYTHONPATH={pythonpath}",
                             exe, "-c", "import intercode.sandbox.bwrap"],
                            capture_output=True, cwd="/", timeout=60)
        if ok.returncode == 0:
            return exe
    return None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser") or not shutil.which("unshare"),
                    reason="needs root to run the sandbox as an unprivileged host user")
def test_isolated_network_works_for_a_non_root_host_user(listener, tmp_path):
    """As user nobody (slirp4netns then runs inside the sandbox's user namespace).

    /dev/net/tun may be root-only on this machine (Debian makes it 0666): a private
    mount namespace gives nobody a 0666 node without changing the host's.
    """
    pythonpath = ":".join([str(SRC), *(p for p in sys.path if p.endswith("site-packages"))])
    python = _nobody_python(pythonpath)
    if python is None:
        pytest.skip("user nobody cannot run a Python that imports intercode")
    node = tmp_path / "tun"
    inner = (f"mknod -m 666 {node} c 10 200 && mount --bind {node} /dev/net/tun && "
             f"cd / && runuser -u nobody -- env PYTHONPATH={pythonpath} "
             f"{python} -c \"$0\" \"$1\" \"$2\"")
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner,
         NONROOT_SCRIPT, ROUTES, PROBE.format(host="10.0.2.2", port=listener.port)],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split("\n")
    assert "addr tap0 10.0.2.100" in lines and "route tap0 00000000 10.0.2.2" in lines, lines
    assert "FAILED" in out.stdout and "SECRET" not in out.stdout
    assert listener.accepted == 0


ORPHAN_SCRIPT = """
import os, sys, time
from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
box = BwrapSandbox(layout=Layout(network=True))
box.start()
print(box._net._proc.pid, flush=True)
time.sleep(600)
"""


def test_slirp4netns_dies_when_the_host_process_is_killed():
    """kill -9 of the process that owns the sandbox leaves no slirp4netns behind."""
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        assert proc.stdout is not None
        slirp = int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()
    for _ in range(600):  # liveness wait (up to a minute), not a timing assertion
        if not Path(f"/proc/{slirp}").exists() or "Z" in _state(slirp):
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{slirp}").exists() or "Z" in _state(slirp)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
