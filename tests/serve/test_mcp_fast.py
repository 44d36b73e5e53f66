"""The ``tools/call`` fast path of ``intercode serve mcp`` over HTTP answers exactly as
the SDK's own path does, and leaves everything else to it.

The server's guarded ASGI app is driven in this process (no sockets): one session with
the fast path attached, one without (the SDK's path end to end), the same requests sent
to both, the answers compared byte for byte, for every handshake-era protocol version.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from intercode.serve.mcp_http import HttpGuard, build_app
from intercode.serve.mcp_server import McpService
from intercode.serve.sessions import ServeConfig

# the SDK versions whose private parts the fast path is known to use: there it must be on
KNOWN_SDK = version("mcp").startswith("2.3.")


class Peer:
    """One client session of the app, in this process."""

    def __init__(self, app: HttpGuard, protocol: str) -> None:
        self.app, self.protocol = app, protocol
        self.headers: list[tuple[bytes, bytes]] = []

    async def send(self, body: bytes | dict[str, Any] | list[Any], method: str = "POST",
                   headers: list[tuple[bytes, bytes]] | None = None,
                   ) -> tuple[int, dict[bytes, bytes], bytes]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
                 "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
                 "client": ("127.0.0.1", 50000), "state": {},
                 "headers": [(b"host", b"127.0.0.1:8000"),
                             (b"content-type", b"application/json"),
                             (b"accept", b"application/json, text/event-stream"),
                             (b"content-length", str(len(raw)).encode()),
                             *(self.headers if headers is None else headers)]}
        sent: list[dict[str, Any]] = []
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if given:
                await anyio.sleep_forever()
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return (int(sent[0]["status"]), dict(sent[0]["headers"]),
                b"".join(m.get("body", b"") for m in sent[1:]))

    async def open(self) -> None:
        status, headers, body = await self.send({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": self.protocol, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}})
        assert status == 200, body
        assert json.loads(body)["result"]["protocolVersion"] == self.protocol
        self.headers = [(b"mcp-session-id", headers[b"mcp-session-id"])]
        if self.protocol >= "2025-06-18":  # clients of older versions send no such header
            self.headers.append((b"mcp-protocol-version", self.protocol.encode()))
        status, _, _ = await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202

    async def tool(self, name: str, id: int = 1, **arguments: Any) -> dict[str, Any]:
        status, _, body = await self.send({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                           "params": {"name": name, "arguments": arguments}})
        assert status == 200, body
        return dict(json.loads(body)["result"])


@asynccontextmanager
async def running(service: McpService) -> AsyncIterator[HttpGuard]:
    """The guarded app with its lifespan (the SDK's session manager) running."""
    app = build_app(service, "127.0.0.1", None)
    to_app, app_in = anyio.create_memory_object_stream[dict[str, Any]](4)
    app_out, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                      app_in.receive, app_out.send)
        await to_app.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        await service.start()
        try:
            yield app
        finally:
            tg.cancel_scope.cancel()


@pytest.fixture
def service() -> Iterator[McpService]:
    service = McpService(ServeConfig(env="bash", dataset="bash-demo", max_sessions=3, warm=0),
                         "http")
    try:
        yield service
    finally:
        service.shutdown()


