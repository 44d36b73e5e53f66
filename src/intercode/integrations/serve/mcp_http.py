"""The streamable HTTP side of ``intercode serve mcp``: the SDK's app behind a guard.

The MCP SDK's streamable HTTP app (``/mcp``) does the protocol, its sessions
(``Mcp-Session-Id``), their idle expiry (``idle_timeout`` with no request in flight and
no open stream) and the 413 for bodies over :data:`MAX_BODY`. :class:`HttpGuard`, in
front of it, checks the ``Host`` and ``Origin`` of every request on every path (the
policy of every server here, :mod:`intercode.hosts`: 421, 403; the SDK's own
check, which guards only ``/mcp`` and allows any port, is off), asks for the bearer
token (401 without it) and frees a client session's sandboxes as soon as
the SDK's session ends: on the client's ``DELETE``, or when the SDK answers 404 for a
session it no longer knows (expired).

Many clients end without a ``DELETE``: the TypeScript SDK's ``client.close()`` (and so
the MCP Inspector) only drops its connections. Their sign is the standalone ``GET``
stream, which the SDK clients keep open for the whole session. When a session's last
stream closes and no other request of it is in flight, the client is taken at its word:
the session ends at once, as on a ``DELETE`` (the SDK's session too, so that its id
answers 404 from then on, and the protocol requires a client to start a new session on
that). When a request is still in flight (a client killed mid-action, or one whose
stream dropped while it waits for an answer and that will reopen it: the SDK clients do
so a second later), the session is kept: only when neither a new stream nor a request
comes within ``reconnect_grace`` seconds of the last request's end is the client taken
for gone (logged as a warning). A client that never opened a stream is left to the idle
expiry (``idle_timeout`` without a call, the SDK's and the pool's).

The grace periods run in the guard's own tasks, started by the app's lifespan, so they
hold up no request and no shutdown.

At shutdown (SIGINT, SIGTERM), once the server accepts no more connections,
:meth:`HttpGuard.stop` answers the calls in flight with an ``infrastructure`` error ("the
server is shutting down") and ends every SDK session (its event streams close), so
uvicorn's graceful shutdown finds nothing left to cancel; the sandboxes close after it.
"""

from __future__ import annotations

import hmac
import json
import logging
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp.server import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from intercode.errors import ConfigError
from intercode.hosts import HostPolicy
from intercode.integrations.serve.mcp_fast import FastCalls
from intercode.integrations.serve.mcp_server import McpService

__all__ = ["build_app", "loop_options", "serve_http"]

log = logging.getLogger(__name__)

PATH = "/mcp"
MAX_BODY = 2 << 20  # bytes of one request (an action is at most 1 Mi characters)
BACKLOG = 256
_SID = MCP_SESSION_ID_HEADER.lower().encode("latin-1")  # ASGI header names are lower case


@dataclass
class _Traffic:
    """What one client session has open, and when it was last heard from."""

    streams: int = 0  # open standalone GET streams
    requests: int = 0  # other requests in flight
    last: float = 0.0  # monotonic time of the last request's start or end
    listened: bool = False  # it opened a stream once: its closing means something
    watched: bool = False  # a grace period runs


EndSession = Callable[[str], Awaitable[None]]
STOP_ANSWERS = 1.0  # seconds the shutdown waits for the calls it answered to be sent


