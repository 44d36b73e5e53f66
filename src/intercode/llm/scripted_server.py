"""A local HTTP server that speaks the Chat Completions protocol and plays scripted answers.

For tests, benchmarks and trying a set-up without a model: the real ``openai`` client
talks to it over HTTP exactly as to a hosted model. A *responder* turns each request
into a :class:`Reply`: a text answer, tool calls, an HTTP error (with headers such as
``Retry-After``), a slow answer, a malformed body, or a dropped connection. A request
with ``"stream": true`` is answered with server-sent events, as OpenAI streams (content
and tool-call deltas in small pieces, usage in a last chunk when asked for), which a
reply can cut mid-way (``cut_after``) or stall (``stall``). :func:`refusing` wraps a
responder in a server that refuses parameters the way OpenAI's reasoning models do.

>>> with ScriptedChatServer(lambda request: Reply("```bash\\nls\\n```")) as server:
...     url = server.url          # http://127.0.0.1:<port>/v1
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from intercode.hosts import HostPolicy

__all__ = ["Reply", "ScriptedChatServer", "call"]


@dataclass(frozen=True)
class Reply:
    """What the server does with one request.

    ``text``: a normal completion. ``status``: an HTTP error with ``body`` (JSON error
    object by default) and ``headers``. ``raw``: this exact body with status 200 (a
    malformed answer). ``delay``: seconds to wait first. ``drop``: close the connection
    without answering.
    """

    text: str | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0
    drop: bool = False
    finish_reason: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    reasoning_tokens: int | None = None
    cut_after: int | None = None
    stall: float = 0.0

    @property
    def finish(self) -> str:
        """``stop``, or ``tool_calls`` when the reply calls tools (unless set)."""
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


def call(name: str, arguments: Any, call_id: str | None = None) -> tuple[str, str, str]:
    """A tool call of a :class:`Reply` (``arguments``: a dict, sent as JSON, or raw text)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    digest = hashlib.sha256(f"{name}\0{raw}".encode()).hexdigest()[:12]
    return (call_id or f"call_{digest}", name, raw)


Responder = Callable[[dict[str, Any]], Reply]

# how OpenAI's reasoning models refuse what older models take
REFUSALS = {
    "max_tokens": ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                   "Use 'max_completion_tokens' instead.", "unsupported_parameter"),
    "temperature": ("Unsupported value: 'temperature' does not support 0 with this model. "
                    "Only the default (1) value is supported.", "unsupported_value"),
    "top_p": ("Unsupported parameter: 'top_p' is not supported with this model.",
              "unsupported_parameter"),
    "stop": ("Unsupported parameter: 'stop' is not supported with this model.",
             "unsupported_parameter"),
}


def refusing(responder: Responder, params: Iterable[str] = ("max_tokens", "temperature"),
             with_param: bool = True) -> Responder:
    """``responder`` behind a 400 for each request that sends one of ``params``, worded
    as OpenAI's (``with_param=False``: without the ``param`` field, as servers that only
    say it in the message)."""
    refused = tuple(params)

    def respond(request: dict[str, Any]) -> Reply:
        for name in refused:
            if name in request:
                message, code = REFUSALS[name]
                error = {"message": message, "type": "invalid_request_error", "code": code}
                if with_param:
                    error["param"] = name
                return Reply(status=400, body={"error": error})
        return responder(request)

    return respond


