"""Host side of the persistent shell: send an action, collect its output and status.

The host talks to the shell directly over three pipes (no hop through the
supervisor), so a step costs little more than the shell's own work. Timeouts,
output floods and dead shells are handled here with the supervisor's help.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable

from intercode.sandbox.base import ExecResult
from intercode.sandbox.channel import Channel
from intercode.sandbox.inbox.shell import encode_action
from intercode.sandbox.limits import Limits
from intercode.sandbox.requests import InterruptRequest, ThawRequest

__all__ = ["THAW", "Output", "ShellIO"]

READ_CHUNK = 1 << 16
STATUS_CHUNK = 1 << 20  # status records may carry a request's reply (megabytes)
THAW: ThawRequest = {"op": "thaw"}


class Output:
    """Output of one action: the first ``cap`` bytes are kept, the rest counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        """Account for a chunk of output."""
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped."""
        return self.total > len(self.kept)

    def text(self) -> str:
        """The kept bytes decoded as UTF-8, invalid sequences replaced."""
        return bytes(self.kept).decode("utf-8", "replace")


def encode_text(action: str) -> bytes | None:
    """Bytes of an action for the shell, or ``None`` if a shell cannot receive it."""
    if "\0" in action:
        return None
    try:
        return action.encode("utf-8")
    except UnicodeEncodeError:
        return action.encode("utf-8", "surrogateescape") if _escapable(action) else None


def _escapable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


class ShellIO:
    """The three host-side pipe ends of one sandbox's shell."""

    def __init__(self, action_w: int, output_r: int, status_r: int, channel: Channel,
                 limits: Limits, restart: Callable[[str], None],
                 interrupt_signal: str | None = None, freeze: bool = True) -> None:
        """``freeze``: stop the sandbox between actions (off for a shell that runs no
        code of the agent's own, the SQL engine: nothing can run between its statements)."""
        for fd in (action_w, output_r, status_r):
            os.set_blocking(fd, False)
        self.action_w, self.output_r, self.status_r = action_w, output_r, status_r
        self.channel = channel
        self.limits = limits
        self._restart = restart
        self.interrupt_signal = interrupt_signal
        self.shell_name = "Python interpreter" if interrupt_signal else "shell"
        self.seq = ""  # the current action's token (random: a later one cannot be guessed)
        self.cwd = "/"
        self.shell_pid: int | None = None
        self._status = bytearray()
        self._status_buf = bytearray(STATUS_CHUNK)
        self._reply: str | None = None
        self.freeze = freeze
        self._poller: select.poll | None = None
        self._maybe_frozen = False  # a freeze was sent and no thaw since
        self._freeze_n = 0  # number of the last freeze request

    def fresh_shell(self, pid: int, cwd: str) -> None:
        """Forget everything of the previous shell (called after reset / restart). The
        supervisor thawed the sandbox and cancelled any pending freeze when it started
        the new shell, so the next action needs no thaw."""
        self.shell_pid = pid
        self._maybe_frozen = False
        self.cwd = cwd
        self._status = bytearray()
        self._read_all(self.status_r, None)
        self.channel.take_events("shell_exit")

    def discard_output(self) -> None:
        """Drop output still in the pipe (after a reset)."""
        self._read_all(self.output_r, None)

    def run(self, action: str, timeout: float, kind: str | None = None,
            meanwhile: Callable[[], None] | None = None) -> ExecResult:
        """Run one action in the shell; never raises for anything the action does.

        ``meanwhile`` is called once the action was sent, before its end is awaited: a
        request to the supervisor that runs while the shell works (a snapshot's tree
        copy during the shell state's capture). What it raises is raised after the
        action's end (the shell's protocol stays in step)."""
        data = encode_text(action)
        if data is None:
            note = "the action contains a NUL character or unencodable text; it was not run"
            return ExecResult(output="", exit_code=None, notes=(note,), cwd=self.cwd)
        self.channel.pump()  # once: a freeze's answer, notes, a dead shell since the last
        if not self.freeze:
            return self._run(data, timeout, kind, meanwhile)
        self._thaw()
        try:
            return self._run(data, timeout, kind, meanwhile)
        finally:
            if not self.channel.closed:  # nothing runs until the next action
                self._freeze_n += 1
                if not self._freeze_sent():
                    self.channel.send({"op": "freeze", "n": self._freeze_n})
                self._maybe_frozen = True

    def _freeze_sent(self) -> bool:
        """Whether the freeze after the action that just ended (number ``_freeze_n``)
        was asked already (a backend that arms it with the action overrides this)."""
        return False

    def _send_thaw(self) -> None:
        """Ask for the thaw before the next action (a backend may send it with it)."""
        self.channel.send(THAW)

    def _thaw(self) -> None:
        """Continue the processes stopped after the last action, if any were.

        The supervisor answers a freeze with a ``frozen`` event; until it has arrived,
        a ``thaw`` is sent anyway (it is queued behind the freeze). The channel was
        pumped just before.
        """
        # taken whatever the state: the answer to a freeze that a reset since cancelled
        # comes after the new shell, and is never waited for
        answers = self.channel.take_events("frozen")
        if not self._maybe_frozen:
            return
        done = [ev for ev in answers if ev.get("n") == self._freeze_n]
        if not done or done[-1].get("stopped"):
            self._send_thaw()
        self._maybe_frozen = False

    def _run(self, data: bytes, timeout: float, kind: str | None,
             meanwhile: Callable[[], None] | None = None) -> ExecResult:
        out = Output(self.limits.output)
        notes = [str(ev.get("text")) for ev in self.channel.take_events("note")]
        restarted = False
        if self._read_all(self.output_r, out) > self.limits.output_hard:
            self.channel.request({"op": "interrupt"})
            notes.append("background processes flooded the output and were killed")
        if self._dead_shell(pump=False) is not None:
            restarted = True
            notes.append(self._replace_shell(f"the {self.shell_name} had exited"))
        self.seq = os.urandom(8).hex()
        self._reply = None
        run = _Run(self, encode_action(self.seq, data, kind), out, timeout)
        failure: BaseException | None = None
        if meanwhile is not None:
            run.send()
            try:
                meanwhile()
            except BaseException as exc:  # raised once the action has ended
                failure = exc
            # the action's time starts now: what ran meanwhile (a tree copy of up to the
            # storage limit) was the supervisor's work, not the action's
            run.deadline = time.monotonic() + timeout
        code = run.wait()
        if failure is not None:
            raise failure
        notes.extend(run.notes)
        notes.extend(self.take_notes())
        restarted = restarted or run.restarted
        self._read_all(self.output_r, out, limit=self.limits.output_hard)
        if out.truncated:
            notes.append(f"output truncated: showing the first {len(out.kept)} of "
                         f"{out.total} bytes")
        reply, self._reply = self._reply, None
        return ExecResult(output=out.text(), exit_code=code, timed_out=run.timed_out,
                          output_bytes=out.total, output_truncated=out.truncated,
                          shell_restarted=restarted, notes=tuple(notes), cwd=self.cwd,
                          reply=reply)

    def write_action(self, data: memoryview) -> int:
        """Write (part of) an action's bytes to the shell; how many were taken (a
        backend whose shell is not behind a pipe of the host's overrides this)."""
        return os.write(self.action_w, data)

    def take_notes(self) -> list[str]:
        """Messages of the supervisor's watchdog since the last call."""
        self.channel.pump()
        return [str(ev.get("text")) for ev in self.channel.take_events("note")]

    # -- helpers used by _Run ------------------------------------------------------------

    def _dead_shell(self, pump: bool = True) -> int | None:
        """Exit status of the current shell if the supervisor reported its death."""
        if pump:
            self.channel.pump()
        for ev in self.channel.take_events("shell_exit"):
            if ev.get("pid") == self.shell_pid:
                return int(ev.get("status", -1))
        return None

    def _replace_shell(self, why: str) -> str:
        cwd = self.cwd
        self._restart(cwd)
        lost = ("variables, functions and imports" if self.interrupt_signal
                else "shell variables, functions and background jobs")
        return f"{why}; a new {self.shell_name} was started in {self.cwd} ({lost} were lost)"

    def poller(self) -> select.poll:
        """The poll object of the pipes an action is waited on (made once)."""
        if self._poller is None:
            self._poller = select.poll()
            for fd in (self.output_r, self.status_r, self.channel.read_fd):
                self._poller.register(fd, select.POLLIN)
        return self._poller

    def _take_status(self) -> tuple[str, int, str] | None:
        """The current action's status record, once it has come. A record ``<seq>
        reply\n<text>`` before it is the reply to a request (kept, up to the output
        limit: a bigger one is dropped)."""
        chunk = self._read_status()
        if chunk is None:
            return None
        buf = self._status
        start = len(buf)
        buf += chunk
        result = None
        end = buf.find(b"\0", start)
        while end >= 0:
            record = bytes(buf[:end])
            del buf[:end + 1]
            end = buf.find(b"\0")
            head, newline, body = record.partition(b"\n")
            if newline and head == f"{self.seq} reply".encode("ascii"):
                self._reply = (body.decode("utf-8", "replace")
                               if len(body) <= self.limits.output else None)
                continue
            seq, _, rest = record.decode("utf-8", "replace").partition(" ")
            if seq != self.seq:
                continue
            code, _, cwd = rest.partition(" ")
            result = (seq, int(code) if code.lstrip("-").isdigit() else -1, cwd)
        if result is None and len(buf) > self.limits.output + 4096:
            buf.clear()  # a reply over the limit (or garbage): dropped, not kept
        return result

    def _read_status(self) -> bytes | memoryview | None:
        """The status pipe's bytes available now (``None``: none yet). Read into a buffer
        kept for it: a fresh megabyte per read cost an ``mmap`` and a ``munmap``."""
        try:
            n = os.readv(self.status_r, [self._status_buf])
        except BlockingIOError:
            return None
        return memoryview(self._status_buf)[:n]

    def _read_all(self, fd: int, out: Output | None, limit: int | None = None) -> int:
        """Read what is available now; stop after ``limit`` bytes. Returns bytes read."""
        count = 0
        while limit is None or count <= limit:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                break
            count += len(chunk)
            if out is not None:
                out.add(chunk)
        return count


