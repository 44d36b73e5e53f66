"""Host side of a Docker sandbox's direct line: a unix socket its pid 1 connects to.

Each frame on the engine's attach stream crosses the engine and the container's shim
both ways; on a Linux host whose engine is local, a step's frames take a unix socket
between this process and the container's pid 1 instead (``inbox/link.py`` inside). The
host makes a private directory per sandbox, listens there on a socket with a random
name, and the engine binds the directory into the container (read-only: connecting
needs no write access to the mount). The configuration frame, sent on the attach
stream as before, names the socket and a random token; pid 1 connects while it is
still root, before it builds the agent's root (whose making detaches the bind) and
before any agent input, and sends the token first.

The host takes exactly one connection, the first that sends the token: others are
closed, and once the sandbox's own has come, the listener is closed and the socket and
directory removed. The directory is the host user's, mode 700 (711 for a user other than
root: the container's root, without ``CAP_DAC_OVERRIDE``, must pass through it; its
listing stays closed), the socket 600 (666) with a random name, bound through a
descriptor of the directory (``/proc/net/unix`` shows that address, which names no
directory: the accepted end shows it in the container's too). For a user other than
root, another local user can still find the socket (the directory's name in the temporary
directory, the socket's in ``/proc/net/unix``) and connect: the token, which only the
attach stream carries, is what admits a connection; such a user can at most hold a start
up or, in ``auto``, send it to the attach stream.

``$INTERCODE_DOCKER_STREAM`` picks the path: ``attach`` (the engine's stream only),
``socket`` (the socket or an error), ``auto`` (the default: the socket on Linux when
the container can connect, else the attach stream: Docker Desktop's file sharing does
not carry unix sockets, and a host in a container of its own may have paths the engine
cannot see). The attach stream stays open either way: it carries the configuration,
the container's stderr, and the end of its stdin ends the sandbox (the host's death).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import select
import socket
import stat
import sys
import tempfile

from intercode.errors import ConfigError

__all__ = ["ENV", "Listener", "stream_mode", "wanted"]

ENV = "INTERCODE_DOCKER_STREAM"
MODES = ("attach", "socket", "auto")
TARGET = "/.intercode-link"  # where the directory appears in the container
TOKEN_BYTES = 32
PREFIX = "intercode-link-"
PENDING = 8  # connections waiting for their token, at most (the oldest closed past it)


def stream_mode() -> str:
    """``$INTERCODE_DOCKER_STREAM`` (``auto`` if unset)."""
    value = (os.environ.get(ENV) or "auto").strip().lower()
    if value not in MODES:
        raise ConfigError(f"{ENV} must be one of {', '.join(MODES)}, not {value!r}")
    return value


_swept = False


def sweep(tmp: str | None = None) -> int:
    """Remove the directories of processes of this user that no longer exist (one killed
    during a sandbox's start, before its pid 1 connected); how many."""
    tmp = tmp or tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(tmp)
    except OSError:
        return 0
    for name in names:
        pid = name[len(PREFIX):].partition("-")[0]
        if not name.startswith(PREFIX) or not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
            continue
        path = os.path.join(tmp, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            for entry in os.listdir(path):
                if stat.S_ISSOCK(os.lstat(os.path.join(path, entry)).st_mode):
                    os.unlink(os.path.join(path, entry))
            os.rmdir(path)
            removed += 1
        except OSError:
            continue
    return removed


def wanted(mode: str) -> bool:
    """Whether a sandbox tries the socket in ``mode`` (``auto``: on Linux only)."""
    return mode == "socket" or (mode == "auto" and sys.platform.startswith("linux"))


class Listener:
    """A sandbox's socket, waiting for its pid 1 (see the module docstring)."""

    def __init__(self, required: bool) -> None:
        self.required = required
        global _swept
        if not _swept:
            _swept = True
            sweep()
        self.token = secrets.token_bytes(TOKEN_BYTES)
        self.dir = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
        self.name = secrets.token_hex(16)
        self.path = os.path.join(self.dir, self.name)
        self._pending: dict[int, tuple[socket.socket, bytearray]] = {}
        self.sock: socket.socket | None = None
        self._dir_fd = -1
        try:
            root = os.geteuid() == 0
            os.chmod(self.dir, 0o700 if root else 0o711)
            self._dir_fd = os.open(self.dir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            sock = self.sock = socket.socket(socket.AF_UNIX,
                                             socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            # bound through the directory's descriptor: the socket's address is what the
            # accepted end shows in the container's /proc/net/unix (it is made in the
            # connecting side's network namespace), which so names no host path; and a
            # long $TMPDIR does not matter
            sock.bind(f"/proc/self/fd/{self._dir_fd}/{self.name}")
            os.chmod(self.name, 0o600 if root else 0o666, dir_fd=self._dir_fd)
            sock.listen(PENDING)
            sock.setblocking(False)
        except OSError:
            self.close()
            raise

    def mount(self) -> dict[str, object]:
        """The bind of the directory, for the container's ``HostConfig.Mounts``."""
        return {"Type": "bind", "Source": self.dir, "Target": TARGET, "ReadOnly": True}

    def spec(self) -> dict[str, object]:
        """What pid 1 is told (in the configuration frame)."""
        return {"path": f"{TARGET}/{self.name}", "token": self.token.hex(),
                "required": self.required}

    def fds(self) -> list[int]:
        """What to poll: the listener and the connections waiting for their token."""
        return [*([] if self.sock is None else [self.sock.fileno()]), *self._pending]

    def take(self, ready: set[int]) -> socket.socket | None:
        """Accept and check what ``ready`` (descriptors a poll reported) has: the
        connection that sent the token (non-blocking), or ``None`` yet."""
        if self.sock is not None and self.sock.fileno() in ready:
            # a connection's token is read as it is accepted: pid 1 sends it with its
            # connect, so a flood of others cannot push it out before it is read
            ready = ready | self._accept()
        for fd in [fd for fd in self._pending if fd in ready]:
            conn, got = self._pending[fd]
            try:
                data = conn.recv(TOKEN_BYTES - len(got))
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            got += data
            if data and len(got) < TOKEN_BYTES:
                continue
            del self._pending[fd]
            if data and hmac.compare_digest(bytes(got), self.token):
                return conn
            conn.close()  # a wrong token, or closed before it was whole
        while len(self._pending) > PENDING:  # silent ones: the oldest go
            oldest = next(iter(self._pending))
            self._pending.pop(oldest)[0].close()
        return None

    def _accept(self) -> set[int]:
        """Accept what waits; the new connections' descriptors."""
        assert self.sock is not None
        new: set[int] = set()
        for _ in range(4 * PENDING):  # the rest at the next poll (a flood: few descriptors)
            try:
                conn, _ = self.sock.accept()
            except OSError:  # none waiting (BlockingIOError) or a failed one
                return new
            conn.setblocking(False)
            self._pending[conn.fileno()] = (conn, bytearray())
            new.add(conn.fileno())
        return new

    def wait(self, other: int, timeout: float) -> set[int]:
        """Descriptors ready among :meth:`fds` and ``other`` within ``timeout`` s."""
        poller = select.poll()
        for fd in [*self.fds(), other]:
            poller.register(fd, select.POLLIN)
        return {fd for fd, _ in poller.poll(max(0.0, timeout) * 1000.0)}

    def close(self) -> None:
        """Stop listening (no other connection is taken), close the waiting ones and
        remove the socket and its directory (idempotent)."""
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()
        for conn, _ in self._pending.values():
            conn.close()
        self._pending.clear()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1