class HttpGuard:
    """ASGI middleware: the Host and Origin headers, the bearer token, and the end of
    the SDK's sessions."""

    def __init__(self, app: ASGIApp, service: McpService, token: str | None,
                 path: str = PATH, reconnect_grace: float = 5.0,
                 endpoint: ASGIApp | None = None, fast: FastCalls | None = None,
                 hosts: HostPolicy | None = None,
                 end_protocol: EndSession | None = None,
                 protocol_sessions: Callable[[], list[str]] | None = None) -> None:
        self.app = app
        self.hosts = hosts or HostPolicy("127.0.0.1")
        # requests to `path` go straight to `endpoint` (the SDK's session manager), past
        # the routing and exception middleware of `app` (which still serves the rest)
        self.endpoint = endpoint or app
        self.service = service
        self.fast = fast  # the tools/call fast path (attached at each session's opening)
        self.expected = None if token is None else f"Bearer {token}".encode()
        self.path = path
        self.grace = reconnect_grace
        # ends the SDK's session of an id as its DELETE does (None: left to its expiry)
        self.end_protocol = end_protocol
        self.protocol_sessions = protocol_sessions  # the SDK's session ids (None: unknown)
        self.traffic: dict[str, _Traffic] = {}
        self._requests = 0
        self._tasks: TaskGroup | None = None  # the grace periods' (while the lifespan runs)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http":  # no WebSocket is served here: refused (HTTP 403)
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        refused = self.hosts.check(scope)
        if refused is not None:
            await _reply(send, refused.status, refused.message)
            return
        authorization = sid = None
        for name, value in scope["headers"]:  # the raw list: no Headers object per request
            if name == b"authorization":
                authorization = authorization or value
            elif name == _SID and sid is None:
                sid = value.decode("latin-1")
        if self.expected is not None and not hmac.compare_digest(
                authorization or b"", self.expected):
            await _reply(send, 401, "missing or wrong bearer token (Authorization: Bearer "
                                    "<token>)", {"www-authenticate": 'Bearer realm="intercode"'})
            return
        app = self.endpoint if scope["path"] == self.path else self.app
        if not sid or scope["path"] != self.path:
            if self.fast is not None and app is self.endpoint and scope["method"] == "POST":
                await self.fast.opening(app, scope, receive, send)
            else:
                await app(scope, receive, send)
            return
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        stream = scope["method"] == "GET"
        self._prune()
        seen = self.traffic.setdefault(sid, _Traffic())
        seen.last = time.monotonic()
        if stream:
            seen.streams += 1
        else:
            seen.requests += 1
        left = False  # its last stream closed with nothing else in flight
        try:
            await app(scope, receive, watch)
        finally:
            seen.last = time.monotonic()
            if stream:
                seen.streams -= 1
                seen.listened = seen.listened or status == 200
                left = status == 200 and not (seen.streams or seen.requests)
            else:
                seen.requests -= 1
            ended = status == 404 or (scope["method"] == "DELETE" and status is not None
                                      and status < 300)
            if ended:
                self.traffic.pop(sid, None)
                with anyio.CancelScope(shield=True):
                    await self.service.end(sid)
            elif (status is None or status >= 400) and self.traffic.get(sid) is seen and not (
                    seen.streams or seen.requests or seen.listened or seen.watched):
                del self.traffic[sid]  # refused, not a stream's session: nothing to keep
        if ended:
            return
        if left:
            # the client closed its stream between calls: it left (the TypeScript SDK's
            # close() sends no DELETE), and this is the end of its session
            if self.traffic.get(sid) is seen:
                await self._end(sid)
        elif seen.listened and not (seen.streams or seen.requests or seen.watched):
            if self._tasks is not None:
                self._tasks.start_soon(self._watch, sid, seen)
            else:  # no lifespan runs (an app driven by hand): in this request's task
                await self._watch(sid, seen)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's lifespan, with the task group of the grace periods (cancelled at
        its end: the sessions left close with the server)."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                await self.app(scope, receive, send)
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def stop(self) -> None:
        """The server is shutting down (it accepts no more connections): answer the
        calls in flight (an ``infrastructure`` error), let the answers go out, then end
        every SDK session, so that no request or event stream is left to cancel. The
        sandboxes are closed by the service's shutdown, after the server's."""
        self.service.stop_calls()
        with anyio.move_on_after(STOP_ANSWERS):  # a call waiting behind another's turn
            while any(seen.requests for seen in self.traffic.values()):
                await anyio.sleep(0.01)
        sids = set(self.traffic) | set(self.protocol_sessions() if self.protocol_sessions
                                       else ())
        self.traffic.clear()
        if self.end_protocol is None:
            return
        for sid in sids:
            try:
                await self.end_protocol(sid)
            except Exception:  # its requests are cancelled by the server's shutdown
                log.warning("session %s: could not end the SDK's session", sid[:8],
                            exc_info=True)

    def _prune(self) -> None:
        """Forget sessions not heard from for twice the idle timeout (they expired)."""
        self._requests += 1
        if self._requests % 1024:
            return
        stale = time.monotonic() - 2 * self.service.config.idle_timeout
        for sid, seen in list(self.traffic.items()):
            if not (seen.streams or seen.requests or seen.watched) and seen.last < stale:
                del self.traffic[sid]

    async def _end(self, sid: str) -> None:
        """End the client session ``sid`` as its ``DELETE`` would: the SDK's session
        (its id answers 404 from now on) and the sandboxes."""
        self.traffic.pop(sid, None)
        with anyio.CancelScope(shield=True):
            if self.end_protocol is not None:
                try:
                    await self.end_protocol(sid)
                except Exception:  # the sandboxes are freed all the same
                    log.warning("session %s: could not end the SDK's session", sid[:8],
                                exc_info=True)
            await self.service.end(sid)

    async def _watch(self, sid: str, seen: _Traffic) -> None:
        """Free the session of a client whose stream closed while a request was in
        flight and who is not back within the grace period after the last one."""
        seen.watched = True
        try:
            while True:
                quiet_since = seen.last
                await anyio.sleep(max(0.0, quiet_since + self.grace - time.monotonic()))
                if self.traffic.get(sid) is not seen:
                    return  # ended meanwhile
                if seen.streams or seen.requests:
                    return  # it is back (the request that ends next looks again)
                if seen.last == quiet_since:
                    break
                # a request came and went: a grace period from its end
            log.warning("session %s: its client left without ending it (no stream for %g s); "
                        "freeing its sandboxes", sid[:8], self.grace)
            await self._end(sid)
        finally:
            seen.watched = False