class _Run:
    """The wait for one action's status, with its deadline and its escalations."""

    def __init__(self, io: ShellIO, payload: bytes, out: Output, timeout: float) -> None:
        self.io = io
        self.payload = memoryview(payload)
        self.out = out
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.phase = "running"
        self.timed_out = False
        self.restarted = False
        self.notes: list[str] = []

    def send(self) -> None:
        """Write what of the action the pipe takes now (the rest is written by :meth:`wait`)."""
        self._write(self.io.poller())

    def wait(self) -> int | None:
        """Return the action's exit status (``None`` if the shell had to be replaced)."""
        io = self.io
        poller = io.poller()
        self._write(poller)
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                if self.phase == "running":
                    self._interrupt(f"the action timed out after {self.timeout:g} s; "
                                    "its processes were killed")
                    self.timed_out = True
                    continue
                self._give_up(f"the {io.shell_name} did not recover after the kill")
                return None
            for fd, _event in poller.poll(remaining * 1000.0):
                if fd == io.action_w:
                    self._write(poller)
                elif fd == io.output_r:
                    io._read_all(io.output_r, self.out, limit=READ_CHUNK * 4)
                    if self.out.total > io.limits.output_hard and self.phase == "running":
                        self._interrupt(f"the action wrote more than {io.limits.output_hard} "
                                        "bytes; its processes were killed")
                elif fd == io.status_r:
                    status = io._take_status()
                    if status is not None:
                        io.cwd = status[2] or io.cwd
                        return status[1]
                else:
                    dead = io._dead_shell()
                    if dead is not None:
                        self.restarted = True
                        io._read_all(io.output_r, self.out, limit=io.limits.output_hard)
                        self.notes.append(io._replace_shell(
                            f"the {io.shell_name} exited with status {dead}"))
                        return dead

    def _write(self, poller: select.poll) -> None:
        io = self.io
        while self.payload:
            try:
                n = io.write_action(self.payload)
            except BlockingIOError:
                poller.register(io.action_w, select.POLLOUT)
                return
            except BrokenPipeError:
                self.payload = memoryview(b"")
                break
            self.payload = self.payload[n:]
        try:
            poller.unregister(io.action_w)
        except KeyError:
            pass

    def _interrupt(self, note: str) -> None:
        request: InterruptRequest = {"op": "interrupt"}
        if self.io.interrupt_signal:
            request["signal"] = self.io.interrupt_signal
        self.io.channel.request(request)
        self.notes.append(note)
        self.phase = "grace"
        self.deadline = time.monotonic() + self.io.limits.kill_grace

    def _give_up(self, why: str) -> None:
        self.restarted = True
        self.payload = memoryview(b"")
        self.notes.append(self.io._replace_shell(why))
        return None
