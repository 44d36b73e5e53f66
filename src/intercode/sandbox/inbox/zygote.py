"""The clean parent of the Python interpreters: forked by pid 1 before any episode.

A spare interpreter forked from pid 1 itself inherited pid 1's whole memory: the
supervisor's objects (tree snapshots with the files of earlier episodes, reachable
from the interpreter's own stack frames), the freed bytes of the files it read at
resets and, on Docker, the frames its relay thread carried (actions, test code of
earlier episodes), readable through ``/proc/self/mem``. So pid 1, in its setup, before
any request of the host reaches it, forks the zygote: a process that holds nothing of
any episode, runs nothing of the agent's, ignores every signal it can and is not
dumpable (the agent runs as the same user: it could trace it or write its memory
otherwise). It waits on a private socket (only pid 1 holds the other end; close-on-exec,
closed in every interpreter) for one request per spare: the read end of the spare's go
pipe (``SCM_RIGHTS``). It makes the spare a child of pid 1 (``clone(CLONE_PARENT)``, see
``pyhold._sibling``; else two forks, the spare an orphan adopted by pid 1), and the spare
reports its own pid on the socket before it becomes the interpreter that
``shell.Shell._fork`` used to make (``oomguard.join``, ``pyrepl.start``).

The agent can still kill the zygote (or stop it, or the spare before it reports): pid 1
then never forks an interpreter from itself (that is the leak), but says
:class:`ZygoteGone`, which the host answers with a new sandbox at the next reset.
"""

import errno
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import time

from . import oomguard, rlimits

REPLY = struct.Struct("=i")
WAIT = 10.0  # s: longest wait for a spare's pid (the agent can stop or kill it meanwhile)
POLL_MS = 20
GO_FD = 64  # the spare's go pipe at or above this
NO_FORK = -1  # the reply when no process could be made (pid 1 tries again later)
ORPHANED = -2


class ZygoteGone(RuntimeError):
    """No clean interpreter can be made in this sandbox any more: it must be replaced."""

    restart = True  # the supervisor's reply says so (see main.Supervisor._answer)


class Zygote:
    """Pid 1's end of the zygote."""

    def __init__(self, fds, env):
        self.pid = None
        self.sock = None
        self.lost = None  # why the zygote is gone (None: alive, or never started)
        from . import shell

        # the resource limits of every interpreter, as they are at boot (not pid 1's
        # later: the agent may lower those too)
        self.limits = shell.proc_read("%d/limits" % os.getpid())
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for s in (parent, child):
            s.set_inheritable(False)
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            try:
                stream.flush()
            except (ValueError, OSError, AttributeError):
                pass
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                _serve(child, fds, env)
            finally:
                os._exit(1)
        child.close()
        self.pid, self.sock = pid, parent

    def alive(self):
        return self.lost is None and self.pid is not None

    def gone(self, why):
        """The zygote died or failed: kill what is left of it, remember why."""
        if self.lost is None:
            self.lost = why
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def spare(self, needed=False):
        """``(pid, go pipe's write end)`` of a new spare interpreter, a child of pid 1.

        A fork the zygote cannot make now is ``OSError`` (a spare made ahead is tried
        again later) or, when the interpreter is ``needed``, :class:`ZygoteGone`: the
        agent, the same user, may have lowered the zygote's limits (``prlimit``)."""
        if not self.alive():
            raise ZygoteGone("the sandbox's interpreter zygote is gone (%s): the sandbox "
                             "must be replaced" % (self.lost or "never started",))
        from . import shell

        if not shell.same_limits(self.pid, self.limits):  # its spares would have them
            self.gone("its resource limits were changed")
            raise ZygoteGone("the sandbox's interpreter zygote had its resource limits "
                             "changed: the sandbox must be replaced")
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        try:
            try:
                os.kill(self.pid, signal.SIGCONT)  # the freezer (or the agent) may stop it
                socket.send_fds(self.sock, [b"s"], [go_r])
            except OSError as exc:
                self.gone("cannot reach it: %s" % (exc,))
                raise ZygoteGone("the sandbox's interpreter zygote is gone: %s" % (exc,)) \
                    from None
            finally:
                os.close(go_r)
            try:
                pid = self._reply()
            except OSError as exc:
                if not needed:
                    raise
                self.gone("it could not fork: %s" % (exc.strerror or exc,))
                raise ZygoteGone("the sandbox's interpreter zygote could not fork an "
                                 "interpreter: the sandbox must be replaced") from None
        except BaseException:
            os.close(go_w)
            raise
        return pid, go_w

    def _reply(self):
        from . import shell

        deadline = time.monotonic() + WAIT
        while True:
            ready, _, _ = select.select([self.sock], [], [], POLL_MS / 1000.0)
            if ready:
                try:
                    data = self.sock.recv(REPLY.size)
                except OSError:
                    data = b""
                if len(data) == REPLY.size:
                    pid = REPLY.unpack(data)[0]
                    if pid <= 0:
                        raise OSError(errno.EAGAIN, "the zygote could not fork a spare")
                    return pid
                self.gone("its socket closed")
                break
            if shell.dying(self.pid):
                self.gone("it was killed")
                break
            if time.monotonic() > deadline:
                self.gone("no spare reported within %g s" % WAIT)
                break
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        raise ZygoteGone("the sandbox's interpreter zygote is gone (%s): the sandbox must "
                         "be replaced" % (self.lost,))


