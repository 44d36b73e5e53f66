"""``intercode serve openenv``: an intercode environment over the OpenEnv protocol.

OpenEnv's ``HTTPEnvServer`` serves an ``Environment`` factory: every WebSocket
connection (``/ws``) gets its own instance, run in its own single-thread executor (so a
blocking action of one session never stalls another), closed when the connection ends
or when the session is idle longer than ``session_timeout`` (OpenEnv's reaper). Each
:class:`IntercodeEnvironment` holds one
:class:`~intercode.integrations.serve.sessions.Session` of a shared
:class:`~intercode.integrations.serve.sessions.SessionPool`: its own sandboxes while it lives,
given back (reset, not restarted) when it closes. OpenEnv caps the connections at
``--max-sessions`` (its ``CAPACITY_REACHED`` error, sent just before it closes the
connection); :class:`Guard` refuses the handshake itself with 503 when the cap is
reached, so a client learns it before it sends anything. The pool has the same cap.

Environment calls run on the server's own pool of threads (:meth:`reset_async`,
:meth:`step_async`), not in OpenEnv's per-session executor: a sandbox dies with the
*thread* that started it (bwrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which
follows the creating thread), and OpenEnv ends a session's executor thread when the
session ends, which would kill the sandboxes of an environment the pool keeps warm.

OpenEnv's HTTP ``/reset`` and ``/step`` are stateless (each request builds an instance
and closes it), so an HTTP ``/step`` never has an episode; the WebSocket is the session.

In front of the app, :class:`Guard` checks the ``Host`` and ``Origin`` headers of every
request and WebSocket handshake (:mod:`intercode.hosts`: 421, 403), the bearer
token (401) and the size of HTTP bodies (413); uvicorn's ``ws_max_size`` closes a
connection whose message is larger (close code 1009).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from intercode.benchmarks import get
from intercode.errors import ConfigError
from intercode.hosts import HostPolicy
from intercode.integrations.serve._openenv_core import (
    CallToolAction,
    CallToolObservation,
    ConcurrencyConfig,
    Environment,
    EnvironmentMetadata,
    HTTPEnvServer,
    ListToolsAction,
    ListToolsObservation,
)
from intercode.integrations.serve.openenv import (
    IntercodeAction,
    IntercodeObservation,
    IntercodeState,
)
from intercode.integrations.serve.openenv_tools import McpBridge, call_result, list_tools
from intercode.integrations.serve.sessions import (
    NoEpisode,
    ServeConfig,
    ServeError,
    Session,
    SessionPool,
    UnknownSession,
)

__all__ = ["serve_openenv"]

# One message or HTTP body, in bytes: an action of MAX_CODE_CHARS characters fits even
# JSON-escaped (\uXXXX, 6 bytes a character); uvicorn's default WebSocket limit.
MAX_MESSAGE_BYTES = 16 << 20
SHUTDOWN_GRACE = 5  # seconds the running calls get at shutdown before they are cancelled

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HTTP_STATUS = {"busy": 503, "no_episode": 409, "unknown_session": 410,
               "infrastructure": 500, "bad_request": 400}


class ServedAction(IntercodeAction):
    """The action class the server decodes with: an :class:`IntercodeAction`, or one of
    OpenEnv's tool actions (``{"type": "list_tools"}``, ``{"type": "call_tool", ...}``),
    which OpenEnv itself decodes only for environments without an action class of
    their own."""

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """The tool action ``obj`` names by its ``type``, else an :class:`IntercodeAction`."""
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "list_tools":
            return ListToolsAction.model_validate(obj, *args, **kwargs)
        if kind == "call_tool":
            return CallToolAction.model_validate(obj, *args, **kwargs)
        return IntercodeAction.model_validate(obj, *args, **kwargs)


def _coded(exc: ServeError) -> ServeError:
    """The same error with its code in front (``busy: ...``): OpenEnv's error messages
    carry only a text, and the client reads the code back from it."""
    return type(exc)(f"{exc.code}: {exc}")


class IntercodeEnvironment(Environment):
    """One OpenEnv session: a pool session, one episode at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, pool: SessionPool, threads: ThreadPoolExecutor) -> None:
        super().__init__()
        self._pool = pool
        self._threads = threads
        self._session: Session | None = None
        self._closed = False
        self._evaluate = False
        self._query = ""
        config = pool.config
        self._state = IntercodeState(env=config.env, dataset=config.dataset,
                                     reward=config.settings.reward)
        self.mcp_client = McpBridge(config.env, self._call_tool_async)  # OpenEnv's /mcp

    # -- the protocol ----------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              **kwargs: Any) -> IntercodeObservation:
        """Start an episode: ``task`` (an index), else one drawn with ``seed``;
        ``evaluate`` makes every step's reward the Try Again score."""
        task = kwargs.pop("task", None)
        evaluate = kwargs.pop("evaluate", None)
        if kwargs:
            raise ServeError(f"bad_request: unknown reset option(s) {', '.join(sorted(kwargs))};"
                             " the options are task, seed, evaluate and episode_id")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or seed < 0):
            raise ServeError(f"bad_request: seed must be a whole number >= 0, got {seed!r}")
        if evaluate is not None and not isinstance(evaluate, bool):
            raise ServeError(f"bad_request: evaluate must be true or false, got {evaluate!r}")
        if episode_id is not None and not isinstance(episode_id, str):
            raise ServeError("bad_request: episode_id must be a string")
        session = self._open()
        try:
            got = session.reset(task=task, seed=seed)
        except ServeError as exc:
            raise _coded(exc) from exc
        self._evaluate = bool(evaluate)
        self._query = str(got["query"])
        self._state = IntercodeState(episode_id=episode_id or uuid.uuid4().hex, step_count=0,
                                     env=self._pool.config.env, dataset=got["dataset"],
                                     reward=self._pool.config.settings.reward,
                                     task=got["task"], done=False)
        info = {"dataset": got["dataset"], "evaluate": self._evaluate}
        return IntercodeObservation(output="", query=self._query, task=got["task"],
                                    info=info, reward=None, done=False,
                                    metadata={"task": got["task"], **info})

    def step(self, action: IntercodeAction | ListToolsAction | CallToolAction,
             timeout_s: float | None = None,
             **kwargs: Any) -> IntercodeObservation | ListToolsObservation | CallToolObservation:
        """Run the action; ``submit [answer]`` scores and ends, ``skip`` ends with 0.
        OpenEnv's tool actions list the tools or call one (:mod:`.openenv_tools`)."""
        if isinstance(action, ListToolsAction):
            return list_tools(self._pool.config.env)
        if isinstance(action, CallToolAction):
            return self._call_tool(action.tool_name, action.arguments)
        session = self._session
        if self._closed:
            raise _coded(self._gone())
        if session is None:
            raise _coded(NoEpisode("no episode: call reset first"))
        try:
            reward, done, info, output = self._run(session, action)
        except ServeError as exc:
            raise _coded(exc) from exc
        self._state.step_count += 1
        self._state.done = done
        info["turn"] = self._state.step_count
        exit_code = info.pop("exit_code", None)
        timed_out = bool(info.pop("timed_out", False))
        return IntercodeObservation(
            output=output, query=self._query, task=self._state.task, exit_code=exit_code,
            timed_out=timed_out, info=info, reward=reward, done=done,
            metadata={"task": self._state.task, "exit_code": exit_code,
                      "timed_out": timed_out, **info})

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                          **kwargs: Any) -> IntercodeObservation:
        """:meth:`reset` on the server's threads (see the module's notes)."""
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, functools.partial(self.reset, seed, episode_id, **kwargs))

    async def step_async(self, action: IntercodeAction | ListToolsAction | CallToolAction,
                         timeout_s: float | None = None, **kwargs: Any
                         ) -> IntercodeObservation | ListToolsObservation | CallToolObservation:
        """:meth:`step` on the server's threads (see the module's notes)."""
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, functools.partial(self.step, action, timeout_s, **kwargs))

    @property
    def state(self) -> IntercodeState:
        """The session's episode: its id, steps so far, task, and whether it ended."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The environment's name and what it serves."""
        config = self._pool.config
        benchmark = get(config.env)
        from intercode.version import __version__

        return EnvironmentMetadata(
            name=f"intercode-{config.env}",
            description=f"{benchmark.description} (dataset {config.dataset})",
            version=__version__, author="intercode",
            documentation_url="docs/serving.md")

    def close(self) -> None:
        """End the session (the connection closed, or it was idle too long)."""
        self._closed = True
        session, self._session = self._session, None
        if session is None:
            return
        try:  # on a server thread: a warm environment may restart its sandbox there
            self._threads.submit(session.close).result()
        except RuntimeError:  # the server is ending (its threads are gone)
            session.close()

    # -- OpenEnv's MCP side ------------------------------------------------------------------

    def _call_tool(self, name: object, arguments: object) -> CallToolObservation:
        observation = call_result(self._pool.config.env, name, arguments, self._tool,
                                  self._state.done)
        if observation.error is None:
            self._state.step_count += 1
            self._state.done = bool(observation.done)
        return observation

    async def _call_tool_async(self, name: object, arguments: object) -> CallToolObservation:
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, self._call_tool, name, arguments)

    def _tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise self._gone()
        session = self._session
        if session is None:
            raise NoEpisode("no episode: call reset first")
        if name == "execute":
            return session.execute(arguments["code"])
        if name == "evaluate":
            return session.evaluate()
        return session.submit(arguments.get("answer"))

    # -- internals -------------------------------------------------------------------------

    def _open(self) -> Session:
        if self._closed:
            raise _coded(self._gone())
        if self._session is None:
            try:
                self._session = self._pool.open()
            except ServeError as exc:
                raise _coded(exc) from exc
        return self._session

    def _gone(self) -> UnknownSession:
        return UnknownSession(f"this session has ended (it was idle longer than "
                              f"{self._pool.config.idle_timeout:g} s, or closed): connect "
                              "again")

    def _run(self, session: Session,
             action: IntercodeAction) -> tuple[float, bool, dict[str, Any], str]:
        code = action.code
        env = session.env
        submitted, argument = (env.parse_submit(code.strip()) if env is not None
                               and env.task is not None else (False, None))
        if submitted:
            out = session.submit(argument)
            info: dict[str, Any] = {"submitted": True, "success": out["success"],
                                    "parts": out["parts"]}
            return out["reward"], bool(out["done"]), info, str(out["output"])
        ran = session.execute(code)
        info = {"exit_code": ran["exit_code"], "timed_out": ran["timed_out"]}
        done = bool(ran["done"])
        if "reward" in ran:  # skip (or the agent broke its sandbox: the episode ended)
            info.update(skipped=code.strip() == "skip", success=False)
            return float(ran["reward"]), done, info, str(ran["output"])
        evaluate = self._evaluate if action.evaluate is None else action.evaluate
        reward = 0.0
        if evaluate and not done:
            score = session.evaluate()
            reward = float(score["reward"])
            done = bool(score.get("done", False))
            info.update(evaluated=True, success=score["success"], parts=score["parts"])
        return reward, done, info, str(ran["output"])


