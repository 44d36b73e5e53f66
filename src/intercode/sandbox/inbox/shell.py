"""The persistent shell of a sandbox and the killing of its processes.

The shell reads actions from descriptor 63 (a line ``<seq> <length>`` then the
action's bytes and, for short actions, a NUL), runs each with ``eval`` while the
control descriptors are closed for the action, and writes ``<seq> <status> <cwd>``
followed by a NUL to descriptor 62. ``<seq>`` is a random token the host draws for
each action, so a status for a later action cannot be written in advance. Its
standard output and error share one pipe, so they interleave as on a terminal (after
each action both point at it again, from a copy on descriptor 60); standard input is
``/dev/null``.

The agent's own code runs in this process, so an action can always end itself early
(as ``exit`` can); the protocol descriptors are not inherited by the programs it starts,
when the host runs as root their pipes belong to a user that does not exist in the
sandbox, so they cannot be reopened through ``/proc/<shell>/fd`` either, and the seccomp
filter refuses copying them with ``pidfd_getfd``. (A process of the agent's that traces
the shell can still take them: see the residual risks in ``docs/security.md``.)
"""

import os
import signal
import sys
import time

from . import oomguard, rlimits

ACTION_FD = 63
STATUS_FD = 62
OUTPUT_FD = 60  # a copy of the output pipe: 1 and 2 are pointed at it again after each action
SHORT_ACTION = 4096
FORKED = ("python", "sqlite")  # shells forked from the supervisor, not executed
KILL_TIMEOUT = 20.0  # seconds a killed process may take to exit before it is an error
READ_SYSCALL = {"x86_64": b"0", "aarch64": b"63"}.get(os.uname().machine)
FROZEN_STATES = (b"T", b"t", b"D", b"Z", b"X")
ASLEEP = "asleep"  # see freeze_step
# /proc, held open from the start: an agent that locks "/" (chmod 000) must not blind the
# supervisor, which runs as the agent's user (forked shells close it with their other fds)
PROC_FD = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def dying(pid):
    """Whether process ``pid`` is gone, a zombie, exiting, or has a SIGKILL pending (the
    agent's processes, same user, can kill any of ours that pid 1 does not own)."""
    try:
        stat = proc_read("%d/stat" % pid)
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] in (b"Z", b"X") or int(fields[6]) & 0x4:  # PF_EXITING
            return True
        status = proc_read("%d/status" % pid)
    except OSError:
        return True
    kill_bit = 1 << (signal.SIGKILL - 1)
    for key in (b"\nSigPnd:", b"\nShdPnd:"):
        start = status.find(key)
        if start < 0:
            continue
        start += len(key)
        end = status.find(b"\n", start)
        if int(status[start:end if end >= 0 else len(status)], 16) & kill_bit:
            return True
    return False


def same_limits(pid, expected):
    """Whether process ``pid``'s resource limits are ``expected`` (the text of its
    ``/proc/<pid>/limits``): the agent, the same user, may lower those of any process of
    the sandbox with ``prlimit``, the supervisor's too."""
    try:
        return proc_read("%d/limits" % pid) == expected
    except OSError:
        return False


def proc_read(rel):
    """The bytes of ``/proc/<rel>`` (read through :data:`PROC_FD`)."""
    fd = os.open(rel, os.O_RDONLY | os.O_CLOEXEC, dir_fd=PROC_FD)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)

# One line, so that error messages of one-line actions say "line 1" as `bash -c` does.
# (Not ``read -N <length>``, which reads a pipe in blocks: -N counts characters, and a
# ``LC_ALL=C`` for it cannot be had in a shell where the agent made LC_ALL read-only; a
# multibyte action then waited for bytes that never came, until its time limit.)
LOOP = (
    "while IFS=' ' read -r -u 63 __ic_seq __ic_len; do "
    "if (( __ic_len > %d )); then "
    "__ic_act=$(head -c \"$__ic_len\" <&63; printf x); __ic_act=${__ic_act%%x}; "
    "else IFS= read -r -d '' -u 63 __ic_act; fi; "
    "eval \"$__ic_act\" 60>&- 62>&- 63<&-; "
    "__ic_st=$?; exec 1>&60 2>&60; "
    "printf '%%s %%d %%s\\0' \"$__ic_seq\" \"$__ic_st\" \"$PWD\" >&62; "
    "done" % SHORT_ACTION
)

