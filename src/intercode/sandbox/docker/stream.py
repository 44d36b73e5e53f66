"""Host side of a Docker sandbox's stream: the supervisor's pipes, demultiplexed.

The container's attached stream carries the supervisor's control channel and the
shell's action, output and status pipes as frames (see ``inbox/relay.py``). The
caller's own thread demultiplexes it whenever it waits (no thread of ours: a hand-off
between threads cost more than the whole round trip to the container): control frames
go to :class:`StreamChannel`, the shell's output and status into buffers in memory that
:class:`StreamShellIO` takes from where :class:`~intercode.sandbox.shellio.ShellIO`
reads bubblewrap's pipes (no local pipes: writing the bytes into one and reading them
back cost four system calls and a poll per step).

Bytes the host has not read yet wait in memory, with a bound for the output (past
:data:`BACKLOG` bytes it is dropped: it comes from the agent's processes, as on
bubblewrap a full pipe would stop them). A status record can be read only once the
output before it was (the relay sends them in that order). While it sends, the host
goes on reading, so a container that is writing cannot stall a large request.

On a Linux host the frames take a unix socket between the host and pid 1 instead (see
:mod:`~intercode.sandbox.docker.link`): :meth:`Stream.await_link` switches the stream to
it when pid 1 connects, and the attach stream is then kept for the container's stderr
and its lifetime only. The frames on the socket are the relay's own (no engine framing).

Each frame crosses the engine and the container's shim (on the attach stream), so a
step sends one write: the action, the arming of the freeze after it (the relay asks for
the freeze when the action's status passes, see ``inbox/relay.py``) and the thaw held
since the action began.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import time
from collections import deque
from typing import Any

from intercode.errors import SandboxError
from intercode.sandbox import fdwait
from intercode.sandbox.channel import Channel
from intercode.sandbox.docker.link import Listener
from intercode.sandbox.inbox import proto
from intercode.sandbox.inbox.relay import (
    FROM_CTL,
    FROM_OUTPUT,
    FROM_STATUS,
    HEAD,
    TO_ACTION,
    TO_ARM,
    take_frames,
)
from intercode.sandbox.inbox.relay import TO_CTL as TO_CTL
from intercode.sandbox.shellio import THAW, ShellIO

__all__ = ["DOCKER_HEAD", "Stream", "StreamChannel", "StreamShellIO"]

DOCKER_HEAD = struct.Struct(">BxxxI")  # the engine's stdout/stderr framing (no tty)
STDOUT, STDERR = 1, 2
BACKLOG = {FROM_OUTPUT: 8 << 20, FROM_STATUS: 64 << 20}
STDERR_KEEP = 1 << 16
READ = 1 << 20
STATUS_POINTS = 4096  # points in the output that status records wait for, at most
THAW_FRAME = proto.encode(THAW)


class Stream:
    """One attached container's stream, demultiplexed on demand (or, once
    :meth:`await_link` found pid 1 on the host's socket, that socket)."""

    def __init__(self, sock: socket.socket, first: bytes = b"",
                 link: Listener | None = None) -> None:
        self.sock = sock  # what the frames take: the attach stream, or the socket
        self.attach = sock  # the attach stream (the container's stderr, its stdin's end)
        self.link = link  # the host's socket until pid 1 connected (or did not)
        self.linked = False  # whether the frames take the socket
        self.stdout_seen = False  # whether the container wrote to its stdout
        sock.setblocking(False)
        self.fd = sock.fileno()
        self.stderr = bytearray()  # the end of the container's stderr, for error messages
        self.ctl = proto.FrameBuffer()
        self.ctl_frames: list[tuple[dict[str, Any], bytes]] = []
        self.output = bytearray()  # the shell's output, not read yet
        self.status = bytearray()  # its status records whose output before was read
        self._output_in = 0  # bytes of output kept so far
        self._output_taken = 0  # bytes of output read so far
        # (output before it, records): one entry per point in the output
        self._status_waiting: deque[tuple[int, bytearray]] = deque()
        self._status_bytes = 0  # in both
        self._docker = bytearray(first)
        self._readbuf = bytearray(READ)
        self._held = bytearray()  # control frames sent with the next frame
        self._mux = bytearray()
        self.dropped = 0
        self.ended = False
        self._parse()

    def hold(self, channel: int, data: bytes) -> None:
        """Keep a frame to send with the next one (a ``thaw`` goes with its action)."""
        self._held += HEAD.pack(channel, len(data))
        self._held += data

    def send(self, channel: int, data: bytes | memoryview, arm: bytes = b"") -> None:
        """Send a frame (after an ``arm`` frame, if given) and the held ones in one write;
        read what arrives meanwhile (the container may be writing too).

        An action goes before the held frames (its shell may start at once; a frozen
        one continues when the thaw behind it comes); any other frame after them, so
        that control frames keep their order."""
        frame = bytearray()
        if arm:
            frame += HEAD.pack(TO_ARM, len(arm))
            frame += arm
        frame += HEAD.pack(channel, len(data))
        frame += data
        held, self._held = self._held, bytearray()
        self.send_raw(frame + held if channel == TO_ACTION else held + frame)

    def send_raw(self, data: bytes | bytearray) -> None:
        """Send bytes as they are (the boot code's, before the relay runs)."""
        view = memoryview(data)
        while view:
            if self.ended:
                raise SandboxError("the sandbox's stream is closed")
            try:
                view = view[self.sock.send(view, socket.MSG_NOSIGNAL):]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                self._end()
                raise SandboxError(f"the sandbox's stream failed ({exc})") from exc
            ready = select.poll()
            ready.register(self.fd, select.POLLIN | select.POLLOUT)
            if any(ev & select.POLLIN for _fd, ev in ready.poll()):
                self.receive()

    def await_link(self, deadline: float) -> None:
        """Wait (until ``deadline``, monotonic) for pid 1's choice: its connection to the
        host's socket (then the frames take it), or output on the attach stream (it
        stayed there: the socket was out of its reach, see ``inbox/link.py``), or the
        end of the stream. The listener is closed and removed after, either way."""
        link = self.link
        if link is None:
            return
        try:
            while not (self.stdout_seen or self.ended):
                ready = link.wait(self.fd, deadline - time.monotonic())
                if self.fd in ready:
                    self.receive()
                conn = link.take(ready)
                if conn is not None:
                    self.sock, self.fd, self.linked = conn, conn.fileno(), True
                    return
                if time.monotonic() >= deadline:
                    return
        finally:
            self.link = None
            link.close()

    def drain_stderr(self) -> None:
        """Read what the attach stream has now, once the frames take the socket (its
        stdout carries nothing then; its stderr what the container wrote there)."""
        while self.linked:
            try:
                n = self.attach.recv_into(self._readbuf)
            except OSError:
                return
            if not n:
                return
            self._docker += memoryview(self._readbuf)[:n]
            self._parse()

    def receive(self) -> None:
        """Take what the stream has now into the buffers of its channels."""
        while not self.ended:
            try:
                n = self.sock.recv_into(self._readbuf)  # no fresh megabyte per read
            except BlockingIOError:
                break
            except OSError:
                self._end()
                break
            if not n:
                self._end()
                break
            if self.linked:  # the relay's frames as they are
                self._mux += memoryview(self._readbuf)[:n]
            else:
                self._docker += memoryview(self._readbuf)[:n]
            self._parse()
            if n < len(self._readbuf):
                break  # the socket had no more (no read just to hear "nothing")

    def _parse(self) -> None:
        for kind, payload in take_frames(self._docker, DOCKER_HEAD):
            if kind == STDOUT:
                self.stdout_seen = True
                if not self.linked:  # (nothing comes there once the frames take the socket)
                    self._mux += payload
            elif kind == STDERR:
                self.stderr += payload
                del self.stderr[:-STDERR_KEEP]
        for channel, chunk in take_frames(self._mux, HEAD):
            if channel == FROM_CTL:
                self.ctl_frames.extend(self.ctl.feed(chunk))
            elif channel == FROM_OUTPUT:
                room = max(BACKLOG[FROM_OUTPUT] - len(self.output), 0)
                if room < len(chunk):
                    self.dropped += len(chunk) - room
                    chunk = chunk[:room]
                self.output += chunk
                self._output_in += len(chunk)
            elif channel == FROM_STATUS:
                room = max(BACKLOG[FROM_STATUS] - self._status_bytes, 0)
                chunk = chunk[:room]
                if not chunk:
                    continue
                self._status_bytes += len(chunk)
                waiting = self._status_waiting
                if waiting and (waiting[-1][0] == self._output_in
                                or len(waiting) >= STATUS_POINTS):
                    # no output between (or a flood of alternating output and status
                    # records, which only the agent's processes write): one entry
                    waiting[-1][1].extend(chunk)
                else:
                    waiting.append((self._output_in, bytearray(chunk)))
        self._release_status()

    def take_output(self, limit: int | None = None) -> bytes:
        """Remove and return the output received so far (at most ``limit`` bytes)."""
        buf = self.output
        n = len(buf) if limit is None else min(len(buf), limit)
        data = bytes(buf[:n])
        del buf[:n]
        self._output_taken += n
        if self._status_waiting:
            self._release_status()
        return data

    def take_status(self) -> bytes:
        """Remove and return the status records whose output before them was read."""
        data = bytes(self.status)
        self._status_bytes -= len(data)
        del self.status[:]
        return data

    def _release_status(self) -> None:
        """A status record becomes readable once the output before it was read (as on
        bubblewrap, where it waits behind that output in the pipe: the output
        after an action's status belongs to the next one)."""
        waiting = self._status_waiting
        while waiting and waiting[0][0] <= self._output_taken:
            self.status += waiting.popleft()[1]

    def _end(self) -> None:
        self.ended = True