# -- the HTTP side ----------------------------------------------------------------------------


def _quiet_when_gone(send: Send) -> Send:
    """``send`` for a WebSocket whose messages to a vanished client are dropped.

    OpenEnv answers an action after the client that sent it was killed, then answers
    the failure of that answer, and uvicorn logs each as an ASGI error with a
    traceback. Here the first failed send marks the client gone and later ones do
    nothing; OpenEnv then reads the disconnect and ends the session as for a client
    that closed."""
    gone = False

    async def quiet(message: Message) -> None:
        nonlocal gone
        if gone:
            return
        try:
            await send(message)
        except OSError:  # uvicorn's ClientDisconnected: the peer is gone
            gone = True

    return quiet


class Guard:
    """ASGI middleware: the Host and Origin headers, the bearer token (HTTP and
    WebSocket) and the HTTP body size."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int = MAX_MESSAGE_BYTES,
                 full: Callable[[], str | None] = lambda: None,
                 hosts: HostPolicy | None = None, idle_timeout: float | None = None) -> None:
        from starlette.websockets import WebSocketDisconnect

        self.app = app
        self.idle_timeout = idle_timeout  # an attached WebSocket silent this long is closed
        self.hosts = hosts or HostPolicy("127.0.0.1")
        self.full = full  # why a new session is refused now (None: it is not)
        self.left: type[Exception] = WebSocketDisconnect
        self.expected = None if token is None else f"Bearer {token}".encode()
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.hosts.check(scope)
        if refused is not None:
            if kind == "http":
                await _respond(send, refused.status, refused.message, code=refused.code)
            else:
                await self._deny(scope, receive, send, refused.status, refused.message,
                                 refused.code)
            return
        if not self._authorized(scope):
            await self._refuse(kind, scope, receive, send)
            return
        if kind == "websocket":
            # a connection that attaches to a session made over /mcp takes no new slot
            attaches = _attaches(scope)
            busy = None if attaches else self.full()
            if busy is not None:
                await self._deny(scope, receive, send, 503, busy, "busy")
                return
            if attaches and self.idle_timeout is not None:
                # OpenEnv's reaper passes over attached sessions: the idle timeout is kept
                # here, by ending the connection (the reaper then closes the session)
                receive = _ends_when_idle(receive, self.idle_timeout)
            try:
                await self.app(scope, receive, _quiet_when_gone(send))
            except self.left:  # the client left before OpenEnv's handler closed
                pass
            return
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _respond(send, 413, f"the request body is larger than {self.max_body} "
                                      "bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _respond(send, 413, f"the request body is larger than {self.max_body} "
                                          "bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if scope.get("path") == "/mcp":
            refused_rpc = mcp_refusal(body)
            if refused_rpc is not None:
                await _respond_json(send, 200, refused_rpc)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _authorized(self, scope: Scope) -> bool:
        if self.expected is None:
            return True
        given = _header(scope, b"authorization")
        return given is not None and hmac.compare_digest(given.encode("latin-1"),
                                                         self.expected)

    async def _refuse(self, kind: str, scope: Scope, receive: Receive, send: Send) -> None:
        text = "unauthorized: a bearer token is required (Authorization: Bearer <token>)"
        if kind == "http":
            await _respond(send, 401, text, code="unauthorized")
        else:
            await self._deny(scope, receive, send, 401, text, "unauthorized")

    async def _deny(self, scope: Scope, receive: Receive, send: Send, status: int, text: str,
                    code: str) -> None:
        """Refuse a WebSocket handshake with an HTTP answer (else a policy close)."""
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await _respond(send, status, text, code=code, prefix="websocket.")
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": code})


def _attaches(scope: Scope) -> bool:
    """Whether a WebSocket handshake names an existing session (``?session_id=``, how
    OpenEnv's ``MCPToolClient`` joins the session it made over ``/mcp``), read as
    OpenEnv reads it (Starlette's query parameters: the last value, blanks kept), so
    that ``?session_id=x&session_id=`` (a new session for OpenEnv) is not taken for
    one that joins."""
    from starlette.datastructures import QueryParams

    return bool(QueryParams(bytes(scope.get("query_string", b""))).get("session_id"))


def _ends_when_idle(receive: Receive, idle_timeout: float) -> Receive:
    """``receive`` for a WebSocket that ends (a client disconnect, for the app) when the
    client sends nothing for ``idle_timeout`` seconds while the app waits for it; the
    time an action runs does not count."""

    async def receive_or_end() -> Message:
        try:
            return await asyncio.wait_for(receive(), idle_timeout)
        except TimeoutError:
            return {"type": "websocket.disconnect", "code": 1001}

    return receive_or_end


def mcp_refusal(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a ``/mcp`` request whose ``session_id`` is not a string
    (OpenEnv looks it up in its tables as it comes: a list or an object was a 500 and
    a traceback in the log), else None (OpenEnv answers the request)."""
    try:
        request = json.loads(body)
    except ValueError:
        return None
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(params, dict) or isinstance(params.get("session_id"), str | None):
        return None
    rid = request.get("id")
    return {"jsonrpc": "2.0", "id": rid if isinstance(rid, str | int) else None,
            "error": {"code": -32602, "data": None,
                      "message": "Invalid params - 'session_id' must be a string"}}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _respond(send: Send, status: int, detail: str, code: str = "bad_request",
                   prefix: str = "") -> None:
    await _respond_json(send, status, {"detail": detail, "code": code}, prefix)


async def _respond_json(send: Send, status: int, data: dict[str, Any],
                        prefix: str = "") -> None:
    body = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": f"{prefix}http.response.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}http.response.body", "body": body})


def build_app(pool: SessionPool, token: str | None = None,
              max_body: int = MAX_MESSAGE_BYTES, host: str = "127.0.0.1",
              allowed_hosts: Sequence[str] = ()) -> Guard:
    """The ASGI app serving ``pool``'s environment (OpenEnv's routes behind a guard);
    ``host``: the address it listens on, ``allowed_hosts``: ``--allowed-host``."""
    hosts = HostPolicy(host, allowed_hosts)
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from intercode.version import __version__

    config = pool.config
    app = FastAPI(title=f"intercode {config.env} ({config.dataset}) over OpenEnv",
                  version=__version__,
                  description="An intercode environment over the OpenEnv protocol: a session "
                              "per WebSocket on /ws (docs/serving.md).")
    # a call in flight per session at most, and a few stateless HTTP ones; threads live
    # until the server ends, and so may the sandboxes started on them
    threads = ThreadPoolExecutor(max_workers=config.max_sessions + 8,
                                 thread_name_prefix="intercode-env")
    server = HTTPEnvServer(
        functools.partial(IntercodeEnvironment, pool, threads), ServedAction,
        IntercodeObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=config.max_sessions,
                                             session_timeout=config.idle_timeout))
    server.register_routes(app)

    def full() -> str | None:
        if server.active_sessions < server.max_concurrent_envs:
            return None
        return f"busy: all {server.max_concurrent_envs} sessions are in use; try again later"

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        code = getattr(exc, "code", "bad_request")
        detail = str(exc)
        if code == "no_episode" and request.url.path == "/step":
            detail += (" (OpenEnv's HTTP /step is stateless: every request gets a fresh "
                       "environment; hold a session on the WebSocket /ws, e.g. with "
                       "intercode.integrations.serve.openenv.IntercodeEnvClient)")
        return JSONResponse({"detail": detail, "code": code},
                            status_code=HTTP_STATUS.get(code, 400))

    app.add_exception_handler(ServeError, refused)

    async def close_pool() -> None:  # uvicorn's shutdown, after the connections closed
        await asyncio.get_running_loop().run_in_executor(threads, pool.shutdown)
        threads.shutdown(wait=False)

    app.router.on_shutdown.append(close_pool)
    return Guard(app, token, max_body, full, hosts, idle_timeout=config.idle_timeout)


