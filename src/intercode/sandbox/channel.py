"""Host side of the control channel to the in-sandbox supervisor."""

from __future__ import annotations

import os
import time
from typing import Any

from intercode.errors import SandboxError, SandboxSpentError
from intercode.sandbox import fdwait
from intercode.sandbox.inbox import proto
from intercode.sandbox.inbox.schema import NO_REPLY, REQUESTS
from intercode.sandbox.requests import Request

__all__ = ["Channel"]

Frame = tuple[dict[str, Any], bytes]


READ = 1 << 20  # bytes of one read of the control channel


class Channel:
    """Request/reply over two pipes; unsolicited event frames are queued.

    ``read_fd`` is non-blocking; ``write_fd`` is blocking (the supervisor always
    reads its requests whole).
    """

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd = write_fd
        self.read_fd = read_fd
        os.set_blocking(read_fd, False)
        self._frames = proto.FrameBuffer()
        self._readbuf = bytearray(READ)  # kept: no fresh megabyte per read
        self._pending: list[Frame] = []
        self.events: list[dict[str, Any]] = []
        self.closed = False

    def request(self, msg: Request, blob: bytes = b"", timeout: float = 60.0) -> Frame:
        """Send a request and wait for its reply; raise SandboxError on failure."""
        if msg["op"] not in REQUESTS:  # (the supervisor checks the fields)
            raise ValueError(f"not a request of the supervisor: {msg['op']!r}")
        self._write(proto.encode(msg, blob))
        reply, data = self.wait_reply(timeout, what=str(msg.get("op")))
        if not reply.get("ok"):
            if reply.get("restart"):
                raise SandboxSpentError(f"sandbox request {msg.get('op')!r} failed: "
                                        f"{reply.get('error')}")
            raise SandboxError(f"sandbox request {msg.get('op')!r} failed: {reply.get('error')}")
        return reply, data

    def send(self, msg: Request) -> None:
        """Send a request that has no reply (``freeze``, ``thaw``, ``held``); never waits
        for one."""
        if msg["op"] not in NO_REPLY:
            raise ValueError(f"not a request without a reply: {msg['op']!r}")
        self._write(proto.encode(msg))

    def _write(self, frame: bytes) -> None:
        """Send one encoded request (a channel over another transport overrides this)."""
        try:
            proto.write_all(self.write_fd, frame)
        except OSError as exc:
            self.closed = True
            raise SandboxError(f"sandbox supervisor is gone ({exc})") from exc

    def _sort(self, frames: list[Frame]) -> None:
        """Events to their queue, replies to theirs."""
        for msg, blob in frames:
            if "ev" in msg:
                self.events.append(msg)
            else:
                self._pending.append((msg, blob))

    def wait_reply(self, timeout: float, what: str) -> Frame:
        """Wait for the next non-event frame."""
        deadline = time.monotonic() + timeout
        while True:
            if self._pending:
                return self._pending.pop(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError(f"sandbox did not answer {what!r} within {timeout:.0f} s")
            if fdwait.readable(self.read_fd, remaining):
                self.pump()

    def pump(self) -> None:
        """Read what is available; sort frames into events and replies."""
        buf = self._readbuf
        while True:
            try:
                n = os.readv(self.read_fd, [buf])
            except BlockingIOError:
                return
            except OSError as exc:
                self.closed = True
                raise SandboxError(f"sandbox control channel failed ({exc})") from exc
            if not n:
                self.closed = True
                raise SandboxError("sandbox supervisor exited")
            self._sort(self._frames.feed(memoryview(buf)[:n]))
            if n < len(buf):
                return  # nothing more now (no read just to hear EAGAIN)

    def take_events(self, name: str) -> list[dict[str, Any]]:
        """Remove and return the queued events called ``name``."""
        taken: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []
        for event in self.events:
            (taken if event.get("ev") == name else kept).append(event)
        if taken:
            self.events = kept
        return taken
