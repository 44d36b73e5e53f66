"""An MCP server's guarded ASGI app driven in the test process (no sockets): its
lifespan, and client sessions sending raw requests (``tests/serve/test_mcp_fast.py``,
``tests/adversarial/test_mcp_fast_attacks.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import anyio
import pytest

from intercode.integrations.serve.mcp_http import HttpGuard, build_app
from intercode.integrations.serve.mcp_server import McpService
from intercode.integrations.serve.sessions import ServeConfig

KNOWN_SDK = version("mcp").startswith("2.3.")  # where the fast path must be on
known_sdk = pytest.mark.skipif(not KNOWN_SDK, reason="the fast path is checked on the SDK "
                                                     "versions it knows")
Headers = list[tuple[bytes, bytes]]
Answer = tuple[int, dict[bytes, bytes], bytes]


def call_body(id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def initialize_body(id: int, protocol: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": protocol, "capabilities": {},
                       "clientInfo": {"name": "attack", "version": "1"}}}


class Peer:
    """One client session of the app, in this process."""

    def __init__(self, app: HttpGuard, protocol: str) -> None:
        self.app, self.protocol = app, protocol
        self.headers: Headers = []

    async def send(self, body: bytes | dict[str, Any] | list[Any], method: str = "POST",
                   headers: Headers | None = None,
                   messages: list[dict[str, Any]] | None = None) -> Answer:
        """The app's answer to one request (``messages``: what ``receive`` gives, in
        place of the whole body at once)."""
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
        given = list(messages or [{"type": "http.request", "body": raw, "more_body": False}])
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if not given:
                await anyio.sleep_forever()
            return given.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return (int(sent[0]["status"]), dict(sent[0]["headers"]),
                b"".join(m.get("body", b"") for m in sent[1:]))

    async def open(self) -> None:
        status, headers, body = await self.send(initialize_body(0, self.protocol))
        assert status == 200, body
        self.headers = [(b"mcp-session-id", headers[b"mcp-session-id"])]
        if self.protocol >= "2025-06-18":  # clients of older versions send no such header
            self.headers.append((b"mcp-protocol-version", self.protocol.encode()))
        status, _, _ = await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202

    async def tool(self, name: str, id: int = 1, **arguments: Any) -> dict[str, Any]:
        status, _, body = await self.send(call_body(id, name, **arguments))
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


def bash_service() -> Iterator[McpService]:
    """A bash service of three sessions (for a fixture)."""
    service = McpService(ServeConfig(env="bash", dataset="bash-demo", max_sessions=3, warm=0),
                         "http")
    try:
        yield service
    finally:
        service.shutdown()


