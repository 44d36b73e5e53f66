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

from intercode.integrations.serve.mcp_http import PATH, HttpGuard


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
    scope = {"type": "http", "method": method, "path": PATH, "server": ("127.0.0.1", 8000),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"mcp-session-id", sid.encode())]}

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
    """The status of a POST received on 127.0.0.1:8000 (Host: 127.0.0.1:8000 unless the
    headers have their own)."""
    if not any(name == b"host" for name, _ in headers):
        headers = [(b"host", b"127.0.0.1:8000"), *headers]
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers,
             "server": ("127.0.0.1", 8000)}
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


def test_a_foreign_host_or_origin_is_refused_on_every_path_before_the_token():
    """DNS rebinding (a page's own name as Host) and a page's Origin are refused on
    /mcp and on every other path, with or without the token, before the SDK or the
    fast path sees the request (the SDK's own check guarded /mcp only, on any port);
    --allowed-host names pass; a WebSocket is never served."""
    from intercode.hosts import HostPolicy

    calls: list[str] = []
    guard = HttpGuard(recording("app", calls), Service(), token="t0ken",  # type: ignore[arg-type]
                      endpoint=recording("endpoint", calls),
                      hosts=HostPolicy("127.0.0.1", ["env.example.org"]))
    good = (b"authorization", b"Bearer t0ken")

    async def main() -> None:
        for path in (PATH, "/", "/health", "/metadata", PATH + "/"):
            for host, origin, status in ((b"rebind.attacker.example:8000", None, 421),
                                         (b"127.1:8000", None, 421),
                                         (b"127.0.0.1:8000", b"http://attacker.example", 403),
                                         (b"127.0.0.1:8000", b"null", 403),
                                         (b"localhost:8000", b"http://localhost:9999", 403)):
                headers = [(b"host", host), good]
                if origin is not None:
                    headers.append((b"origin", origin))
                assert await answer(guard, path, headers) == status, (path, host, origin)
                assert await answer(guard, path, headers[:1] + headers[2:]) == status
        assert calls == []
        for host, origin in ((b"127.0.0.1:8000", None), (b"localhost:8000",
                                                         b"http://localhost:8000"),
                             (b"env.example.org", b"https://env.example.org")):
            headers = [(b"host", host), good] + ([(b"origin", origin)] if origin else [])
            assert await answer(guard, "/other", headers) == 200
        assert calls == ["app"] * 3
        sent: list[dict[str, Any]] = []

        async def connect() -> dict[str, Any]:
            return {"type": "websocket.connect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await guard({"type": "websocket", "path": PATH, "server": ("127.0.0.1", 8000),
                     "headers": [(b"host", b"127.0.0.1:8000")]}, connect, send)
        assert [m["type"] for m in sent] == ["websocket.close"] and calls == ["app"] * 3

    anyio.run(main)



class Held:
    """An endpoint whose answers stay open until released: ``GET`` a 200 event stream
    (or ``get_status``), ``POST`` a call in flight."""

    def __init__(self, get_status: int = 200) -> None:
        self.get_status = get_status
        self.release: dict[str, anyio.Event] = {}
        self.started: dict[str, anyio.Event] = {}

    def hold(self, name: str) -> None:
        self.release[name] = anyio.Event()
        self.started[name] = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        name = scope["method"]
        status = self.get_status if name == "GET" else 200
        await send({"type": "http.response.start", "status": status, "headers": []})
        self.started[name].set()
        await self.release[name].wait()
        await send({"type": "http.response.body", "body": b""})


def test_a_stream_closed_between_calls_ends_the_session_but_not_one_closed_mid_call(caplog):
    """A client that closes its event stream with nothing in flight has left (the
    TypeScript SDK's close() sends no DELETE): its session ends at once, without the
    grace or a warning. One whose stream drops while its call runs keeps the session
    (it reopens the stream), and a refused second stream ends nothing."""
    app = Held()
    service = Service()
    guard = HttpGuard(app, service, token=None,  # type: ignore[arg-type]
                      reconnect_grace=600)

    async def main() -> None:
        with anyio.fail_after(30):  # the grace, 600 s, would hold the stream's request
            async with anyio.create_task_group() as tg:
                # the stream drops while a call is in flight: the session stays
                app.hold("GET")
                app.hold("POST")
                tg.start_soon(request, guard, "GET", "mid-call")
                await app.started["GET"].wait()
                tg.start_soon(request, guard, "POST", "mid-call")
                await app.started["POST"].wait()
                app.release["GET"].set()
                await anyio.sleep(0.05)
                assert service.ended == []
                app.hold("GET")  # it comes back with a new stream, then the call ends
                tg.start_soon(request, guard, "GET", "mid-call")
                await app.started["GET"].wait()
                app.release["POST"].set()
                await anyio.sleep(0.05)
                assert service.ended == []
                # between calls, it closes the stream: it left
                app.release["GET"].set()
            assert service.ended == ["mid-call"]
            assert "mid-call" not in guard.traffic

            refused = HttpGuard(Held(get_status=409), service, token=None,  # type: ignore[arg-type]
                                reconnect_grace=600)
            refused.endpoint.hold("GET")  # type: ignore[attr-defined]
            refused.endpoint.release["GET"].set()  # type: ignore[attr-defined]
            await request(refused, "GET", "second-stream")
            assert service.ended == ["mid-call"]

    with caplog.at_level("WARNING"):
        anyio.run(main)
    assert LEFT not in caplog.text


LEFT = "left without ending it"