def serve_openenv(config: ServeConfig, host: str = "127.0.0.1", port: int = 8000,
                  token: str | None = None, log_level: str = "warning",
                  allowed_hosts: Sequence[str] = ()) -> None:
    """Serve until interrupted (SIGINT/SIGTERM); prints the address once listening."""
    import uvicorn

    HostPolicy(host, allowed_hosts)  # a bad --allowed-host fails before the pool starts
    pool = SessionPool(config)
    pool.check()  # a bad configuration fails now, not at the first client
    app = build_app(pool, token, host=host, allowed_hosts=allowed_hosts)

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                bound = [s.getsockname() for srv in self.servers for s in srv.sockets]
                shown = bound[0][1] if bound else port
                name = f"[{host}]" if ":" in host else host
                print(f"intercode serve openenv: {config.env} ({config.dataset}) on "
                      f"http://{name}:{shown} (WebSocket ws://{name}:{shown}/ws), "
                      f"{config.max_sessions} sessions at most", flush=True)

    # uvicorn ends a SIGTERM/SIGINT by raising the signal again after its shutdown (the
    # pool closes in the app's shutdown, above); the finally is for the other ends
    logging.getLogger("uvicorn.error").addFilter(_quiet_denials)
    server = Server(uvicorn.Config(app, host=host, port=port, ws_max_size=MAX_MESSAGE_BYTES,
                                   log_level=log_level, lifespan="on",
                                   timeout_graceful_shutdown=SHUTDOWN_GRACE))
    try:
        server.run()
    finally:
        pool.shutdown()
    if not server.started:
        raise ConfigError(f"cannot serve on {host}:{port} (see the message above)")


def _quiet_denials(record: logging.LogRecord) -> bool:
    """Drop uvicorn's error line after a refused WebSocket handshake (401, 503): its
    websockets-sansio protocol sends the HTTP answer but never marks the handshake as
    done, then logs "ASGI callable returned without completing handshake"."""
    return record.getMessage() != "ASGI callable returned without completing handshake."

