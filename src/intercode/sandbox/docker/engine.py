"""A minimal client of the Docker Engine API over its unix socket (no SDK, no CLI).

Only what the Docker backend needs: create, attach, start, remove and list
containers, and look at images. Talking to the socket directly saves the ``docker``
CLI's start (tens of milliseconds a call) and one relay hop per step.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from pathlib import Path
from typing import Any

from intercode.errors import SandboxError, SandboxUnavailableError

__all__ = ["DockerEngine", "message"]

API_TIMEOUT = 60.0


def socket_path() -> str:
    """The engine's socket: ``$DOCKER_HOST`` (``unix://`` only), else the usual places
    (``/var/run/docker.sock``; Docker Desktop's ``~/.docker/run/docker.sock``)."""
    host = os.environ.get("DOCKER_HOST", "")
    if host:
        if not host.startswith("unix://"):
            raise SandboxUnavailableError(
                f"DOCKER_HOST={host}: the docker sandbox talks to a local engine over its unix "
                "socket only (unix:///path/docker.sock)")
        return host[len("unix://"):]
    for path in ("/var/run/docker.sock", str(Path.home() / ".docker/run/docker.sock")):
        if os.path.exists(path):
            return path
    return "/var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class DockerEngine:
    """The Docker engine at ``path`` (a unix socket)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or socket_path()

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
             timeout: float = API_TIMEOUT) -> tuple[int, Any]:
        """``(status, decoded JSON or None)`` of one API request."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        conn = _UnixConnection(self.path, timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except FileNotFoundError as exc:
            raise SandboxUnavailableError(
                f"no Docker engine socket at {self.path} (is dockerd running? see "
                "docs/docker.md)") from exc
        except PermissionError as exc:
            raise SandboxUnavailableError(
                f"no permission to use the Docker engine socket {self.path} (join the "
                "`docker` group or run as a user that may)") from exc
        except OSError as exc:
            raise SandboxError(f"the Docker engine at {self.path} failed: {exc}") from exc
        finally:
            conn.close()
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return resp.status, decoded

    def ok(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
           accept: tuple[int, ...] = (200, 201, 204), timeout: float = API_TIMEOUT) -> Any:
        """The decoded reply of a request that must succeed, else :class:`SandboxError`."""
        status, reply = self.call(method, path, body, query, timeout)
        if status not in accept:
            raise SandboxError(f"Docker engine: {method} {path.split('?')[0]} failed "
                               f"({status}): {message(reply)}")
        return reply

    def ping(self) -> str:
        """The engine's API version (raises if none answers)."""
        reply = self.ok("GET", "/version", timeout=10.0)
        return str(reply.get("ApiVersion", "?")) if isinstance(reply, dict) else "?"

    def attach(self, container: str, timeout: float = API_TIMEOUT) -> tuple[socket.socket, bytes]:
        """A raw stream of ``container``'s stdin and (multiplexed) stdout and stderr, and
        the first bytes already read from it."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.path)
            sock.sendall((f"POST /containers/{container}/attach?stream=1&stdin=1&stdout=1"
                          "&stderr=1 HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\n"
                          "Upgrade: tcp\r\nContent-Length: 0\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    raise SandboxError("the Docker engine closed the attach connection")
                head += chunk
        except OSError as exc:
            sock.close()
            raise SandboxError(f"cannot attach to the sandbox container: {exc}") from exc
        header, _, rest = head.partition(b"\r\n\r\n")
        status = header.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" " and b" 200 " not in status + b" ":
            sock.close()
            raise SandboxError(f"cannot attach to the sandbox container: "
                               f"{status.decode('latin-1')}")
        sock.settimeout(None)
        return sock, rest


def message(reply: Any) -> str:
    """The engine's error message in a reply."""
    if isinstance(reply, dict) and "message" in reply:
        return str(reply["message"])
    return str(reply)[:300]
