"""Pid 1 of a Docker sandbox: the supervisor, with its pipes carried over one stream.

A container offers its main process one long-lived stream: its stdin, and its stdout
as the engine hands it to the attached client. That stream is the only channel that
crosses the virtual machine of Docker Desktop (bind-mounted FIFOs and sockets do not),
so the supervisor's pipes (the control channel and the shell's action, output and
status pipes) are multiplexed over it by a relay thread of this process: frames of a
1-byte channel number, a 4-byte big-endian length and the payload. On a Linux host the
same frames take a unix socket to the host instead, which skips the engine's two hops
each way (see ``link``); stdin then only tells the relay when the host is gone.

The relay runs in pid 1 itself (a thread), so that the agent, which runs as the same
user, can neither signal it nor trace it (see ``main``). It never blocks on a pipe
towards the supervisor or the shell (it buffers), so a request that the supervisor
has not read yet cannot hold up a reply. Output is forwarded before any status record
or control frame read after it, so a status never overtakes the output it ends.

A step costs one write each way where it can: the frames a round of the relay forwards
go out in one write (the output and the status of an action together), and the host
sends an action with the thaw before it in one write. Every frame crosses the engine
and the container's shim (two hops and a copy each), so frames are what a step costs.
For the same reason the freeze after an action is not a frame of its own: the host
arms it with the action (``TO_ARM``: the freeze request's number and the action's
token), and the relay makes that ``freeze`` request itself when the action's status
record passes through it (see ``StatusWatch``). It holds the request for the
supervisor's delay (``freezer.DELAY``) first: if the next action comes before (a
replay, a benchmark), the freeze and the thaw that comes with that action cancel out
and neither wakes the supervisor; any other control frame first releases it (with
what is left of its delay), so the supervisor sees the order the host sent. A thaw is
dropped only when the supervisor's last freeze request was followed by a thaw already
(then it changes nothing); any other control frame counts as a possible freeze.
"""

import ctypes
import fcntl
import os
import select
import struct
import sys
import threading
import time

from . import freezer, link, main, newroot, proto

HEAD = struct.Struct(">BI")
TO_CTL, TO_ACTION, TO_ARM = 0, 1, 2  # host -> sandbox
FROM_CTL, FROM_OUTPUT, FROM_STATUS = 0, 1, 2  # sandbox -> host
FIRST_FD = 64  # above the shell's fixed descriptors (see bwrap.FIRST_PASSED_FD)
CHUNK = 1 << 16
OUTPUT_SLICE = 4 * CHUNK  # output forwarded in one round (then the other pipes get a turn)
DRAIN_LIMIT = 4 << 20  # output forwarded at most before a status record or control frame
PIPE_SIZE = 1 << 20
READ = 1 << 20  # read from the stream at most at once (into a buffer kept for it)
FLUSH_AT = 4 * CHUNK  # frames gathered for the stream written out past this size
THAW = proto.encode({"op": "thaw"})  # the host's thaw frame (shellio.THAW)
SWITCH_INTERVAL = 0.0002  # s: the relay thread waits at most this long for the supervisor
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _high(fd):
    """``fd`` moved to a number of at least :data:`FIRST_FD`, close-on-exec."""
    return proto.move_high(fd, FIRST_FD)


def _pipe():
    r, w = os.pipe()
    r, w = _high(r), _high(w)
    try:
        fcntl.fcntl(w, 1031, PIPE_SIZE)  # F_SETPIPE_SZ: fewer stalls of a busy stream
    except OSError:
        pass
    return r, w



def take_frames(buf, head):
    """Remove the whole frames at the start of ``buf`` (``head``: a kind and a payload
    size), yielding each kind and payload; a partial frame stays for the next read (the
    host's side of the stream reads its frames with this too)."""
    while len(buf) >= head.size:
        kind, size = head.unpack_from(buf)
        if len(buf) < head.size + size:
            return
        payload = bytes(buf[head.size:head.size + size])
        del buf[:head.size + size]
        yield kind, payload

