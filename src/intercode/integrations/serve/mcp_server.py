"""``intercode serve mcp``: an environment as a Model Context Protocol server.

Four tools drive one episode at a time: ``reset`` (start an episode; its query),
``execute`` (run an action; its output), ``evaluate`` (the score of the current state,
the episode goes on) and ``submit`` (end the episode; its reward). The resource
``intercode://task`` is the current task's text.

Each MCP client session has its own :class:`~intercode.integrations.serve.sessions.Session` (its own
sandboxes): over stdio the one connection, over streamable HTTP the ``Mcp-Session-Id``
the server handed out at the ``initialize`` handshake. The session borrows an
environment at its first ``reset`` and gives it back when the client goes (stdio: end of
input; HTTP: ``DELETE``, its event stream closing between calls, or the SDK forgetting
the session), or after ``idle_timeout``
seconds without a call (a periodic :meth:`SessionPool.reap`).

Environment calls block, so they run in worker threads, but not anyio's
(``anyio.to_thread``): a sandbox is killed when the thread that started it exits
(bubblewrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which follows the creating
thread), and anyio stops a worker thread idle for ten seconds when a later call finds
it, which would kill the warm sandboxes it had started. The server keeps its own
threads, which live as long as it does, and makes every environment call (and so starts
every environment) there. A session's calls take turns on the event loop before they get
a thread, so one session holds at most one thread: a client sending many calls at once
cannot take every thread and stall the other sessions.

Tool failures are tool results with ``isError`` and one line, ``<code>: <message>``
(``busy``, ``unknown_session``, ``no_episode``, ``infrastructure``, ``bad_request``,
``internal``), with ``{"error": code, "message": ...}`` as the structured content;
tracebacks stay in the server's log. An unknown tool is a JSON-RPC error
(invalid params), as the protocol asks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from intercode.datasets import load_dataset
from intercode.errors import IntercodeError
from intercode.integrations.serve.sessions import (
    InfrastructureError,
    NoEpisode,
    ServeConfig,
    ServeError,
    Session,
    SessionPool,
    UnknownSession,
)
from intercode.integrations.serve.tooldefs import (
    check_arguments,
    tool_descriptions,
    tool_params,
    tool_schema,
)
from intercode.integrations.serve.workers import Workers

__all__ = ["McpService", "Transport"]

log = logging.getLogger(__name__)

Transport = Literal["stdio", "http"]
T = TypeVar("T")

TASK_URI = "intercode://task"
STDIO_KEY = "stdio"  # the one client of a stdio server
SHUTDOWN_WAIT = 3.0  # seconds to close the sessions at exit; the sandboxes die with us anyway

RESOURCE_NOT_FOUND = -32002  # the handshake era's code for a resource it cannot read

SHUTTING_DOWN = "the server is shutting down"
NEEDS_SESSION = ("this server keeps one episode per MCP session: connect with the initialize "
                 "handshake (protocol 2025-11-25 or older) so the server gives you a session")


# -- the tools -----------------------------------------------------------------------------

def tools(env: str) -> list[types.Tool]:
    """The tool list of an ``env`` server."""
    described = tool_descriptions(env)
    return [types.Tool(name=name, description=described[name],
                       input_schema=tool_schema(env, name),
                       annotations=types.ToolAnnotations(read_only_hint=name == "evaluate",
                                                         open_world_hint=False))
            for name in tool_params(env)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


# the fields a CallToolResult's wire form has by default (isError, resultType), taken
# from the SDK's model so that they follow it
_OK_DEFAULTS = types.CallToolResult(content=[]).model_dump(
    by_alias=True, mode="json", exclude_none=True, exclude={"content"})


def ok_result(data: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer: the data as JSON text and as structured content, in the wire form
    of a ``CallToolResult`` (the SDK validates it against that model on the way out; a
    model built here would be dumped, validated and dumped again)."""
    return {"content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}],
            "structuredContent": data, **_OK_DEFAULTS}


def error_result(code: str, message: str) -> types.CallToolResult:
    """A tool's failure: ``isError`` with one line, ``<code>: <message>``."""
    message = _one_line(message)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": code, "message": message}, is_error=True)


# -- the service ---------------------------------------------------------------------------