async def _reply(send: Send, status: int, message: str,
                 headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"),
           (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _noted(sig: int, frame: object) -> None:
    """A signal uvicorn already handled (see :func:`serve_http`)."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot resolve --host {host!r}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url(sock: socket.socket) -> str:
    """``http://host:port/mcp`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{PATH}"


def build_app(service: McpService, host: str, token: str | None,
              fast: bool = True, hosts: HostPolicy | None = None) -> HttpGuard:
    """The guarded ASGI app (its lifespan runs the SDK's session manager); ``fast``:
    with the ``tools/call`` fast path (:mod:`intercode.integrations.serve.mcp_fast`); ``hosts``: the
    Host/Origin policy (by default that of a server bound to ``host``)."""
    config = service.config
    app = service.server.streamable_http_app(
        streamable_http_path=PATH, max_request_body_size=MAX_BODY,
        # a tool call's answer as one JSON body, not an SSE stream: the server sends no
        # progress, and it saves ~7 ms a call (perf/bench_serve_mcp.py)
        json_response=True,
        session_idle_timeout=config.idle_timeout,
        # protocol sessions are cheap until they reset; the pool caps the sandboxes
        max_sessions=max(16, 4 * config.max_sessions), host=host,
        # the guard checks Host and Origin on every path, --allowed-host included
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    untraced(service.server)
    manager = service.server.session_manager

    async def end_protocol(sid: str) -> None:
        """End the SDK's session ``sid`` as its DELETE handler does (the session manager
        then forgets it); an SDK without the session table leaves it to its expiry."""
        sessions = getattr(manager, "_server_instances", None)
        transport = sessions.get(sid) if isinstance(sessions, dict) else None
        if transport is not None and not transport.is_terminated:
            await transport.terminate()

    def protocol_sessions() -> list[str]:
        sessions = getattr(manager, "_server_instances", None)
        return [str(sid) for sid in sessions] if isinstance(sessions, dict) else []

    return HttpGuard(app, service, token, reconnect_grace=config.reconnect_grace,
                     endpoint=manager.handle_request,
                     fast=FastCalls(service, manager) if fast else None,
                     hosts=hosts or HostPolicy(host), end_protocol=end_protocol,
                     protocol_sessions=protocol_sessions)


def untraced(server: Server[Any]) -> None:
    """Drop the SDK's OpenTelemetry middleware when no tracer provider is set up (its
    spans would go nowhere, and it costs every request a span); with one, tracing
    stays."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        server.middleware = [m for m in server.middleware
                             if type(m).__name__ != "OpenTelemetryMiddleware"]


def loop_options() -> dict[str, Any]:
    """anyio's backend options: uvloop's event loop when it is installed (a request
    costs less there than on asyncio's; docs/serving.md, Performance)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def _server(config: Any, guard: HttpGuard) -> Any:
    """A uvicorn server whose shutdown, once no more connections are accepted, first
    has ``guard`` answer the calls in flight and end the sessions (:meth:`HttpGuard.stop`)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for server in self.servers:
                server.close()  # no new connection while the sessions end
            for sock in sockets or []:
                sock.close()
            await guard.stop()
            await super().shutdown(sockets)

    return Server(config)


async def serve_http(service: McpService, host: str, port: int, token: str | None,
                     hosts: HostPolicy | None = None) -> None:
    """Serve over streamable HTTP until interrupted (SIGINT, SIGTERM)."""
    import uvicorn

    sock = bind(host, port)
    try:
        await service.start()
        guard = build_app(service, host, token, hosts=hosts)
        server = _server(uvicorn.Config(
            guard, log_config=None, access_log=False,
            lifespan="on", timeout_graceful_shutdown=2,
            # bound to loopback or behind a token: no proxy to trust, no headers to add
            proxy_headers=False, server_header=False), guard)
        print(f"intercode serve mcp: serving {service.config.env} ({service.config.dataset}) "
              f"on {url(sock)}", file=sys.stderr, flush=True)
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again
        # with the handlers it found: let that land here, so the sessions close below
        previous = {sig: signal.signal(sig, _noted) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(service.reaper)
                await server.serve(sockets=[sock])
                tg.cancel_scope.cancel()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        sock.close()
        service.shutdown()
