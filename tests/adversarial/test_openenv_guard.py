"""Web pages cannot use the project's servers: a foreign ``Host`` (DNS rebinding) or
``Origin`` (a page in the user's browser) is refused on every route, HTTP and WebSocket.

A WebSocket is not bound by the same-origin rule: any page could open
``ws://127.0.0.1:PORT/ws``, reset, run actions, read tasks, and hold every
``--max-sessions`` slot. With DNS rebinding the page's own name points at 127.0.0.1 and
the HTTP routes answer it too. The server here runs as ``intercode serve openenv`` does,
in a subprocess on 127.0.0.1, and is spoken to over real connections; programs (the
project's client, OpenEnv's own) send no ``Origin`` and keep working.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from openenv_process import served

from intercode.hosts import HostPolicy

START_DEADLINE = 90.0
FOREIGN_HOSTS = ["rebind.attacker.example:{port}", "rebind.attacker.example",
                 "127.0.0.1.attacker.example:{port}", "localhost:{port}.attacker.example",
                 "localhost.:{port}", "",
                 "[::1]x:{port}", "127.0.0.1:{port}@attacker.example"]
FOREIGN_ORIGINS = ["http://attacker.example", "https://attacker.example:{port}", "null",
                   "http://localhost:{other}", "http://127.0.0.1", "file://",
                   "http://127.0.0.1:{port}.attacker.example", "http://127.0.0.1:{port}@x",
                   "ftp://127.0.0.1:{port}", "chrome-extension://abcdef"]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """The port of an ``intercode serve openenv`` (bash, 2 sessions at most)."""
    with served(["--env", "bash", "--dataset", "bash-demo", "--max-sessions", "2",
                 "--warm", "0"]) as url:
        yield int(url.rsplit(":", 1)[1])


def routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the served app (``WS`` for a WebSocket), and a
    path it does not serve: a route openenv-core adds is tested with the others."""
    from intercode.integrations.serve.openenv_server import build_app
    from intercode.integrations.serve.sessions import ServeConfig, SessionPool

    app = build_app(SessionPool(ServeConfig(env="bash", dataset="bash-demo"))).app
    found: list[tuple[str, str]] = []
    for route in app.routes:  # type: ignore[attr-defined]
        methods = getattr(route, "methods", None)
        if methods is None:
            found.append(("WS", route.path))
        else:
            found.extend((m, route.path) for m in sorted(methods) if m != "HEAD")
    assert ("WS", "/ws") in found and ("POST", "/reset") in found
    return [*found, ("GET", "/no-such-path"), ("WS", "/no-such-path")]


ROUTES = routes()


def request(port: int, method: str, path: str, headers: list[str],
            body: bytes = b"") -> tuple[int, bytes]:
    """(status, body) of a hand-made request; ``WS``: a WebSocket handshake (101 is an
    accepted one). ``headers`` are given whole (``Host`` too, or none)."""
    if method == "WS":
        key = base64.b64encode(os.urandom(16)).decode()
        head = ["GET", *headers, "Upgrade: websocket", "Connection: Upgrade",
                f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    else:
        head = [method, *headers, "Connection: close", f"Content-Length: {len(body)}"]
        if body:
            head.append("Content-Type: application/json")
    lines = [f"{head[0]} {path} HTTP/1.1", *head[1:]]
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        top, _, rest = data.partition(b"\r\n\r\n")
        status = int(top.split(b" ", 2)[1]) if top.startswith(b"HTTP/1.1 ") else 0
        if status == 101:
            return status, b""
        length = next((int(line.split(b":", 1)[1]) for line in top.split(b"\r\n")[1:]
                       if line.lower().startswith(b"content-length:")), None)
        while length is None or len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, rest


def _form(text: str, port: int) -> str:
    return text.format(port=port, other=port + 1 if port < 65535 else port - 1)


def _body(method: str, path: str) -> bytes:
    if method == "POST" and path == "/step":
        return b'{"action": {"code": "echo hi"}}'
    return b"{}" if method == "POST" else b""


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_foreign_host_is_refused_on_every_route(port, method, path):
    """DNS rebinding: the page's name resolves to 127.0.0.1, its requests carry that
    name as Host (before: POST /reset with such a Host got 200, /ws accepted it)."""
    for host in FOREIGN_HOSTS:
        header = [f"Host: {_form(host, port)}"] if host else []  # no Host at all
        status, body = request(port, method, path, header, _body(method, path))
        assert status == 421, (host, status, body[:300])
        if method != "WS":
            assert json.loads(body)["code"] == "bad_host"
    two = [f"Host: 127.0.0.1:{port}", "Host: rebind.attacker.example"]
    assert request(port, method, path, two, _body(method, path))[0] in (400, 421)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_foreign_origin_is_refused_on_every_route(port, method, path):
    """A page elsewhere (or a sandboxed frame, ``null``) sends its Origin: refused, the
    WebSocket before it is accepted (before: /ws accepted any Origin)."""
    for origin in FOREIGN_ORIGINS:
        headers = [f"Host: 127.0.0.1:{port}", f"Origin: {_form(origin, port)}"]
        status, body = request(port, method, path, headers, _body(method, path))
        assert status == 403, (origin, status, body[:300])
        if method != "WS":
            assert json.loads(body)["code"] == "bad_origin"
    two = [f"Host: 127.0.0.1:{port}", f"Origin: http://127.0.0.1:{port}",
           "Origin: http://attacker.example"]
    # a second Origin: refused by the guard, or by uvicorn's handshake parser (400)
    assert request(port, method, path, two, _body(method, path))[0] in (400, 403)


def test_foreign_pages_cannot_hold_the_session_slots(port):
    """Handshakes from a page (held open) take none of the ``--max-sessions`` (2) slots:
    a program still gets a session and runs an episode."""
    from intercode.integrations.serve.openenv import IntercodeEnvClient

    held = []
    try:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            held.append(sock)
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: "
                          "http://attacker.example\r\nUpgrade: websocket\r\nConnection: "
                          f"Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: "
                          "13\r\n\r\n").encode())
            assert sock.recv(65536).startswith(b"HTTP/1.1 403 ")
        with IntercodeEnvClient(base_url=f"http://127.0.0.1:{port}",
                          message_timeout_s=60).sync() as env:
            result = env.reset(task=0)
            assert result.observation.query
            assert env.step("echo hi").observation.output.strip() == "hi"
    finally:
        for sock in held:
            sock.close()