def sequence(replies: Iterable[Reply | str]) -> Responder:
    """A responder that plays ``replies`` in order (then repeats the last one)."""
    items = [r if isinstance(r, Reply) else Reply(r) for r in replies]
    lock = threading.Lock()
    position = [0]

    def respond(_: dict[str, Any]) -> Reply:
        with lock:
            i = min(position[0], len(items) - 1)
            position[0] += 1
        return items[i]

    return respond


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedChatServer:
    """``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (a free port).

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get 401.
    A foreign ``Host`` or ``Origin`` (a web page's) gets 421 or 403, as from every server
    of the project (:mod:`intercode.hosts`).
    Every request is kept in ``requests`` (JSON body plus the ``authorization`` header).
    """

    def __init__(self, responder: Responder, api_key: str | None = None,
                 model: str = "scripted") -> None:
        self.responder = responder
        self.api_key = api_key
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()  # connections kept alive
        self._hosts = HostPolicy("127.0.0.1")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give the client."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedChatServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, and cut the connections kept alive (as a server that goes down
        does: a client's next call finds nothing listening)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            open_now, self._open = list(self._open), set()
        for conn in open_now:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle's algorithm
                # and delayed ACKs add 40 ms to every answer
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server._open.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._open.discard(self.connection)
                super().finish()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except (ConnectionResetError, BrokenPipeError):
                    pass  # the client closed a stream it had read to its end: not an error

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _refused(self) -> bool:
                """Answer a foreign Host or Origin (and close: a body may be unread)."""
                refused = server._hosts.refusal(
                    self.headers.get_all("Host") or [], self.headers.get_all("Origin") or [],
                    server._httpd.server_address[1])
                if refused is None:
                    return False
                self.close_connection = True
                self._send(refused.status, json.dumps({"error": {
                    "message": refused.message, "type": refused.code}}).encode(),
                    {"Connection": "close"})
                return True

            def do_GET(self) -> None:
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": server.model, "object": "model",
                                                        "owned_by": "intercode"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                if self._refused():
                    return
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "unknown path", "type": "invalid"}}')
                    return
                try:
                    request = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "invalid JSON"}}')
                    return
                auth = self.headers.get("Authorization", "")
                with server._lock:
                    server.requests.append({**request, "authorization": auth})
                if server.api_key is not None and auth != f"Bearer {server.api_key}":
                    self._send(401, json.dumps({"error": {
                        "message": "Incorrect API key provided", "type": "invalid_request_error",
                        "code": "invalid_api_key"}}).encode())
                    return
                reply = server.responder(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if reply.raw is not None:
                    self._send(200, reply.raw)
                elif reply.status == 200 and request.get("stream"):
                    self._stream(server._chunks(request, reply), reply)
                elif reply.status != 200:
                    body = reply.body if reply.body is not None else {
                        "error": {"message": f"scripted error {reply.status}", "type": "server"}}
                    self._send(reply.status, json.dumps(body).encode(), reply.headers)
                else:
                    self._send(200, json.dumps(server._completion(request, reply)).encode(),
                               reply.headers)

            def _stream(self, chunks: list[dict[str, Any]], reply: Reply) -> None:
                """Server-sent events, chunked; cut after ``cut_after`` events, or stalled
                for ``stall`` seconds after the first."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
                events.append(b"data: [DONE]\n\n")
                try:
                    for i, event in enumerate(events):
                        if reply.cut_after is not None and i >= reply.cut_after:
                            self.close_connection = True
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if i == 1 and reply.stall:
                            time.sleep(reply.stall)
                        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client gave up (a stalled stream timed out)
                    self.close_connection = True

        return Handler

    def _usage(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        out = (reply.text or "") + "".join(c[2] for c in reply.tool_calls)
        prompt = sum(_tokens(str(m.get("content", ""))) for m in request.get("messages", []))
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": _tokens(out),
                                 "total_tokens": prompt + _tokens(out)}
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        return usage

    def _completion(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in reply.tool_calls]
        elif reply.text is None:
            message["content"] = ""
        return {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": reply.finish, "message": message}],
            "usage": self._usage(request, reply),
        }

    def _chunks(self, request: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
        """The reply as ``chat.completion.chunk`` objects: the text in pieces of 7
        characters, each tool call's arguments in pieces of 5, the usage last."""
        base = {"id": f"chatcmpl-scripted-{len(self.requests)}",
                "object": "chat.completion.chunk", "created": int(time.time()),
                "model": request.get("model", self.model)}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        text = reply.text or ""
        chunks += [chunk({"content": text[i:i + 7]}) for i in range(0, len(text), 7)]
        for index, (cid, name, args) in enumerate(reply.tool_calls):
            chunks.append(chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                                 "function": {"name": name,
                                                              "arguments": ""}}]}))
            chunks += [chunk({"tool_calls": [{"index": index,
                                              "function": {"arguments": args[i:i + 5]}}]})
                       for i in range(0, len(args), 5)]
        chunks.append(chunk({}, reply.finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": self._usage(request, reply)})
        return chunks