class McpService:
    """The pool, the client sessions bound to pool sessions, and the worker threads."""

    def __init__(self, config: ServeConfig, transport: Transport,
                 pool: SessionPool | None = None) -> None:
        self.config = config
        self.transport = transport
        self.pool = pool or SessionPool(config)
        self.params = tool_params(config.env)
        self.tasks = len(load_dataset(config.dataset, config.env))
        # threads that outlive every sandbox they start (see the module docstring)
        self.workers = Workers(2 * config.max_sessions + 4)
        self.bound: dict[str, Session] = {}  # client session key -> pool session
        # each pool session's turn (forgotten with the session)
        self.turns: weakref.WeakKeyDictionary[Session, asyncio.Lock] = (
            weakref.WeakKeyDictionary())
        self.closing = False  # shutting down: calls are answered at once, with an error
        self.waiting: set[asyncio.Future[Any]] = set()  # calls waiting for their thread
        self.server = self._build_server()

    # -- threads ---------------------------------------------------------------------------

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in one of the server's worker threads."""
        return await self.workers.run(call, *args)

    async def start(self) -> None:
        """Build one environment now (a bad configuration fails before serving); it stays
        warm for the first client."""
        await self.run(self.pool.check)

    def stop_calls(self) -> None:
        """The server is shutting down: every call waiting for its worker thread is
        answered now with an ``infrastructure`` error, and so is every later call (the
        actions still running end with the sandboxes, at :meth:`shutdown`)."""
        self.closing = True
        for future in self.waiting:
            if not future.done():
                future.set_exception(InfrastructureError(SHUTTING_DOWN))
        self.waiting.clear()

    def shutdown(self, wait: float = SHUTDOWN_WAIT) -> None:
        """Close every session and environment (waiting at most ``wait`` seconds for
        actions still running: their sandboxes die with the process anyway)."""
        self.bound.clear()
        done = threading.Event()

        def close() -> None:
            try:
                self.pool.shutdown()
            finally:
                done.set()

        threading.Thread(target=close, name="intercode-serve-shutdown", daemon=True).start()
        if not done.wait(wait):
            log.warning("sessions still busy after %.0f s; leaving them to die with the server",
                        wait)
        self.workers.shutdown()

    # -- client sessions -------------------------------------------------------------------

    def key(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The client session a request belongs to."""
        if self.transport == "stdio":
            return STDIO_KEY
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # the sessionless era's requests pass no session lookup: an Mcp-Session-Id
            # they carry is unchecked, and would reach that session's sandbox
            raise ServeError(NEEDS_SESSION)
        request = ctx.request
        headers = getattr(request, "headers", None)
        sid = headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None
        if not sid:
            raise ServeError(NEEDS_SESSION)
        return str(sid)

    async def end(self, key: str) -> None:
        """The client session ``key`` is gone: free its pool session now."""
        if self.closing:  # the shutdown closes every session, busy or not
            return
        session = self.bound.pop(key, None)
        if session is not None:
            try:
                await self.run(session.close)
            except asyncio.CancelledError:  # the server's shutdown gave up waiting
                log.warning("session %s left to the shutdown (still busy)", session.id)
            except Exception:  # shutting down: the pool closes it
                log.warning("could not close session %s", session.id, exc_info=True)

    async def reap(self) -> int:
        """Close the sessions idle longer than ``idle_timeout``; forget long-closed ones."""
        closed = await self.run(self.pool.reap)
        now = time.monotonic()
        for key, session in list(self.bound.items()):
            if session.closed and now - session.last_used > 2 * self.config.idle_timeout:
                del self.bound[key]
        return closed

    async def reaper(self) -> None:
        """Reap every quarter of ``idle_timeout`` (at least every 30 s), forever."""
        period = min(30.0, max(0.5, self.config.idle_timeout / 4))
        while True:
            await anyio.sleep(period)
            try:
                n = await self.reap()
            except Exception:  # the reaper must not die; the next round tries again
                log.exception("reaping idle sessions failed")
                continue
            if n:
                log.info("closed %d idle session(s)", n)

    def _session(self, key: str) -> Session:
        session = self.bound.get(key)
        if session is None:
            raise NoEpisode("no episode: call reset first")
        if session.closed:
            raise UnknownSession(f"the session ended (idle for more than "
                                 f"{self.config.idle_timeout:g} s); call reset to start a "
                                 "new episode")
        return session

    # -- requests --------------------------------------------------------------------------

    async def call(self, key: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run ``tool`` for the client session ``key``, after the session's earlier calls
        (they wait for their turn here, on the event loop, not in a worker thread)."""
        if self.closing:
            raise InfrastructureError(SHUTTING_DOWN)
        if tool == "reset":
            session = self.bound.get(key)
            if session is None or session.closed:
                session = self.pool.open()  # Busy past max_sessions; never blocks
                self.bound[key] = session
            result = await self._in_turn(session, session.reset, args.get("task"),
                                         args.get("seed"))
            return {**result, "tasks": self.tasks}
        session = self._session(key)
        if tool == "execute":
            return await self._in_turn(session, session.execute, args["code"])
        if tool == "evaluate":
            return await self._in_turn(session, session.evaluate)
        return await self._in_turn(session, session.submit, args.get("answer"))

    async def _in_turn(self, session: Session, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread once the session's earlier calls are done.
        The turn passes on when the thread is done with the call, not when its request
        is cancelled (a client cancelling its calls cannot pile them up in threads)."""
        turn = self._turn(session)
        await turn.acquire()
        try:
            future = self.workers.submit(call, *args, finished=turn.release)
        except BaseException:
            turn.release()
            raise
        if self.closing:  # it waited for its turn past the shutdown's start
            future.cancel()
            raise InfrastructureError(SHUTTING_DOWN)
        self.waiting.add(future)
        try:
            return await future
        finally:
            self.waiting.discard(future)

    def _turn(self, session: Session) -> asyncio.Lock:
        """The lock a session's calls take in turn before a worker thread runs them: one
        thread per session at most, so a client sending many calls at once cannot take
        every worker thread and hold up the other sessions."""
        turn = self.turns.get(session)
        if turn is None:
            turn = self.turns[session] = asyncio.Lock()
        return turn

    async def call_tool(self, ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams
                        ) -> types.CallToolResult | dict[str, Any]:
        """``tools/call``: every failure a one-line tool error, never a traceback."""
        if params.name not in self.params:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown tool {params.name!r}; the tools are "
                           f"{', '.join(self.params)}")
        try:
            key = self.key(ctx)
        except ServeError as exc:
            return error_result(exc.code, str(exc))
        return await self.tool(key, params)

    async def tool(self, key: str, params: types.CallToolRequestParams
                   ) -> types.CallToolResult | dict[str, Any]:
        """One of the tools for the client session ``key`` (``params.name`` is one of
        them): its answer, or a one-line tool error."""
        try:
            args = check_arguments(self.config.env, params.name, params.arguments)
            return ok_result(await self.call(key, params.name, args))
        except ServeError as exc:
            return error_result(exc.code, str(exc))
        except IntercodeError as exc:
            return error_result("infrastructure", str(exc))
        except Exception as exc:
            log.exception("tool %s failed", params.name)
            return error_result("internal", f"{type(exc).__name__}: {exc}")

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """``tools/list``."""
        return types.ListToolsResult(tools=tools(self.config.env))

    async def list_resources(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        """``resources/list``: the current task."""
        return types.ListResourcesResult(resources=[types.Resource(
            uri=TASK_URI, name="task", mime_type="text/plain",
            description="the query of this session's current task (after reset)")])

    async def list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                      params: types.PaginatedRequestParams | None
                                      ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: none (the one resource has a fixed URI)."""
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(self, ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        """``resources/read`` of ``intercode://task``; another URI, or the task before
        ``reset``, is the protocol's resource error (one line)."""
        uri = str(params.uri)
        if uri != TASK_URI:
            raise _no_resource(ctx, uri, f"unknown resource {uri!r}; there is {TASK_URI}")
        try:
            query = self._session(self.key(ctx)).query()
        except (NoEpisode, UnknownSession) as exc:
            raise _no_resource(ctx, uri, f"{exc.code}: {exc}") from None
        except ServeError as exc:  # not in a session: the request is at fault
            raise MCPError(types.INVALID_REQUEST, _one_line(f"{exc.code}: {exc}")) from None
        if query is None:
            raise _no_resource(ctx, uri, "no_episode: no episode: call reset first")
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=TASK_URI, mime_type="text/plain", text=query)])

    async def refuse_discover(self, ctx: ServerRequestContext[Any, Any],
                              params: types.RequestParams) -> types.DiscoverResult:
        """HTTP: the sessionless 2026-07-28 era has no session to keep an episode in, so
        ``server/discover`` is refused and clients fall back to the initialize handshake."""
        raise MCPError(types.METHOD_NOT_FOUND, NEEDS_SESSION)

    def _build_server(self) -> Server[Any]:
        config = self.config
        server: Server[Any] = Server(
            "intercode", version=_version(), title=f"intercode {config.env}",
            instructions=(f"The intercode {config.env} environment on {config.dataset} "
                          f"({self.tasks} tasks). Call reset (a task index, or a seed) to "
                          "start an episode and read its query; execute runs an action in "
                          "your sandbox; evaluate scores the current state without ending "
                          "the episode; submit ends it with the reward. The resource "
                          f"{TASK_URI} is the current task."),
            on_list_tools=self.list_tools,
            on_list_resources=self.list_resources, on_read_resource=self.read_resource,
            on_list_resource_templates=self.list_resource_templates)
        # registered by method, not as on_call_tool, so that its answers may be wire dicts
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        if self.transport == "http":
            server.add_request_handler("server/discover", types.RequestParams,
                                       self.refuse_discover)
        return server


def _no_resource(ctx: ServerRequestContext[Any, Any], uri: str, message: str) -> MCPError:
    """The protocol's "resource not found" for ``uri``: -32002 in the handshake era's
    specifications (2025-11-25 and before), invalid params (-32602) after them, as the
    SDK's own servers answer; the URI in the error's data."""
    code = (RESOURCE_NOT_FOUND if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            else types.INVALID_PARAMS)
    return MCPError(code, _one_line(message), data={"uri": uri})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("intercode")
    except PackageNotFoundError:
        return ""