def test_programs_and_the_servers_own_pages_are_served(port):
    """The loopback names with the server's port (or none), a page of the server itself
    (its /docs), the project's client and OpenEnv's own client."""
    from websockets.sync.client import connect

    # a loopback name on another port: a tunnel or a port mapping (ssh -L, docker -p)
    for host in ("127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}",
                 "localhost:{other}", "127.0.0.1:{other}",
                 "127.0.0.1", "localhost"):
        assert request(port, "GET", "/health", [f"Host: {_form(host, port)}"])[0] == 200
    for origin in ("http://127.0.0.1:{port}", "http://localhost:{port}",
                   "http://[::1]:{port}"):
        headers = [f"Host: 127.0.0.1:{port}", f"Origin: {_form(origin, port)}"]
        assert request(port, "GET", "/health", headers)[0] == 200
        assert request(port, "GET", "/metadata", headers)[0] == 200
    with urllib.request.urlopen(f"http://localhost:{port}/health", timeout=30) as answer:
        assert answer.status == 200
    with connect(f"ws://127.0.0.1:{port}/ws", origin=f"http://localhost:{port}",
                 proxy=None) as ws:
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=60))["type"] in ("state", "error")

    from openenv.core.generic_client import GenericEnvClient

    for base in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        with GenericEnvClient(base_url=base, message_timeout_s=60).sync() as env:
            result = env.reset(task=0)
            assert result.observation["query"]
            assert env.step({"code": "echo hi"}).observation["output"].strip() == "hi"


def test_the_projects_client_says_why_it_was_refused():
    """A server that does not answer the client's Host (421) or Origin (403): the client
    says so with the server's reason, not a bare status."""
    from intercode.integrations.serve.openenv import IntercodeEnvClient

    detail = HostPolicy("127.0.0.1").refusal(["gpu.lan:8000"], [], 8000)
    assert detail is not None and "\n" not in detail.message
    body = json.dumps({"detail": detail.message, "code": detail.code}).encode()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 421 Misdirected Request\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(body), body))

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        client = IntercodeEnvClient(base_url=f"http://127.0.0.1:{port}").sync()
        with pytest.raises(ConnectionError) as refused:
            client.connect()
        thread.join(timeout=30)
    assert "HTTP 421" in str(refused.value) and "--allowed-host" in str(refused.value)


# -- the policy, unit by unit ---------------------------------------------------------------


def test_the_policy_of_a_loopback_server():
    policy = HostPolicy("127.0.0.1")
    assert policy.refusal(["127.0.0.1:8000"], [], 8000) is None
    assert policy.refusal(["[::1]:8000"], ["http://[::1]:8000"], 8000) is None
    assert policy.refusal(["localhost:8000"], ["https://localhost:8000"], 8000) is None
    assert policy.refusal(["[::1]"], [], 8000) is None  # no port: the client's choice
    # a served name on another port: a tunnel's or a mapping's Host, never a page's Origin
    assert policy.refusal(["localhost:8001"], [], 8000) is None
    refused = policy.refusal(["localhost:8000"], ["http://localhost:8001"], 8000)
    assert refused is not None and refused.status == 403
    for host in ("evil.example:8000", "[::2]:8000",
                 "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:-1", "::1:8000", "[::1",
                 "localhost:8000:8000", "local host:8000"):
        refused = policy.refusal([host], [], 8000)
        assert refused is not None and refused.status == 421, host
    assert policy.refusal(["127.0.0.1:8000"] * 2, [], 8000) is not None
    assert policy.refusal([], [], 8000) is not None
    assert HostPolicy("::1").refusal(["[::1]:8000"], [], 8000) is None
    assert HostPolicy("localhost").refusal(["127.0.0.1:8000"], [], 8000) is None


