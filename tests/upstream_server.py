"""A local stand-in for the data's upstream host (raw.githubusercontent.com at the pinned
revision): files under a folder served over HTTP, the requests recorded, the body
optionally altered (a corrupt or a longer download). Tests point ``INTERCODE_DATA_URL``
at :attr:`Served.url`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

Alter = Callable[[Path, bytes], bytes]


@dataclass
class Served:
    url: str
    requests: list[str] = field(default_factory=list)


@contextmanager
def serve_files(root: Path, alter: Alter | None = None) -> Iterator[Served]:
    """Serve ``root``'s files (``GET /<path under root>``; anything else is a 404), each
    body passed through ``alter(path, body)`` when given."""
    state = Served("")
    top = root.resolve()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            rel = self.path.lstrip("/")
            path = (root / rel).resolve()
            if not rel or top not in path.parents or not path.is_file():
                self.send_error(404)
                return
            body = path.read_bytes()
            if alter is not None:
                body = alter(path, body)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