class StreamChannel(Channel):
    """The control channel over a :class:`Stream` (its ``read_fd`` is the socket)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.write_fd = -1
        self.read_fd = stream.fd
        self._pending: list[tuple[dict[str, Any], bytes]] = []
        self.events: list[dict[str, Any]] = []
        self.closed = False

    def _write(self, frame: bytes) -> None:
        """Send one encoded request over the stream."""
        try:
            self.stream.send(TO_CTL, frame)
        except SandboxError:
            self.closed = True
            raise

    def wait_reply(self, timeout: float, what: str) -> tuple[dict[str, Any], bytes]:
        deadline = time.monotonic() + timeout
        while True:
            self.pump()
            if self._pending:
                return self._pending.pop(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError(f"sandbox did not answer {what!r} within {timeout:.0f} s")
            fdwait.readable(self.read_fd, remaining)

    def pump(self) -> None:
        self.stream.receive()
        frames, self.stream.ctl_frames = self.stream.ctl_frames, []
        self._sort(frames)
        if self.stream.ended and not frames:
            self.closed = True
            raise SandboxError("sandbox supervisor exited")


class _Poller:
    """The poll object of an action's wait: the output and the status are reported while
    they wait in memory, the socket while control frames do (or the stream ended); it
    blocks on the socket only, and takes what comes in."""

    def __init__(self, io: StreamShellIO) -> None:
        self.stream = io.stream
        self.output_fd, self.status_fd = io.output_r, io.status_r
        self.inner = select.poll()
        self.inner.register(self.stream.fd, select.POLLIN)

    def register(self, fd: int, events: int = select.POLLIN) -> None:
        self.inner.register(fd, events)

    def unregister(self, fd: int) -> None:
        self.inner.unregister(fd)

    def _ready(self) -> list[tuple[int, int]]:
        stream, ready = self.stream, []
        if stream.output:
            ready.append((self.output_fd, select.POLLIN))
        if stream.status:
            ready.append((self.status_fd, select.POLLIN))
        if stream.ctl_frames or stream.ended:
            ready.append((stream.fd, select.POLLIN))
        return ready

    def poll(self, timeout_ms: float | None = None) -> list[tuple[int, int]]:
        ready = self._ready()
        if ready:
            return ready
        if self.inner.poll(timeout_ms):
            self.stream.receive()
        return self._ready()  # nothing yet if only part of a frame came


class StreamShellIO(ShellIO):
    """:class:`ShellIO` whose actions go over the stream, and whose output and status
    are taken from the stream's buffers (its "pipes" are placeholder descriptors, which
    the poller reports from memory)."""

    def __init__(self, stream: Stream, channel: StreamChannel, *args: Any,
                 **kwargs: Any) -> None:
        self.stream = stream
        self._wrapped: _Poller | None = None
        self._armed = 0  # number of the freeze armed with the last action
        self._ended_by_status = False  # whether that action's status came
        # no pipes: three distinct descriptors stand for the action, output and status
        self._placeholders = [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                              for _ in range(3)]
        action, output, status = self._placeholders
        super().__init__(action, output, status, channel, *args, **kwargs)

    def poller(self) -> Any:
        if self._wrapped is None:
            self._wrapped = _Poller(self)
        return self._wrapped

    def write_action(self, data: memoryview) -> int:
        arm = b""
        if self.freeze:  # the relay asks for the freeze when the status passes
            self._armed = self._freeze_n + 1
            arm = f"{self._armed} {self.seq}".encode("ascii")
        self._ended_by_status = False
        self.stream.send(TO_ACTION, data, arm)
        return len(data)

    def _send_thaw(self) -> None:
        self.stream.hold(TO_CTL, THAW_FRAME)

    def _freeze_sent(self) -> bool:
        return self._ended_by_status and self._armed == self._freeze_n

    def _read_all(self, fd: int, out: Any, limit: int | None = None) -> int:
        """Take the output (or status) received so far, at most ``limit`` + 1 bytes."""
        if fd == self.output_r:
            data = self.stream.take_output(None if limit is None else max(limit, 0) + 1)
        elif fd == self.status_r:
            data = self.stream.take_status()
        else:
            return super()._read_all(fd, out, limit)
        if data and out is not None:
            out.add(data)
        return len(data)

    def _read_status(self) -> bytes | None:
        return self.stream.take_status() or None

    def _take_status(self) -> tuple[str, int, str] | None:
        status = super()._take_status()
        if status is not None:
            self._ended_by_status = True
        return status

    def close(self) -> None:
        """Close the placeholder descriptors."""
        for fd in self._placeholders:
            os.close(fd)