def requests(protocol: str) -> list[tuple[str, Any, list[tuple[bytes, bytes]] | None]]:
    """What both sessions are sent: (name, body, headers or None for the session's)."""
    def call(id: Any, name: Any, **more: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, **more}}

    return [
        ("reset", call(1, "reset", arguments={"task": 0}), None),
        ("execute", call(2, "execute", arguments={"code": "echo hi; pwd; echo err >&2"}), None),
        ("string id", call("x-3", "execute", arguments={"code": "printf 'caf\\xc3\\xa9'"}),
         None),
        ("a wrong type", call(4, "execute", arguments={"code": 3}), None),
        ("an unknown argument", call(5, "execute", arguments={"code": "true", "x": 1}), None),
        ("no arguments", call(6, "execute"), None),
        ("an unknown tool", call(7, "nope", arguments={}), None),
        ("a name not a string", call(8, 12, arguments={}), None),
        ("arguments not an object", call(9, "execute", arguments=["true"]), None),
        ("with _meta", call(10, "execute", arguments={"code": "echo m"},
                            _meta={"progressToken": 5}), None),
        ("no params", {"jsonrpc": "2.0", "id": 11, "method": "tools/call"}, None),
        ("a notification", {"jsonrpc": "2.0", "method": "tools/call",
                            "params": {"name": "evaluate"}}, None),
        ("a batch", [call(12, "evaluate")], None),
        ("malformed JSON", b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", ', None),
        ("not JSON-RPC 2.0", {**call(14, "evaluate"), "jsonrpc": "1.0"}, None),
        ("a bool id", call(True, "evaluate"), None),
        ("evaluate", call(15, "evaluate"), None),
        ("reset out of range", call(16, "reset", arguments={"task": 10 ** 9}), None),
        ("submit", call(17, "submit"), None),
        ("after the episode", call(18, "execute", arguments={"code": "true"}), None),
        ("reset again", call(19, "reset", arguments={"task": 1}), None),
        ("execute again", call(20, "execute", arguments={"code": "ls /nonexistent"}), None),
    ]


@pytest.mark.parametrize("protocol", HANDSHAKE_PROTOCOL_VERSIONS)
def test_the_fast_path_answers_byte_for_byte_as_the_sdk_does(service, protocol):
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            assert fast.enabled or not KNOWN_SDK
            fast.enabled = False  # this session is not attached: the SDK's path throughout
            sdk = Peer(app, protocol)
            await sdk.open()
            fast.enabled = KNOWN_SDK or fast.enabled
            quick = Peer(app, protocol)
            await quick.open()
            answers: dict[str, list[tuple[str, int, bytes]]] = {"sdk": [], "fast": []}
            for peer, key in ((sdk, "sdk"), (quick, "fast")):
                before = fast.answered
                for name, body, headers in requests(protocol):
                    status, _, payload = await peer.send(body, headers=headers)
                    answers[key].append((name, status, payload))
                if key == "sdk":
                    assert fast.answered == before  # nothing of its was answered here
                elif KNOWN_SDK:
                    # the plain calls of one of the tools: reset, execute, string id, a
                    # wrong type, an unknown argument, no arguments, evaluate, reset out
                    # of range, submit, after the episode, reset again, execute again
                    assert fast.answered - before == 12
            for (name, status, payload), (_, status2, payload2) in zip(
                    answers["sdk"], answers["fast"], strict=True):
                assert (status, payload) == (status2, payload2), name
            # the answers are the real ones, not two equal failures
            said = {name: (status, payload) for name, status, payload in answers["fast"]}
            assert b'hi\\n/\\n' in said["execute"][1]
            assert said["string id"][1].startswith(b'{"jsonrpc":"2.0","id":"x-3","result"')
            assert b"caf\xc3\xa9" in said["string id"][1]
            assert b'"isError":true' in said["a wrong type"][1]
            assert said["malformed JSON"][0] == 400
            assert said["a notification"][0] == 202
            assert b'"reward"' in said["submit"][1]

    anyio.run(main)


def call_body(id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


@pytest.mark.skipif(not KNOWN_SDK, reason="the fast path is checked on the SDK versions "
                                          "it knows")
def test_what_the_fast_path_leaves_to_the_sdk(service):
    """A second initialize on a session, a tracing middleware, a protocol version
    header other than the negotiated one: the SDK's path answers."""
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            peer = Peer(app, "2025-06-18")
            await peer.open()
            assert (await peer.tool("reset", task=0))["structuredContent"]["task"] == 0
            assert fast.answered == 1
            other = [*peer.headers[:1], (b"mcp-protocol-version", b"2025-03-26")]
            status, _, _ = await peer.send(call_body(2, "execute", code="true"), headers=other)
            assert status == 200 and fast.answered == 1
            service.server.middleware.append(lambda ctx, call_next: call_next(ctx))
            assert (await peer.tool("execute", id=3, code="echo t"))[
                "structuredContent"]["output"] == "t\n"
            assert fast.answered == 1
            service.server.middleware.clear()
            assert (await peer.tool("execute", id=4, code="true"))["isError"] is False
            assert fast.answered == 2
            status, _, body = await peer.send({
                "jsonrpc": "2.0", "id": 5, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "again", "version": "1"}}})
            assert status == 200, body
            assert (await peer.tool("execute", id=6, code="echo u"))[
                "structuredContent"]["output"] == "u\n"
            assert fast.answered == 2  # off for this session from the second handshake

    anyio.run(main)


@pytest.mark.skipif(not KNOWN_SDK, reason="the fast path is checked on the SDK versions "
                                          "it knows")
def test_ending_a_session_ends_its_calls_in_flight_as_the_sdk_does(service):
    """A DELETE while a call runs and another waits its turn: both are answered at once
    with the SDK's 500 (not after the running action), and the sandbox is freed."""
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            peer = Peer(app, "2025-11-25")
            await peer.open()
            await peer.tool("reset", task=0)
            sid = peer.headers[0][1].decode()
            session = service.bound[sid]
            answers: list[tuple[int, bytes]] = []

            async def slow(id: int) -> None:
                status, _, body = await peer.send(call_body(id, "execute", code="sleep 600"))
                answers.append((status, body))

            with anyio.fail_after(60):  # a hang guard, not a timing assertion
                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow, 2)
                    tg.start_soon(slow, 3)
                    while len(fast.attached[sid].calls) < 2:
                        await anyio.sleep(0.01)
                    status, _, _ = await peer.send(b"", method="DELETE")
                    assert status == 200
            assert [status for status, _ in answers] == [500, 500]
            assert all(b"Session terminated before the request completed" in body
                       for _, body in answers)
            assert session.closed and sid not in service.bound and sid not in fast.attached
            status, _, _ = await peer.send(call_body(4, "execute", code="true"))
            assert status == 404  # the SDK's answer for a session it no longer knows

    anyio.run(main)
