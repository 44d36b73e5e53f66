"""Host side of a Docker sandbox's stream: the supervisor's pipes, demultiplexed.

The container's attached stream carries the supervisor's control channel and the
shell's action, output and status pipes as frames (see ``inbox/relay.py``). A thread
turns it back into local pipes, so that :class:`~intercode.sandbox.channel.Channel`
and :class:`~intercode.sandbox.shellio.ShellIO` work on Docker as on bubblewrap.

It never blocks on one local pipe: bytes the host has not read yet wait in memory,
with bounds (output the host does not read is dropped past :data:`BACKLOG` bytes:
it comes from processes of the agent's, like output bubblewrap's pipes would block).
A status record is passed on only after the output before it (the host reads the
output once it has the status); control frames are never held up (during a reset
the host reads no output, and a background process may be flooding it).
"""

from __future__ import annotations

import fcntl
import os
import select
import socket
import struct
import threading

from intercode.sandbox.inbox.relay import (
    FROM_CTL,
    FROM_OUTPUT,
    FROM_STATUS,
    HEAD,
    TO_ACTION,
    TO_CTL,
)

DOCKER_HEAD = struct.Struct(">BxxxI")  # the engine's stdout/stderr framing (no tty)
STDOUT, STDERR = 1, 2
PIPE_SIZE = 1 << 20
BACKLOG = {FROM_OUTPUT: 8 << 20, FROM_STATUS: 64 << 20, FROM_CTL: 1 << 40}
STDERR_KEEP = 1 << 16
READ = 1 << 20


def send_all(sock: socket.socket, data: bytes) -> None:
    """``sock.sendall`` without SIGPIPE (the command line restores its default action, which
    would end the process when the engine has closed the stream): EPIPE is an OSError."""
    view = memoryview(data)
    while view:
        view = view[sock.send(view, socket.MSG_NOSIGNAL):]


def _pipe() -> tuple[int, int]:
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        fcntl.fcntl(w, 1031, PIPE_SIZE)  # F_SETPIPE_SZ
    except OSError:
        pass
    return r, w


class Stream:
    """The local pipes of one attached container, and the thread that feeds them.

    The host uses :attr:`ctl_w` / :attr:`ctl_r` (the control channel) and
    :attr:`action_w`, :attr:`output_r`, :attr:`status_r` (the shell).
    """

    def __init__(self, sock: socket.socket, first: bytes = b"") -> None:
        self.sock = sock
        self.stderr = bytearray()  # the end of the container's stderr, for error messages
        ctl_in, action, ctl_out, output, status = (_pipe() for _ in range(5))
        self.ctl_w, self.action_w = ctl_in[1], action[1]
        self.ctl_r, self.output_r, self.status_r = ctl_out[0], output[0], status[0]
        self._sources = {ctl_in[0]: TO_CTL, action[0]: TO_ACTION}
        self._sinks = {FROM_CTL: ctl_out[1], FROM_OUTPUT: output[1], FROM_STATUS: status[1]}
        self._pending = {ch: bytearray() for ch in self._sinks}
        self._docker = bytearray(first)
        self._mux = bytearray()
        self.dropped = 0
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        for fd in [*self._sources, *self._sinks.values()]:
            os.set_blocking(fd, False)
        self._thread = threading.Thread(target=self._run, name="intercode-docker-stream",
                                        daemon=True)
        self.ended = False

    def start(self) -> None:
        """Start the thread (the bytes already read are handled first)."""
        self._thread.start()

    def host_fds(self) -> list[int]:
        """The descriptors the host closes when it is done (the read ends of the pipes
        towards the container among them: they stay open after the stream ended, so that
        a late write of the host finds room, not a SIGPIPE)."""
        return [self.ctl_w, self.action_w, self.ctl_r, self.output_r, self.status_r,
                *self._sources]

    def stop(self) -> None:
        """End the thread (the socket is closed by it) and wait for it."""
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        for fd in (self._stop_w, self._stop_r):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        poller = select.poll()
        sock_fd = self.sock.fileno()
        poller.register(sock_fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        for fd in self._sources:
            poller.register(fd, select.POLLIN)
        watching: set[int] = set()
        try:
            if self._docker:
                self._parse()
            while True:
                self._deliver()
                want = {fd for ch, fd in self._sinks.items() if self._pending[ch]
                        and (ch != FROM_STATUS or not self._pending[FROM_OUTPUT])}
                for fd in want - watching:
                    poller.register(fd, select.POLLOUT)
                for fd in watching - want:
                    poller.unregister(fd)
                watching = want
                for fd, _ev in poller.poll():
                    if fd == self._stop_r:
                        return
                    if fd == sock_fd:
                        data = self.sock.recv(READ)
                        if not data:
                            return
                        self._docker += data
                        self._parse()
                    elif fd in self._sources:
                        self._send(fd)
        except OSError:
            return
        finally:
            self._end()

    def _send(self, fd: int) -> None:
        try:
            data = os.read(fd, READ)
        except BlockingIOError:
            return
        if data:
            send_all(self.sock, HEAD.pack(self._sources[fd], len(data)) + data)

    def _parse(self) -> None:
        buf = self._docker
        while len(buf) >= DOCKER_HEAD.size:
            kind, size = DOCKER_HEAD.unpack_from(buf)
            if len(buf) < DOCKER_HEAD.size + size:
                break
            payload = buf[DOCKER_HEAD.size:DOCKER_HEAD.size + size]
            del buf[:DOCKER_HEAD.size + size]
            if kind == STDOUT:
                self._mux += payload
            elif kind == STDERR:
                self.stderr += payload
                del self.stderr[:-STDERR_KEEP]
        mux = self._mux
        while len(mux) >= HEAD.size:
            channel, size = HEAD.unpack_from(mux)
            if len(mux) < HEAD.size + size:
                break
            pending = self._pending.get(channel)
            if pending is not None:
                room = BACKLOG[channel] - len(pending)
                chunk = mux[HEAD.size:HEAD.size + size]
                if room < len(chunk):
                    self.dropped += len(chunk) - max(room, 0)
                    chunk = chunk[:max(room, 0)]
                pending += chunk
            del mux[:HEAD.size + size]

    def _deliver(self) -> None:
        if self._write(FROM_OUTPUT):
            self._write(FROM_STATUS)
        self._write(FROM_CTL)

    def _write(self, channel: int) -> bool:
        """Write what waits for ``channel``; whether its pipe took all of it."""
        pending = self._pending[channel]
        while pending:
            try:
                n = os.write(self._sinks[channel], pending)
            except BlockingIOError:
                return False
            except BrokenPipeError:  # the host closed its end: nobody reads it any more
                pending.clear()
                return True
            del pending[:n]
        return True

    def _end(self) -> None:
        self.ended = True
        try:
            self.sock.close()
        except OSError:
            pass
        for ch in (FROM_OUTPUT, FROM_STATUS, FROM_CTL):
            self._write(ch)
        for fd in self._sinks.values():
            try:
                os.close(fd)
            except OSError:
                pass
