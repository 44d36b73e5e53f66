"""Freezing a sandbox between actions, so that it uses no CPU while the agent thinks.

The host sends a ``freeze`` request (no reply) when an action has ended and a ``thaw``
just before the next one. The freeze waits a few milliseconds, so that back-to-back
actions (a replay, a benchmark) cost nothing, then stops every process with
``kill(-1, SIGSTOP)`` and checks, round after round, that all stay stopped. Its
``frozen`` event tells the host whether anything was stopped, so that after a pause
with nothing running the next action needs no thaw.
"""

import os
import signal
import time

from . import proto, shell

DELAY = 0.005  # s between the request and the freeze
VERIFY_EVERY = 0.0005  # s between the quick checks after a freeze that stopped processes
VERIFY_ROUNDS = 50  # then the supervisor's watchdog goes on checking ten times a second
SETTLE_TIMEOUT = 0.2  # s a thaw waits at most for every process to be stopped first
HELD_STOP_WAIT = 0.05  # s a freeze waits at most for the held copies it stopped to stop
# s after a thaw that continued processes, when a fork that was in flight may leave its
# child stopped (see Freezer.recheck)
RECHECKS = (0.002, 0.01, 0.05, 0.2, 1.0)


class Freezer:
    """Freeze state of one sandbox (owned by the supervisor)."""

    def __init__(self, the_shell, ctl_out):
        self.shell = the_shell
        self.ctl_out = ctl_out
        self.frozen = False
        self.stopped = False  # whether SIGSTOP was sent since the last thaw
        self.verify_at = None
        self.rounds = 0
        self.freeze_at = None
        self.freeze_n = None  # the host's number of the pending freeze request
        self.watch_soon = False  # processes were continued: the watchdog should look soon
        self.held = set()  # the supervisor's held interpreters (see snaps)
        self.rechecks = []  # when to look for a child stopped by a fork in flight (recheck)
        self.known = set()  # the pids there were at the last thaw (see recheck)

    def request(self, msg):
        """Handle a ``freeze`` or ``thaw`` request."""
        if msg.get("op") == "freeze":
            # ``delay``: what is left of it when the request was held on the way (the
            # docker relay holds the freeze after an action, see relay.py)
            delay = msg.get("delay", DELAY)
            self.freeze_at = time.monotonic() + (
                min(max(float(delay), 0.0), DELAY) if isinstance(delay, (int, float)) else DELAY)
            self.freeze_n = msg.get("n")
        else:
            self.freeze_at = None
            self.thaw()

    def due(self):
        """When :meth:`tick` has work next, or ``None``."""
        times = [t for t in (self.freeze_at, self.verify_at, *self.rechecks[:1])
                 if t is not None]
        return min(times) if times else None

    def freeze_due(self, now):
        """Whether :meth:`tick` will freeze now (the limits are checked just before)."""
        return self.freeze_at is not None and now >= self.freeze_at

    def tick(self, now):
        """Run a pending freeze or check whose time has come."""
        if self.freeze_at is not None and now >= self.freeze_at:
            self.freeze_at = None
            self.freeze(tell=self.freeze_n)
        if self.verify_at is not None and now >= self.verify_at:
            self.step()
        if self.rechecks and now >= self.rechecks[0]:
            del self.rechecks[0]
            self.recheck()

    def freeze(self, tell=None):
        """Stop every process of the agent until the next thaw.

        If nothing but the idle shell is there, nothing needs stopping (and nothing
        can start before the next action): the sandbox does not count as frozen. With
        ``tell`` (the number of the host's request), a ``frozen`` event says which it
        was.
        """
        self.frozen = True
        self.rechecks = []
        self.rounds = 0
        self.stop_held()
        self.step()
        if not self.stopped:
            self.frozen = False
        if tell is not None:
            event = {"ev": "frozen", "n": tell, "stopped": self.stopped}
            proto.write_all(self.ctl_out, proto.encode(event))

    def _idle(self):
        idle = {self.shell.pid: shell.ACTION_FD}
        if self.shell.spare is not None:
            idle[self.shell.spare[0]] = shell.ASLEEP
        for pid in self.shell.zygote_pids():  # sleeps, not dumpable: see zygote
            idle[pid] = shell.ASLEEP
        # not the held interpreters: their pids come from the agent's interpreter, which
        # may report a process of its own; they are idle only when stopped (stop_held)
        return idle

    def stop_held(self):
        """Stop the held interpreters that are not stopped, and wait (briefly) until the
        kernel says they are: a held copy waits as well stopped as asleep (a restore
        continues it first, see ``snaps``), and only a stopped process surely runs
        nothing. A process the agent's interpreter reported as its held copy is one of
        the agent's (the supervisor only checks that it is the interpreter's child): as
        asleep, it counted as idle and ran between actions. One that is still not
        stopped after the wait counts as running (:meth:`step` stops everything)."""
        sent = []
        for pid in self.held:
            if _state(pid) not in shell.FROZEN_STATES:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                sent.append(pid)
        deadline = time.monotonic() + HELD_STOP_WAIT
        while sent and time.monotonic() < deadline:
            sent = [pid for pid in sent if _state(pid) not in shell.FROZEN_STATES]
            if sent:
                time.sleep(0.00005)

    def step(self):
        """One round of :func:`shell.freeze_step`; schedule the next one if needed."""
        if shell.freeze_step(self._idle()):
            self.verify_at = None
            return
        self.stopped = True
        self.rounds += 1
        self.verify_at = time.monotonic() + VERIFY_EVERY if self.rounds < VERIFY_ROUNDS else None

    def thaw(self):
        """Continue the processes stopped by :meth:`freeze`, and cancel a freeze still
        to come (a new shell was started: nothing of the last action runs any more)."""
        self.frozen = False
        self.verify_at = None
        self.freeze_at = None
        if self.stopped:
            self.stopped = False
            self.watch_soon = True  # a fork bomb frozen below the alarm goes on now
            self._settle()
            self.known = set(shell.states(()))
            shell.thaw(stay=self.held)
            now = time.monotonic()
            self.rechecks = [now + delay for delay in RECHECKS]

    def recheck(self):
        """Continue the processes that a fork in flight at the last thaw left stopped.

        A stop sent to every process while one is in the middle of ``fork`` reaches
        its child too, when the fork is done; a thaw just before then does not (the
        child was not there yet), and the child stays stopped for good (a test of the
        gold hung, on a loaded machine, when a fork storm outlasted :meth:`_settle`).
        Such a child is new since the thaw and has used less than a clock tick of CPU
        in user mode: those are the processes continued here, a few times in the
        second after a thaw that continued processes, until a freeze runs (a freeze
        merely asked for does not cancel them: a thaw may come before it runs; one
        that runs stops everything, and its thaw continues everything). Within that
        second, a process of the agent's born after the thaw and stopped by the agent
        before it used a tick of CPU would be continued too; one that was there at
        the thaw, or that ran longer, stays stopped.
        """
        for pid, state in shell.states(self.known | {1, os.getpid(), *self.held}).items():
            if state == b"T" and _never_ran(pid):
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

    def _settle(self):
        """Wait until every process has stopped before continuing them (at most
        :data:`SETTLE_TIMEOUT`).

        A process in the middle of ``fork`` when ``kill(-1, SIGSTOP)`` comes passes the
        stop on to its child; if ``kill(-1, SIGCONT)`` also comes before the fork is
        done, the child misses the continue and stays stopped for good (an agent's
        test hung, a gold's too). So a thaw right after a freeze first lets the freeze
        finish: once nothing runs, no fork is in progress.
        """
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not shell.freeze_step(self._idle()) and time.monotonic() < deadline:
            time.sleep(VERIFY_EVERY)


def _never_ran(pid):
    """Whether process ``pid`` has used less than a clock tick of CPU in user mode."""
    try:
        data = shell.proc_read("%d/stat" % pid)
    except OSError:
        return False
    fields = data[data.rfind(b")") + 2:].split()
    return len(fields) > 11 and fields[11] == b"0"


def _state(pid):
    """The state letter of process ``pid`` (``b"X"`` if it is gone)."""
    try:
        data = shell.proc_read("%d/stat" % pid)
    except OSError:
        return b"X"
    end = data.rfind(b")")
    return data[end + 2:end + 3]