# runs ``$1`` (then forgets it) on the loop's own line: see Shell.spawn
PRELUDE = '{ eval "$1"; builtin set --; } </dev/null >/dev/null 2>&1; '
# The same bash built statically (Debian's bash-static, in the root file system): it starts
# in about 60% of the time (no dynamic linking). What shows: /proc/<shell>/exe, and
# ``enable -f`` (loadable builtins) says "dynamic loading not available"; $BASH and $0 are
# /bin/bash still. Programs the agent runs get /bin/bash.
STATIC_BASH = "/bin/bash-static"
# ... run by its real path (/usr/bin/bash-static), found when pid 1 starts, and only if
# nothing of the agent's can change what that path names (see fixed_program): "/bin" is a
# link in the agent's writable root that it may point at a directory of its own, and a
# shell begun before the tree's restore (Shell.begin) ran the agent's program, found in
# the tree the restore was about to undo. (Not /proc/self/fd/<n>: the kernel names a
# process after the file name it executes, and ps and pstree would show the shell as "<n>")
GO_FD = 61  # a shell begun before the tree's restore reads its directory there (Shell.begin)
# ... and goes there as if it had started in it (a new bash has an exported, empty OLDPWD;
# no function or alias exists yet; ``builtin exec`` would not keep the descriptor closed)
AWAIT_GO = ("IFS= read -r -d '' -u %d __ic_cwd || exit 1; exec %d<&-; "
            'cd -- "$__ic_cwd" 2>/dev/null || cd /; unset OLDPWD __ic_cwd; declare -x OLDPWD; '
            % (GO_FD, GO_FD))
MAX_PRELUDE = 100000  # bytes: an argument's limit is 128 KiB


def encode_action(seq, action_bytes, kind=None):
    """Bytes to write to the shell's action descriptor for one action.

    ``kind`` (only for the Python interpreter) is ``exec`` or ``eval``.
    """
    if kind is None:
        head = ("%s %d\n" % (seq, len(action_bytes))).encode("ascii")
    else:
        head = ("%s %d %s\n" % (seq, len(action_bytes), kind)).encode("ascii")
    if len(action_bytes) > SHORT_ACTION:
        return head + action_bytes
    return head + action_bytes + b"\0"


