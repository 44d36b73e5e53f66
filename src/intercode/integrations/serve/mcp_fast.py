"""``tools/call`` over streamable HTTP answered in the POST's own task.

The MCP SDK's stateful streamable-HTTP path hands every request from the POST's task to
the session's task over a memory stream, starts a task for it there, and hands the
answer back over two more streams: about a quarter of a millisecond per call on this
project's machines, a quarter of the protocol overhead of a step (docs/serving.md,
Performance). :class:`FastCalls` answers the one hot request, a ``tools/call`` of one of
this server's tools, without those hops, with the SDK's own parts in the SDK's order:

- the request still goes through the SDK's session manager and the session's transport
  (after the guard's Host/Origin check, :mod:`intercode.hosts`): the session
  lookup, the idle clock (a request in flight holds the session), the terminated check,
  the ``Accept`` and ``Content-Type`` checks and the session-header check are the SDK's
  own code;
- the message is parsed and validated by the SDK's JSON-RPC adapter, its params by the
  protocol version's request surface (``mcp_types.methods.validate_client_request``)
  and by ``CallToolRequestParams``;
- the tool's answer is shaped by the version's result surface
  (``mcp_types.methods.serialize_server_result``) and sent as the SDK's transport
  sends a JSON answer (``JSONRPCResponse`` dumped by the transport).

It answers only when nothing else could matter: the session's ``initialize`` was
answered with a protocol version (taken from the SDK's own answer) and the request's
``MCP-Protocol-Version`` header names that version (or is absent, as from clients of
protocols before 2025-06-18: the SDK then serves the negotiated version too); the
server has no middleware (no tracing) and no cache hint for ``tools/call``; the message
is one request whose params carry no ``_meta`` (progress tokens, log levels: they need
the SDK's request context) and name one of the tools. Anything else, and anything that
does not validate, goes to the SDK's path unchanged (the body the fast path read is
cached on the request the SDK reads it from), so every error answer is the SDK's. A
later ``initialize`` on the session turns the fast path off for it.

What differs: a ``notifications/cancelled`` for a call answered here finds no request
to cancel in the SDK and is ignored (the protocol lets a receiver ignore it; the
server never stops an action halfway anyway, a call's turn passes on when its worker
thread is done). The fast path leans on six private names of the SDK's transport and
session manager (``_server_instances``, the underscored ones of :data:`_PRIVATE`);
:func:`supported` checks them when the server starts, and without them every request
takes the SDK's path (``tests/serve/test_mcp_fast.py`` fails on the SDK versions it
knows if the fast path is not taken).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.streamable_http import (
    MCP_SESSION_ID_HEADER,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import methods
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from intercode.integrations.serve.mcp_server import McpService

__all__ = ["FastCalls"]

log = logging.getLogger(__name__)

METHOD = "tools/call"
_PRIVATE = ("_handle_post_request", "_check_content_type", "_validate_request_headers",
            "_create_json_response", "_create_error_response", "terminate")
_OPENING_MAX = 1 << 16  # bytes of an initialize answer read for its protocol version
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower()
_SID = MCP_SESSION_ID_HEADER.lower().encode("latin-1")

Post = Callable[[Scope, Request, Receive, Send], Awaitable[None]]


def supported(manager: StreamableHTTPSessionManager) -> bool:
    """Whether this SDK has the parts the fast path uses."""
    return (isinstance(getattr(manager, "_server_instances", None), dict)
            and all(callable(getattr(StreamableHTTPServerTransport, name, None))
                    for name in _PRIVATE))


@dataclass
class _Attached:
    """What the fast path knows of one client session."""

    version: str  # the protocol version the SDK's initialize answer gave
    on: bool = True  # off after another initialize on the session
    calls: set[anyio.CancelScope] = field(default_factory=set)  # calls in flight


class FastCalls:
    """The ``tools/call`` fast path of one server (see the module docstring)."""

    def __init__(self, service: McpService, manager: StreamableHTTPSessionManager) -> None:
        self.service = service
        self.manager = manager
        self.enabled = supported(manager)
        if not self.enabled:
            log.warning("this mcp SDK lacks what the tools/call fast path uses; every call "
                        "takes the SDK's path")
        self.answered = 0  # calls answered here (tests and benchmarks read it)
        self.attached: dict[str, _Attached] = {}  # by session id, until it ends

    async def opening(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST without a session: let the SDK answer it; if it was an ``initialize``
        the SDK accepted, attach the fast path to the new session's transport."""
        status = 0
        sid: str | None = None
        body = bytearray()

        async def watch(message: Message) -> None:
            nonlocal status, sid
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", ()):
                    if name.lower() == _SID:
                        sid = value.decode("latin-1")
            elif message["type"] == "http.response.body" and len(body) <= _OPENING_MAX:
                body.extend(message.get("body", b""))
            await send(message)

        await app(scope, receive, watch)
        if status != 200 or sid is None or len(body) > _OPENING_MAX:
            return
        try:
            answer = json.loads(body)
            version = answer["result"]["protocolVersion"]
        except (ValueError, KeyError, TypeError):
            return  # not an accepted initialize: the fast path stays off for it
        if isinstance(version, str):
            self.attach(sid, version)

    def attach(self, sid: str, version: str) -> None:
        """Answer the session's ``tools/call`` requests here from now on."""
        if not self.enabled:
            return
        transport = self.manager._server_instances.get(sid)
        if transport is None or transport.is_terminated or not transport.is_json_response_enabled:
            return
        attached = _Attached(version)
        sdk_post: Post = transport._handle_post_request
        sdk_terminate: Callable[[], Awaitable[None]] = transport.terminate

        async def terminate() -> None:
            """The session ends (DELETE, idle expiry, shutdown): as on the SDK's path,
            its calls in flight end at once, answered 500."""
            self.attached.pop(sid, None)
            for scope in list(attached.calls):
                scope.cancel()
            await sdk_terminate()

        # the transport's own methods, replaced on this one transport only
        setattr(transport, "_handle_post_request",  # noqa: B010
                functools.partial(self._post, transport, sdk_post, attached))
        setattr(transport, "terminate", terminate)  # noqa: B010
        self.attached[sid] = attached

    async def _post(self, transport: StreamableHTTPServerTransport, sdk_post: Post,
                    attached: _Attached, scope: Scope, request: Request, receive: Receive,
                    send: Send) -> None:
        """The transport's POST handler: a plain ``tools/call`` here, the rest to the SDK."""
        if (not attached.on or not check_accept_headers(request)[0]
                or not transport._check_content_type(request)):
            await sdk_post(scope, request, receive, send)  # the SDK reads no body
            return
        try:
            body = await request.body()  # cached on `request`: the SDK's path reads it again
        except Exception:  # the client left mid-body: the SDK answers it (its 500)
            await sdk_post(scope, request, receive, send)
            return
        # before the checks below: a second initialize sent under any version header, or
        # with a middleware, is the SDK's, and it negotiates the version anew
        plain = self._plain_call(body, attached)
        server = self.service.server
        if (plain is None or server.middleware or METHOD in server.cache_hints
                or request.headers.get(_VERSION, attached.version) != attached.version):
            await sdk_post(scope, request, receive, send)
            return
        message, params = plain
        try:
            if not await transport._validate_request_headers(request, send):
                return  # the SDK answered (no or another session id)
            with anyio.CancelScope() as call:
                attached.calls.add(call)
                try:
                    result = await self.service.tool(transport.mcp_session_id or "", params)
                finally:
                    attached.calls.discard(call)
            if call.cancelled_caught:  # the SDK's answer to a call its session outlived
                response = transport._create_error_response(
                    "Session terminated before the request completed",
                    HTTPStatus.INTERNAL_SERVER_ERROR, types.INTERNAL_ERROR)
                await response(scope, receive, send)
                return
            if isinstance(result, types.CallToolResult):
                result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            result = methods.serialize_server_result(METHOD, attached.version, result)
            answer = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
            response = transport._create_json_response(answer)
        except Exception:  # as the SDK's POST handler answers what it did not foresee
            log.exception("error handling a tools/call")
            response = transport._create_error_response(
                "Error handling POST request", HTTPStatus.INTERNAL_SERVER_ERROR,
                types.INTERNAL_ERROR)
        self.answered += 1
        await response(scope, receive, send)

    def _plain_call(self, body: bytes, attached: _Attached
                    ) -> tuple[types.JSONRPCRequest, types.CallToolRequestParams] | None:
        """The message, if it is one plain ``tools/call`` of one of the tools that
        validates for the session's protocol version (else None: the SDK's path)."""
        try:
            raw = pydantic_core.from_json(body)
        except ValueError:
            return None
        if not isinstance(raw, dict):
            return None
        method = raw.get("method")
        if method == "initialize":  # a second handshake: the SDK's from now on
            attached.on = False
            return None
        params = raw.get("params")
        if (method != METHOD or not isinstance(params, dict) or "_meta" in params
                or params.get("name") not in self.service.params):
            return None
        try:
            message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
            if not isinstance(message, types.JSONRPCRequest):
                return None
            methods.validate_client_request(METHOD, attached.version, params)
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except Exception:  # the SDK's path answers it as the SDK does
            return None
        return message, typed
