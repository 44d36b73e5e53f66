"""A TCP service on the host that greets every client: what a sandbox must (or must not)
reach in the network tests of both backends."""

from __future__ import annotations

import socket
import threading


class HostListener:
    """Listens on ``address`` (a free port) and sends ``greeting`` to every client."""

    def __init__(self, greeting: bytes, address: str = "127.0.0.1") -> None:
        self.greeting = greeting
        self.sock = socket.create_server((address, 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                conn.sendall(self.greeting)

    def close(self) -> None:
        self.sock.close()
