"""A local HTTP server that speaks the Chat Completions protocol and plays scripted answers.

For tests, benchmarks and trying a set-up without a model: the real ``openai`` client
talks to it over HTTP exactly as to a hosted model. A *responder* turns each request
into a :class:`Reply`: a text answer, an HTTP error (with headers such as
``Retry-After``), a slow answer, a malformed body, or a dropped connection.

>>> with ScriptedChatServer(lambda request: Reply("```bash\\nls\\n```")) as server:
...     url = server.url          # http://127.0.0.1:<port>/v1
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    finish_reason: str = "stop"


Responder = Callable[[dict[str, Any]], Reply]


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
    Every request is kept in ``requests`` (JSON body plus the ``authorization`` header).
    """

    def __init__(self, responder: Responder, api_key: str | None = None,
                 model: str = "scripted") -> None:
        self.responder = responder
        self.api_key = api_key
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
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
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()

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

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": server.model, "object": "model",
                                                        "owned_by": "intercode"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
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
                elif reply.status != 200:
                    body = reply.body if reply.body is not None else {
                        "error": {"message": f"scripted error {reply.status}", "type": "server"}}
                    self._send(reply.status, json.dumps(body).encode(), reply.headers)
                else:
                    self._send(200, json.dumps(server._completion(request, reply)).encode(),
                               reply.headers)

        return Handler

    def _completion(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        text = reply.text or ""
        prompt = sum(_tokens(str(m.get("content", ""))) for m in request.get("messages", []))
        return {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": _tokens(text),
                      "total_tokens": prompt + _tokens(text)},
        }