class Shell:
    """Spawns the shell process; the host talks to it directly over the pipes."""

    def __init__(self, shell_path, action_r, output_w, status_w, env):
        # a path (bash), "python" / "sqlite" (forked), or the argv of a program that
        # speaks the protocol below itself
        self.shell_path = shell_path
        self.fds = (action_r, output_w, status_w)
        self.env = env
        self.pid = None
        self.spare = None  # (pid, go pipe) of a ready Python interpreter or SQL engine
        self.data = b""  # what the SQL engine starts with (the host's database images)
        self.zygote = None  # the Python interpreters' clean parent (see zygote)
        self.go_w = None  # the go pipe of a bash begun and waiting for its directory
        # the supervisor's limits once set up (see rlimits): of every process started here
        self.rlimits = rlimits.current()
        self.limits_text = None  # ... as /proc/<pid>/limits shows them
        # bash-static's fixed path, found at the start (see STATIC_BASH): None where none
        self.static_exe = fixed_program(STATIC_BASH) if shell_path == "/bin/bash" else None

    def start_zygote(self):
        """Python: fork the interpreters' clean parent, before any episode's data exists
        in this process (see ``zygote``)."""
        if self.shell_path == "python" and self.zygote is None:
            from . import zygote

            self.zygote = zygote.Zygote(self.fds, self.env)

    def resident(self):
        """Pids that a kill of the agent's processes spares: the zygote and the spare."""
        pids = self.zygote_pids()
        if self.spare is not None:
            pids.add(self.spare[0])
        return pids

    def forget(self, pid):
        """A child died: the spare (the agent may kill it: make another one later) or the
        zygote (no clean interpreter can be made any more)."""
        self.forget_spare(pid)
        if self.zygote is not None and pid == self.zygote.pid:
            self.zygote.pid = None  # reaped: its pid may be another process's already
            self.zygote.gone("it died")

    def spawn(self, cwd, prelude=None):
        """Start a new shell in ``cwd`` (``/`` if it no longer exists).

        ``prelude`` (bash only): a script the shell runs before its loop, its output
        dropped (a restore's shell state). It is evaluated on the loop's line, so the
        loop is parsed before any alias the script defines exists.
        """
        if self.shell_path in FORKED:
            return self._fork_python(cwd)
        self.abandon()
        root_searchable()
        here = os.getcwd()
        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        try:
            if isinstance(self.shell_path, list):  # a program that speaks the protocol
                argv = self.shell_path
                if oomguard.active():  # it joins through sh, never holding the descriptor
                    argv = ["/bin/sh", "-c", oomguard.shell_prefix() + 'exec "$@"', "sh",
                            *argv]
                self.pid = self._launch(argv)
            else:
                self.pid = self._spawn_bash("", prelude)
        finally:
            os.chdir(here)
        return self.pid

    def begin(self, prelude=None):
        """Bash: start the next shell now, while the tree is still being restored (a
        bash takes about a millisecond to start): it waits, before it runs anything,
        for :meth:`go` to give it its directory. Its start reads nothing of the writable
        tree. Only called once every process of the agent's is gone (none can reach
        it). Only bash-static, by a path the agent cannot change (see
        :func:`fixed_program`): any other program is found through the writable tree
        (``/bin``, and a dynamic bash's loader and libraries through ``/lib64`` and
        ``/lib``), the agent's still. Other shells: nothing (``False``), they start after
        the restore."""
        if self.static_exe is None:
            return False
        self.abandon()
        root_searchable()
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        try:
            self.pid = self._spawn_bash(AWAIT_GO, prelude, [(os.POSIX_SPAWN_DUP2, go_r, GO_FD)])
        except BaseException:
            os.close(go_w)
            raise
        finally:
            os.close(go_r)
        self.go_w = go_w
        return True

    def go(self, cwd):
        """Send the shell :meth:`begin` started to ``cwd`` (``/`` if it cannot go there)
        to start its loop; ``False`` if no shell was begun."""
        if self.go_w is None:
            return False
        go_w, self.go_w = self.go_w, None
        try:
            os.write(go_w, cwd.encode("utf-8", "surrogateescape") + b"\0")
        except OSError:  # it died already: reaped as the shell, the host hears of it
            pass
        finally:
            os.close(go_w)
        return True

    def abandon(self):
        """Let a shell begun and not sent on exit (its restore failed)."""
        if self.go_w is not None:
            os.close(self.go_w)
            self.go_w = None

    def _spawn_bash(self, wait, prelude, actions=()):
        """posix_spawn the bash loop (``wait``: a script before it), ``prelude`` its
        ``$1`` (see :meth:`spawn`)."""
        script = oomguard.shell_prefix() + wait + (PRELUDE if prelude is not None else "") + LOOP
        argv = [self.shell_path, "--norc", "--noprofile", "-c", script, self.shell_path]
        if prelude is not None:
            argv.append(prelude)
        return self._launch(argv, actions, self.static_exe or self.shell_path)

    def _launch(self, argv, actions=(), exe=None):
        """posix_spawn ``argv`` (``exe``: the program, else ``argv[0]``) as the shell: its
        descriptors, signals and session."""
        action_r, output_w, status_w = self.fds
        return os.posix_spawn(
            exe or argv[0],
            argv,
            self.env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, output_w, 1),
                (os.POSIX_SPAWN_DUP2, output_w, 2),
                (os.POSIX_SPAWN_DUP2, output_w, OUTPUT_FD),
                (os.POSIX_SPAWN_DUP2, action_r, ACTION_FD),
                (os.POSIX_SPAWN_DUP2, status_w, STATUS_FD),
                *actions,
                *oomguard.spawn_actions(),
            ],
            setsigdef=(signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE),
            setsid=True,
        )

    def _fork_python(self, cwd):
        spare, self.spare = self.spare, None
        if spare is not None and (dying(spare[0]) or (
                self.limits_text is not None and not same_limits(spare[0], self.limits_text))):
            # the agent killed the spare and we have not reaped it yet (seen in CI: the
            # first action after a restore then found its interpreter dead, status 137),
            # or its limits are not the supervisor's (lowered by prlimit, or forked while
            # the supervisor's were), which the next episode's interpreter would have had
            os.close(spare[1])
            try:
                os.kill(spare[0], signal.SIGKILL)
                os.waitpid(spare[0], 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            spare = None
        if spare is not None:
            pid, go_w = spare
            try:
                os.write(go_w, cwd.encode("utf-8", "surrogateescape") + b"\n")
                os.close(go_w)
                self.pid = pid
                return pid
            except OSError:
                os.close(go_w)
        pid = self._fork(True)
        os.write(pid[1], cwd.encode("utf-8", "surrogateescape") + b"\n")
        os.close(pid[1])
        self.pid = pid[0]
        return self.pid

    def make_spare(self):
        """Fork a ready interpreter or SQL engine for the next reset."""
        if self.shell_path in FORKED and self.spare is None:
            if self.zygote is not None and not self.zygote.alive():
                return  # a reset will say so (ZygoteGone): the sandbox is replaced
            try:
                self.spare = self._fork(False)
            except OSError:
                pass  # no fork now (the agent's processes are at their limit): later
            except RuntimeError as exc:
                if not getattr(exc, "restart", False):
                    raise
                # the agent killed or stopped the zygote (or the spare): a reset says so

    def zygote_pids(self):
        """``{pid}`` of a live zygote (else empty): no kill of the agent's spares it."""
        if self.zygote is not None and self.zygote.alive():
            return {self.zygote.pid}
        return set()

    def _fork(self, needed):
        """``(pid, go pipe)`` of a new interpreter or SQL engine (``needed``: now, for
        the episode, else a spare made ahead)."""
        if self.shell_path == "python":
            if self.zygote is None:
                raise RuntimeError("no interpreter zygote (Shell.start_zygote)")
            return self.zygote.spare(needed)  # never a fork of this process: see zygote
        from . import sqlrepl

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (ValueError, OSError):
                pass
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            oomguard.join()
            rlimits.apply(self.rlimits)  # not pid 1's of the moment
            os.close(go_w)
            sqlrepl.start(self.fds, self.env, go_r, self.data)
        os.close(go_r)
        return pid, go_w

    def forget_spare(self, pid):
        """The spare died (the agent may kill it): make another one later."""
        if self.spare is not None and self.spare[0] == pid:
            try:
                os.close(self.spare[1])
            except OSError:
                pass
            self.spare = None

    def cwd(self):
        """The shell's current directory, or ``None`` if it cannot be read."""
        if self.pid is None:
            return None
        try:
            return os.readlink("%d/cwd" % self.pid, dir_fd=PROC_FD)
        except OSError:
            return None


def fixed_program(path):
    """The real path of the executable ``path`` if nothing of the agent's can change what
    it names, else ``None``: its first directory is a mount point (a name in the root
    that cannot be renamed or removed: ``EBUSY``) and every directory on it is on a
    read-only mount (where no entry can change). Called when pid 1 starts, before any of
    the agent's code: ``/bin/bash-static`` is ``/usr/bin/bash-static`` (``/usr`` a
    read-only bind mount on both backends)."""
    real = os.path.realpath(path)
    if not os.access(real, os.X_OK) or os.path.islink(real):
        return None
    parts = real.strip("/").split("/")
    try:
        if len(parts) < 2 or os.lstat("/" + parts[0]).st_dev == os.lstat("/").st_dev:
            return None
        for depth in range(1, len(parts)):
            where = "/" + "/".join(parts[:depth])
            if os.path.islink(where) or not os.statvfs(where).f_flag & os.ST_RDONLY:
                return None
    except OSError:
        return None
    return real


def root_searchable():
    """Give "/" back its owner's search bit if the agent took it (``chmod 000 /``).

    No program starts under a root nobody may search (the kernel finds the shell and
    its loader by path), so a new shell could not start after such an action. A
    directory's mode is not scored, and upstream's agent (root) was never bound by it.
    """
    mode = os.stat("/").st_mode & 0o7777
    if not mode & 0o100:
        os.chmod("/", mode | 0o100)


def states(exclude):
    """``{pid: state letter}`` of the processes in this pid namespace not in ``exclude``."""
    found = {}
    for name in os.listdir(PROC_FD):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in exclude:
            continue
        try:
            data = proc_read("%d/stat" % pid)
        except OSError:
            continue
        end = data.rfind(b")")
        state = data[end + 2:end + 3]
        if state in (b"Z", b"X"):
            thread = live_thread(pid)
            if thread is not None:
                state = thread[1]
        found[pid] = state
    return found


def live_thread(pid):
    """``(tid, state letter)`` of a live thread of ``pid`` whose first thread has exited
    (``syscall(SYS_exit)`` in the main thread): its ``stat`` then says ``Z`` and its
    ``maps`` is empty, but its other threads run on, a live process. A running thread is
    preferred to a stopped one; ``None`` if no thread lives (a zombie, or gone)."""
    try:
        fd = os.open("%d/task" % pid, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC,
                     dir_fd=PROC_FD)
    except OSError:
        return None
    try:
        tids = os.listdir(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    found = None
    for name in tids:
        if not name.isdigit() or int(name) == pid:
            continue
        try:
            data = proc_read("%d/task/%s/stat" % (pid, name))
        except OSError:
            continue
        state = data[data.rfind(b")") + 2:][:1]
        if state in (b"Z", b"X"):
            continue
        if found is None or (found[1] in FROZEN_STATES and state not in FROZEN_STATES):
            found = (int(name), state)
    return found


def live_pids(exclude):
    """Pids of the processes in this pid namespace that are not zombies.

    A process that is still exiting (freeing a large memory, say) counts as live, as does
    one whose first thread exited while others run on (see :func:`live_thread`).
    """
    return [pid for pid, state in states(exclude).items() if state not in (b"Z", b"X")]


def usage(exclude):
    """``(count, memory_by_pid)`` of the live processes not in ``exclude``: a process's
    memory is its resident memory plus its page tables (a process that maps much and
    touches little holds megabytes of page tables and a few KiB resident)."""
    held = {}
    for name in os.listdir(PROC_FD):  # one read of each process's status (not stat too)
        if not name.isdigit() or int(name) in exclude:
            continue
        try:
            status = proc_read("%s/status" % name)
            at = status.index(b"\nState:") + len(b"\nState:")
            if status[at:at + 3].strip()[:1] in (b"Z", b"X"):  # as live_pids: not live,
                thread = live_thread(int(name))  # unless its other threads run on
                if thread is None:
                    continue
                status = proc_read("%s/task/%d/status" % (name, thread[0]))
            held[int(name)] = _memory(status)
        except (OSError, IndexError, ValueError):
            continue
    return len(held), held


def _memory(status):
    """Bytes of ``VmRSS`` + ``VmPTE`` in a ``/proc/<pid>/status`` (0 for a process
    without memory, e.g. a zombie)."""
    total = 0
    for key in (b"\nVmRSS:", b"\nVmPTE:"):
        at = status.find(key)
        if at >= 0:
            total += int(status[at + len(key):status.index(b"kB", at)]) << 10
    return total


def process_name(pid):
    """The command name of a process, or ``?``."""
    try:
        return proc_read("%d/comm" % pid).decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def kill_all(keep, reap, timeout=KILL_TIMEOUT, stay=()):
    """Kill every process of the namespace except pid 1 and ``keep``.

    Everything is stopped at once first (``kill(-1, SIGSTOP)`` from pid 1 reaches
    all other processes), so nothing can fork while the survivors are killed; the
    kept processes are then continued, except those of ``stay`` (held interpreters:
    see :func:`thaw`). ``reap`` collects our own dead children.
    A killed process may take a while to exit (unmapping gigabytes of memory): the
    loop waits until ``timeout`` seconds have passed before it gives up.
    """
    keep = set(keep)
    stay = set(stay)
    if not keep:
        _signal_all(signal.SIGKILL)
        return
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        _signal_all(signal.SIGSTOP)
        victims = live_pids(keep | {1, os.getpid()})
        for pid in victims:
            _signal(pid, signal.SIGKILL)
        for pid in keep - stay:
            _signal(pid, signal.SIGCONT)
        reap()
        if not victims:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("%d processes survived SIGKILL for %g s" % (len(victims), timeout))
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def freeze_step(idle):
    """One step of freezing: True if no process runs, else stop them all (and False).

    ``idle`` maps pids that need no stopping to the descriptor they must be blocked
    reading (``None``: any; :data:`ASLEEP`: any sleep, for the spare and the zygote,
    which run none of the agent's code and whose ``syscall`` files the supervisor may
    not read: they are not dumpable, see ``pyrepl.child_setup``; held interpreters are
    idle only when stopped, see ``freezer``): the shell waiting for its next action uses
    no CPU, so when nothing else runs, nothing is signalled (and the next action needs no thaw).
    Otherwise ``kill(-1, SIGSTOP)`` stops everything at once, the shell included (a
    process in the middle of a fork too); the caller repeats until this returns True,
    so that a process continued by another in the middle of a round is caught.
    A process in uninterruptible sleep (``D``) counts as stopped: it stops before
    it can return to user mode.
    """
    waiting = [pid for pid, fd in idle.items()
               if pid is not None and fd != ASLEEP and blocked_reading(pid, fd)]
    asleep = {pid for pid, fd in idle.items() if fd == ASLEEP}
    running = [p for p, st in states({1, os.getpid(), *waiting}).items()
               if st not in FROZEN_STATES and not (p in asleep and st == b"S")]
    if not running:
        return True
    _signal_all(signal.SIGSTOP)
    return False


def blocked_reading(pid, fd=None):
    """Whether ``pid`` sleeps in ``read`` (on descriptor ``fd``, if given) and has no other
    thread: ``syscall`` shows the first thread only, and a thread the agent's interpreter
    started runs on while the first one waits for the next action."""
    if READ_SYSCALL is None:
        return False
    try:
        fields = proc_read("%d/syscall" % pid).split()
    except OSError:
        return False
    if len(fields) < 2 or fields[0] != READ_SYSCALL:
        return False
    if fd is not None and fields[1] != b"%#x" % fd:
        return False
    return single_threaded(pid)


def single_threaded(pid):
    """Whether process ``pid`` runs one thread (``False`` if it is gone)."""
    try:
        status = proc_read("%d/status" % pid)
    except OSError:
        return False
    at = status.find(b"\nThreads:")
    return at >= 0 and status[at + len(b"\nThreads:"):].split(None, 1)[:1] == [b"1"]


THAW_ROUNDS = 8  # scans of a thaw that leaves some processes stopped (see thaw)


def thaw(stay=()):
    """Continue every process (the counterpart of :func:`freeze`), except ``stay``.

    ``stay`` are the held interpreters: each runs again only when its own snapshot is
    restored, since the agent's interpreter names them and may name a process of its
    own, which would otherwise run on in whatever branch is restored next. Without
    them, one ``kill(-1, SIGCONT)``; with them, every other process is continued by
    pid, whatever its state (one in uninterruptible sleep with a stop still pending
    would stop after the thaw), and the scan is repeated while it found a stopped one
    (a child forked while its parent was being stopped inherits the stop after the
    scan saw the parent). A traced process (``t``) is not waited for: no SIGCONT ends
    that stop.
    """
    if not stay:
        _signal_all(signal.SIGCONT)
        return
    exclude = {1, os.getpid(), *stay}
    for _ in range(THAW_ROUNDS):
        found = states(exclude)
        for pid in found:
            _signal(pid, signal.SIGCONT)
        if b"T" not in found.values():
            return


def wait_gone(keep, reap, deadline):
    """Reap until only ``keep`` (and us) remain or the deadline passes."""
    while True:
        reap()
        if not live_pids(set(keep) | {1, os.getpid()}):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)


def _signal_all(sig):
    try:
        os.kill(-1, sig)
    except ProcessLookupError:
        pass


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
