"""The MCP HTTP guard's bookkeeping of client sessions cannot be grown by a client.

A client (with the token, or any local process without one) can send requests with
made-up ``Mcp-Session-Id`` values. The guard keeps per-session traffic only for sessions
it may have to free later; refused requests must leave nothing behind."""

from __future__ import annotations

import secrets
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from intercode.serve.mcp_http import PATH, HttpGuard


class Service:
    """What the guard uses of the MCP service: the idle timeout, and `end`."""

    def __init__(self) -> None:
        self.config = SimpleNamespace(idle_timeout=600.0)
        self.ended: list[str] = []

    async def end(self, key: str) -> None:
        self.ended.append(key)


def refusing(status: int) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    return app


async def request(guard: HttpGuard, method: str, sid: str) -> None:
    scope = {"type": "http", "method": method, "path": PATH,
             "headers": [(b"mcp-session-id", sid.encode())]}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        pass

    await guard(scope, receive, send)


@pytest.mark.parametrize("status", [400, 404, 406, 413])
def test_made_up_session_ids_leave_no_bookkeeping(status):
    guard = HttpGuard(refusing(status), Service(), token=None)  # type: ignore[arg-type]

    async def main() -> None:
        for _ in range(3000):
            await request(guard, "POST", secrets.token_hex(16))
            await request(guard, "GET", secrets.token_hex(16))

    anyio.run(main)
    assert guard.traffic == {}


def recording(name: str, calls: list[str], status: int = 200) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        calls.append(name)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    return app


async def answer(guard: HttpGuard, path: str, headers: list[tuple[bytes, bytes]]) -> int:
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return int(sent[0]["status"])


def test_the_token_guards_the_mcp_endpoint_and_every_other_path():
    """The guard hands /mcp straight to the SDK's session manager (past starlette's
    routing): the token is asked for before either is reached, and a second
    Authorization header does not stand in for a wrong first one."""
    calls: list[str] = []
    guard = HttpGuard(recording("app", calls), Service(), token="t0ken",  # type: ignore[arg-type]
                      endpoint=recording("endpoint", calls))

    async def main() -> None:
        sid = (b"mcp-session-id", b"abc")
        for path in (PATH, "/other", PATH + "/"):
            for headers in ([], [(b"authorization", b"Bearer wrong")],
                            [(b"authorization", b"Bearer wrong"),
                             (b"authorization", b"Bearer t0ken")],
                            [(b"authorization", b"t0ken"), sid]):
                assert await answer(guard, path, headers) == 401, (path, headers)
        assert calls == []
        good = [(b"authorization", b"Bearer t0ken")]
        assert await answer(guard, PATH, good) == 200
        assert await answer(guard, PATH, [*good, sid]) == 200
        assert await answer(guard, "/other", good) == 200
        assert await answer(guard, PATH + "/", [*good, sid]) == 200
        assert calls == ["endpoint", "endpoint", "app", "app"]

    anyio.run(main)