def test_allowed_hosts_and_other_addresses():
    """``--allowed-host NAME`` (any port) and ``NAME:PORT``; bound elsewhere without
    them any Host goes but an Origin must be the request's own host."""
    policy = HostPolicy("127.0.0.1", ["env.example.org", "tunnel.example:9000"])
    assert policy.refusal(["env.example.org"], ["https://env.example.org"], 8000) is None
    assert policy.refusal(["tunnel.example:9000"], ["http://tunnel.example:9000"], 8000) is None
    assert policy.refusal(["tunnel.example:9001"], [], 8000) is not None
    assert policy.refusal(["localhost:8000"], [], 8000) is None
    assert policy.refusal(["attacker.example:8000"], [], 8000) is not None

    lan = HostPolicy("192.168.1.5")  # a token is what guards it (or a warning)
    assert lan.refusal(["whatever.lan:8000"], [], 8000) is None
    assert lan.refusal(["whatever.lan:8000"], ["http://whatever.lan:8000"], 8000) is None
    assert lan.refusal(["192.168.1.5:8000"], ["http://attacker.example"], 8000) is not None
    assert lan.refusal([], ["http://attacker.example"], 8000) is not None
    named = HostPolicy("192.168.1.5", ["gpu.lan"])
    assert named.refusal(["192.168.1.5:8000"], ["http://192.168.1.5:8000"], 8000) is None
    assert named.refusal(["gpu.lan:8000"], [], 8000) is None
    assert named.refusal(["attacker.example:8000"], [], 8000) is not None
    assert named.refusal(["localhost:8000"], [], 8000) is not None  # not bound to loopback

    wildcard = HostPolicy("0.0.0.0", ["gpu.lan"])  # serves loopback too
    assert wildcard.refusal(["localhost:8000"], [], 8000) is None
    assert wildcard.refusal(["0.0.0.0:8000"], [], 8000) is not None
    assert HostPolicy("0.0.0.0").refusal(["anything:1"], ["http://evil.example"], 1) is not None


@pytest.mark.parametrize("value", ["", "bad host", "a:b", "host:0", "host:70000", "[::1",
                                   "http://x.example", "x.example/path"])
def test_a_malformed_allowed_host_is_one_line(value, capsys):
    from intercode.cli import main

    assert main(["serve", "openenv", "--env", "bash", "--port", "0", "--allowed-host",
                 value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--allowed-host" in err, err


def test_the_scripted_chat_server_refuses_pages_too():
    from intercode.llm.scripted_server import Reply, ScriptedChatServer

    with ScriptedChatServer(lambda request: Reply("hi")) as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        body = json.dumps({"model": "scripted", "messages": []}).encode()
        path = "/v1/chat/completions"
        host = f"Host: 127.0.0.1:{port}"
        assert request(port, "POST", path, ["Host: rebind.attacker.example"], body)[0] == 421
        assert request(port, "POST", path, [host, "Origin: http://attacker.example"],
                       body)[0] == 403
        assert request(port, "GET", "/v1/models", ["Host: rebind.attacker.example"])[0] == 421
        assert server.requests == []
        assert request(port, "POST", path, [host], body)[0] == 200
        assert len(server.requests) == 1


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_a_non_loopback_address_without_a_token_is_refused(host, capsys, monkeypatch):
    """Bound to a wildcard or another address, any Host goes and the Origin is checked
    only against the request's own Host, so a page whose name a DNS rebinding points at
    the machine passes: such an address needs a token, as for serve mcp."""
    import intercode.integrations.serve.openenv_server as server
    from intercode.cli import main

    started = []
    monkeypatch.setattr(server, "serve_openenv", lambda *a, **k: started.append(a))
    monkeypatch.delenv("INTERCODE_TEST_TOKEN", raising=False)
    assert main(["serve", "openenv", "--env", "bash", "--port", "0", "--host", host]) == 2
    err = capsys.readouterr().err
    assert started == [] and err.count("\n") == 1 and "--token-env" in err, err
    monkeypatch.setenv("INTERCODE_TEST_TOKEN", "secret")
    assert main(["serve", "openenv", "--env", "bash", "--port", "0", "--host", host,
                 "--token-env", "INTERCODE_TEST_TOKEN"]) == 0
    assert len(started) == 1