class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def install_seccomp(program):
    """Install the classic BPF ``program`` on this process (inherited by every child).

    The container runs with ``no-new-privileges``, which lets an unprivileged process
    do this; the filter stacks on the engine's own profile.
    """
    prog = _Fprog(len(program) // 8, program)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")


class StatusWatch:
    """Finds the status record of the armed action in the status pipe's bytes.

    Records end with a NUL; the action's own begins with its token and a space (a
    ``<token> reply`` record, a request's reply, does not end it). Only the start of
    each record is kept.
    """

    def __init__(self):
        self.token = None  # b"<token> " of the armed action, or None
        self.head = bytearray()  # the start of the record being read

    def arm(self, token):
        self.token = token + b" " if token else None
        self.head = bytearray()

    def ended(self, data):
        """Whether ``data`` (the next bytes of the status pipe) completes the armed
        action's status record (the watch is disarmed then)."""
        token = self.token
        if token is None:
            return False
        keep = len(token) + 6  # b"reply\n"
        head, pos = self.head, 0
        while True:
            end = data.find(b"\0", pos)
            room = keep - len(head)
            if room > 0:
                head += data[pos:min(len(data) if end < 0 else end, pos + room)]
            if end < 0:
                return False
            if head.startswith(token) and not head.startswith(token + b"reply\n"):
                self.arm(None)
                return True
            del head[:]
            pos = end + 1


class Relay:
    """Copies frames of the stream to the pipes and the pipes' bytes to the stream."""

    def __init__(self, stream_in, stream_out, to_box, from_box, lifeline=None):
        self.stream_in = stream_in
        self.stream_out = stream_out  # the same socket as stream_in, or a pipe of its own
        # with the host's socket as the stream: stdin, whose end (the host gone, or
        # closing) ends the sandbox too
        self.lifeline = lifeline
        self.to_box = to_box  # channel -> write end of a pipe into the sandbox
        self.from_box = from_box  # read end of a pipe out of the sandbox -> channel
        self.output_fd = next(fd for fd, ch in from_box.items() if ch == FROM_OUTPUT)
        self.status_fd = next(fd for fd, ch in from_box.items() if ch == FROM_STATUS)
        self.pending = {fd: bytearray() for fd in to_box.values()}
        self.inbuf = bytearray()
        self.readbuf = bytearray(READ)
        self.out = bytearray()  # frames for the stream, written once per round
        self.watch = StatusWatch()
        self.next_freeze = None  # (number, token) armed for the next action frame
        self.freeze_n = None  # the freeze request's number for the armed action
        self.held = None  # (number, when due) of a freeze request held back
        self.thawed = True  # whether the supervisor's last freeze request was thawed since
        self.poller = select.poll()
        self.eof = False

    def run(self):
        # (a socket that is both ends stays blocking for the writes: it is read only when
        # the poll says it has bytes)
        shared = self.stream_in == self.stream_out
        for fd in [*([] if shared else [self.stream_in]), *self.to_box.values(),
                   *self.from_box]:
            os.set_blocking(fd, False)
        self.poller.register(self.stream_in, select.POLLIN)
        if self.lifeline is not None:
            os.set_blocking(self.lifeline, False)
            self.poller.register(self.lifeline, select.POLLIN)
        for fd in self.from_box:
            self.poller.register(fd, select.POLLIN)
        while True:
            timeout = None
            if self.held is not None:
                timeout = max(0.0, (self.held[1] - time.monotonic()) * 1000.0)
            events = dict(self.poller.poll(timeout))
            if self.held is not None and time.monotonic() >= self.held[1]:
                self._release_freeze()
            if self.output_fd in events:
                self._forward(self.output_fd, OUTPUT_SLICE)
            for fd in events:
                if fd == self.stream_in:
                    self._take_stream()
                elif fd == self.lifeline:
                    self._watch_lifeline()
                elif fd in self.pending:
                    self._flush(fd)
                elif fd != self.output_fd:
                    # the output written before a status record or an event comes first
                    # (bounded: a flood from the background must not hold a reply up)
                    self._forward(self.output_fd, DRAIN_LIMIT)
                    # the supervisor's channel whole; the status pipe, which the agent's
                    # processes can write too, a slice (a flood must not hold up the
                    # stream's control frames: an interrupt)
                    self._forward(fd, OUTPUT_SLICE if fd == self.status_fd else 1 << 62)
            self._send_out()
            if self.eof and not self.pending[self.to_box[TO_CTL]]:
                for fd in self.to_box.values():
                    os.close(fd)  # the supervisor sees the end of its channel and exits
                return

    def _watch_lifeline(self):
        try:
            ended = not os.read(self.lifeline, CHUNK)  # nothing more is sent on it
        except BlockingIOError:
            return
        except OSError:
            ended = True
        if ended:
            self.poller.unregister(self.lifeline)
            self.lifeline = None
            self._end_stream()

    def _end_stream(self):
        if not self.eof:
            self.eof = True
            self.poller.unregister(self.stream_in)

    def _take_stream(self):
        try:
            # into a buffer kept for it: a fresh megabyte per read costs an mmap
            n = os.readv(self.stream_in, [self.readbuf])
        except BlockingIOError:
            return
        except OSError:  # the host's socket reset (the host gone)
            n = 0
        if not n:
            self._end_stream()
            return
        buf = self.inbuf
        buf += memoryview(self.readbuf)[:n]
        for channel, payload in take_frames(buf, HEAD):
            if channel == TO_ARM:
                self.next_freeze = self._armed(payload)
                continue
            if channel == TO_ACTION:  # each action arms its own freeze, or none
                armed, self.next_freeze = self.next_freeze, None
                self.freeze_n = armed and armed[0]
                self.watch.arm(armed and armed[1])
            elif channel == TO_CTL:
                if payload == THAW:
                    self.held = None  # a held freeze and the thaw after it cancel out
                    if self.thawed:
                        continue  # nothing frozen or about to be: the thaw changes nothing
                    self.thawed = True
                else:
                    self._release_freeze()  # a held freeze goes before later requests
                    self.thawed = False  # (it may be a freeze itself)
            fd = self.to_box.get(channel)
            if fd is not None:
                self.pending[fd] += payload
                self._flush(fd)

    @staticmethod
    def _armed(payload):
        """``(number, token)`` of a ``TO_ARM`` frame (``<number> <token>``), or None."""
        number, _, token = payload.partition(b" ")
        if not number.isdigit() or not token or b"\0" in token:
            return None
        return int(number), token

    def _hold_freeze(self):
        """The armed action's status passed: its ``freeze`` request, as if the host had
        sent it on reading the status, is held for the supervisor's delay."""
        self.held = (self.freeze_n, time.monotonic() + freezer.DELAY)
        self.freeze_n = None

    def _release_freeze(self):
        """Hand the supervisor the held ``freeze`` request, with what is left of its delay."""
        if self.held is None:
            return
        n, due = self.held
        self.held = None
        self.thawed = False
        fd = self.to_box[TO_CTL]
        delay = max(0.0, due - time.monotonic())
        self.pending[fd] += proto.encode({"op": "freeze", "n": n, "delay": delay})
        self._flush(fd)

    def _flush(self, fd):
        pending = self.pending[fd]
        while pending:
            try:
                n = os.write(fd, pending)
            except BlockingIOError:
                self.poller.register(fd, select.POLLOUT)
                return
            del pending[:n]
        try:
            self.poller.unregister(fd)
        except KeyError:
            pass

    def _forward(self, fd, limit):
        sent = 0
        while sent < limit:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            if not data:
                self.poller.unregister(fd)
                return
            sent += len(data)
            out = self.out
            out += HEAD.pack(self.from_box[fd], len(data))
            out += data
            if fd == self.status_fd and self.watch.ended(data):
                self._hold_freeze()
            if len(out) >= FLUSH_AT:
                self._send_out()
            if len(data) < CHUNK:
                return  # the pipe had no more (the poll reports what comes later)

    def _send_out(self):
        if self.out:
            proto.write_all(self.stream_out, self.out)
            del self.out[:]


def _write_blocking(fd, data):
    os.set_blocking(fd, True)
    proto.write_all(fd, data)


def _relay_thread(relay, err_fd):
    try:
        os.set_blocking(relay.stream_out, True)
        relay.run()
    except BaseException as exc:  # the sandbox is useless without its stream: end it
        try:
            os.write(err_fd, ("intercode relay failed: %r\n" % (exc,)).encode())
        finally:
            os._exit(70)


def _fail(stream_out, exc):
    """Report a failed start as the ready event, and exit."""
    frame = proto.encode({"ev": "ready", "ok": False, "error": str(exc)})
    _write_blocking(stream_out, HEAD.pack(FROM_CTL, len(frame)) + frame)
    sys.exit(1)


def boot():
    """Entry point: the configuration frame follows the sources on stdin."""
    stream_in, stream_out, err_fd = _high(os.dup(0)), _high(os.dup(1)), _high(os.dup(2))
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):  # no process of the agent may inherit the stream
        os.dup2(null, fd)
    os.close(null)
    os.set_blocking(stream_in, True)
    cfg, data = proto.read_frame(stream_in)
    lifeline = None
    spec = cfg.pop("link", None)
    if spec is not None:  # the host's socket (see link), while pid 1 is still root
        try:
            sock = link.connect(spec, _high)
        except OSError as exc:
            _fail(stream_out, exc)
        if sock is not None:
            lifeline, stream_in = stream_in, sock
            stream_out = sock
    ctl_in, ctl_out, action, output, status = (_pipe() for _ in range(5))
    cfg["fds"] = {"ctl_in": ctl_in[0], "ctl_out": ctl_out[1], "action_r": action[0],
                  "output_w": output[1], "status_w": status[1]}
    relay = Relay(stream_in, stream_out, {TO_CTL: ctl_in[1], TO_ACTION: action[1]},
                  {ctl_out[0]: FROM_CTL, output[0]: FROM_OUTPUT, status[0]: FROM_STATUS},
                  lifeline)
    root = cfg.pop("root", None)
    program = bytes.fromhex(cfg.pop("seccomp", ""))
    if root is not None or program:
        try:
            if root is not None:  # before any agent input: see newroot
                cfg["unguarded"] = newroot.enter(root)
            if program:
                install_seccomp(program)
        except OSError as exc:
            _fail(stream_out, exc)
    sys.setswitchinterval(SWITCH_INTERVAL)
    threading.Thread(target=_relay_thread, args=(relay, err_fd), daemon=True).start()
    main.run(cfg, data)
