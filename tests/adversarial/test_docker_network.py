"""The docker backend's ``network`` modes: none by default, an isolated bridge, the host's.

Every address these tests contact is on this machine: the test's TCP listeners run on
the host (on the isolated network's gateway address, or on 127.0.0.1), and the
sandboxes' own listeners inside their containers. ``network=True`` must reach a
listener on the gateway (the CTF tasks need a network) but neither the host's loopback
nor another sandbox on the same network; ``network=False`` reaches nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backends import need
from host_listener import HostListener

from intercode.errors import SandboxError
from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits

GREETING = b"HOST-SERVICE-GREETING\n"
# (a sandbox's listener is frozen between its own actions, but the kernel completes the
# connection: CONNECTED says the network let it through, whatever is read after)
PROBE = (
    "python3 -c \"import socket,sys\n"
    "try:\n"
    "    s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)\n"
    "except OSError as e: print('FAILED', type(e).__name__); sys.exit()\n"
    "s.settimeout(5)\n"
    "try: print('CONNECTED', s.recv(100))\n"
    "except OSError as e: print('CONNECTED', 'no greeting', type(e).__name__)\n"
    "\" {host} {port}"
)
# a listener inside a sandbox, on all its addresses, greeting each client
SERVE = ("python3 -c \"import socket\n"
         "s=socket.create_server(('0.0.0.0',8765))\n"
         "while True:\n"
         "    c,_=s.accept(); c.sendall(b'SANDBOX-A\\n'); c.close()\n"
         "\" >/dev/null 2>&1 & sleep 1; echo started")


def _box(network: bool | str):
    box = create_sandbox("docker", limits=Limits(timeout=30), layout=Layout(network=network))
    box.start()
    box.load(FileTree.of([]))
    return box


def _probe(box, host: str, port: int) -> str:
    return box.run(PROBE.format(host=host, port=port), timeout=30).output.strip()


@pytest.fixture(scope="module")
def gateway() -> str:
    need("docker")
    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.docker.network import ISOLATED, isolated_network

    engine = DockerEngine()
    isolated_network(engine)
    info = engine.ok("GET", f"/networks/{ISOLATED}")
    return str(info["IPAM"]["Config"][0]["Gateway"])


@pytest.fixture(scope="module")
def isolated(gateway) -> Iterator[object]:
    box = _box(True)
    yield box
    box.close()


@pytest.fixture()
def on_gateway(gateway) -> Iterator[HostListener]:
    srv = HostListener(GREETING, gateway)
    yield srv
    srv.close()


@pytest.fixture()
def on_loopback() -> Iterator[HostListener]:
    srv = HostListener(GREETING)
    yield srv
    srv.close()


def test_the_isolated_network_reaches_a_server_the_test_starts(isolated, gateway, on_gateway):
    out = _probe(isolated, gateway, on_gateway.port)
    assert out.startswith("CONNECTED") and "GREETING" in out, out
    assert on_gateway.accepted == 1


def test_no_network_by_default_reaches_nothing(gateway, on_gateway):
    box = _box(False)
    try:
        lines = box.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '").output
        out = _probe(box, gateway, on_gateway.port)
    finally:
        box.close()
    assert lines.split() == ["lo"]
    assert out.startswith("FAILED"), out
    assert on_gateway.accepted == 0


def test_host_loopback_is_out_of_reach_of_the_isolated_network(isolated, gateway, on_loopback):
    for host in (gateway, "127.0.0.1"):
        out = _probe(isolated, host, on_loopback.port)
        assert out.startswith("FAILED"), (host, out)
    assert on_loopback.accepted == 0


def test_sandboxes_on_the_isolated_network_cannot_reach_each_other(isolated):
    other = _box(True)
    try:
        assert other.run(SERVE).output.strip() == "started"
        address = other.run("hostname -i").output.split()[0]
        own = _probe(other, "127.0.0.1", 8765)  # the listener works: the test can fail
        out = _probe(isolated, address, 8765)
    finally:
        other.close()
    assert own.startswith("CONNECTED") and "SANDBOX-A" in own, own
    assert out.startswith("FAILED"), out


def test_host_mode_is_an_explicit_opt_in_that_reaches_host_loopback(gateway, on_loopback):
    box = _box("host")
    try:
        out = _probe(box, "127.0.0.1", on_loopback.port)
    finally:
        box.close()
    assert out.startswith("CONNECTED") and "GREETING" in out, out
    assert on_loopback.accepted == 1


def test_a_foreign_network_of_that_name_is_refused():
    from intercode.sandbox.docker.network import ICC, _check

    with pytest.raises(SandboxError, match="not an intercode one"):
        _check({"Driver": "bridge", "Options": {}})
    with pytest.raises(SandboxError, match="not an intercode one"):
        _check({"Driver": "bridge", "Options": {ICC: "true"}})
    _check({"Driver": "bridge", "Options": {ICC: "false"}})