def _serve(sock, fds, env):
    """The zygote's loop (never returns)."""
    # imported here, so in every interpreter (each reseeds it, see _spare): its state is
    # in every snapshot; one imported after a snapshot would draw a new seed at a restore
    import random  # noqa: F401

    from . import pyhold, pyrepl

    limits = rlimits.current()  # pid 1's once set up: every interpreter's
    pyhold._dumpable(False)
    handlers = {}
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            handlers[sig] = signal.getsignal(sig)
            # SIGCHLD ignored would reap the intermediate process waited for below
            signal.signal(sig, signal.SIG_DFL if sig == signal.SIGCHLD else signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    signal.set_wakeup_fd(-1)
    table = pyrepl.signal_table(handlers)
    pyrepl.prepare(env)  # once here, not in every interpreter
    keep = {0, 1, 2, sock.fileno(), *fds}
    if oomguard._procs is not None:
        keep.add(oomguard._procs)
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass
    while True:
        try:
            _msg, got, _flags, _addr = socket.recv_fds(sock, 16, 1)
        except OSError:
            os._exit(1)
        if not _msg:  # pid 1 is gone
            os._exit(0)
        if len(got) != 1:
            for fd in got:
                os.close(fd)
            continue
        # above the descriptors the interpreter's setup puts in place (0-2, 60-63)
        go_r = fcntl.fcntl(got[0], fcntl.F_DUPFD_CLOEXEC, GO_FD)
        os.close(got[0])
        try:
            pid = pyhold._sibling()
            if pid is None:
                pid = _orphan(sock)
        except OSError:  # no fork now (the agent's processes are at their limit)
            pid = -1
        if pid == 0:
            _spare(sock, fds, env, go_r, table, pyrepl, limits)
        if pid < 0 and pid != ORPHANED:
            _tell(sock, NO_FORK)
        os.close(go_r)


def _orphan(sock):
    """A copy adopted by pid 1 (through a process that exits at once): 0 in the copy,
    :data:`ORPHANED` here (the copy reports its pid itself)."""
    middle = os.fork()
    if middle == 0:
        try:
            if os.fork():
                os._exit(0)
        except BaseException:
            _tell(sock, NO_FORK)
            os._exit(1)
        return 0
    os.waitpid(middle, 0)
    return ORPHANED


def _tell(sock, value):
    try:
        sock.send(REPLY.pack(value))
    except OSError:
        pass


def _spare(sock, fds, env, go_r, table, pyrepl, limits):
    """In the new spare: report its pid to pid 1, then become the interpreter."""
    try:
        _tell(sock, os.getpid())
        sock.close()
        # what a fork of pid 1 had (SIGXFSZ ignored), and the interpreter's own
        pyrepl.set_signals(table)
        rlimits.apply(limits)  # set, not inherited (see rlimits)
        if "random" in sys.modules:  # a raw fork runs no at-fork hook: reseed as os.fork does
            sys.modules["random"].seed()
        oomguard.join()
    except BaseException:
        os._exit(1)
    pyrepl.start(fds, env, go_fd=go_r, prepared=True)
