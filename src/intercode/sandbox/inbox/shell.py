"""The persistent shell of a sandbox and the killing of its processes.

The shell reads actions from descriptor 63 (a line ``<seq> <length>`` then the
action's bytes and, for short actions, a NUL), runs each with ``eval`` while the
control descriptors are closed for the action, and writes ``<seq> <status> <cwd>``
followed by a NUL to descriptor 62. Its standard output and error share one pipe,
so they interleave as on a terminal; standard input is ``/dev/null``.
"""

import os
import signal
import time

ACTION_FD = 63
STATUS_FD = 62
SHORT_ACTION = 4096

# One line, so that error messages of one-line actions say "line 1" as `bash -c` does.
LOOP = (
    "while IFS=' ' read -r -u 63 __ic_seq __ic_len; do "
    "if (( __ic_len > %d )); then "
    "__ic_act=$(head -c \"$__ic_len\" <&63; printf x); __ic_act=${__ic_act%%x}; "
    "else IFS= read -r -d '' -u 63 __ic_act; fi; "
    "eval \"$__ic_act\" 62>&- 63<&-; "
    "printf '%%s %%d %%s\\0' \"$__ic_seq\" \"$?\" \"$PWD\" >&62; "
    "done" % SHORT_ACTION
)


def encode_action(seq, action_bytes):
    """Bytes to write to the shell's action descriptor for one action."""
    head = ("%d %d\n" % (seq, len(action_bytes))).encode("ascii")
    if len(action_bytes) > SHORT_ACTION:
        return head + action_bytes
    return head + action_bytes + b"\0"


class Shell:
    """Spawns the shell process; the host talks to it directly over the pipes."""

    def __init__(self, shell_path, action_r, output_w, status_w, env):
        self.shell_path = shell_path
        self.fds = (action_r, output_w, status_w)
        self.env = env
        self.pid = None

    def spawn(self, cwd):
        """Start a new shell in ``cwd`` (``/`` if it no longer exists)."""
        action_r, output_w, status_w = self.fds
        here = os.getcwd()
        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        try:
            self.pid = os.posix_spawn(
                self.shell_path,
                [self.shell_path, "--norc", "--noprofile", "-c", LOOP],
                self.env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, output_w, 1),
                    (os.POSIX_SPAWN_DUP2, output_w, 2),
                    (os.POSIX_SPAWN_DUP2, action_r, ACTION_FD),
                    (os.POSIX_SPAWN_DUP2, status_w, STATUS_FD),
                ],
                setsigdef=(signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE),
                setsid=True,
            )
        finally:
            os.chdir(here)
        return self.pid

    def cwd(self):
        """The shell's current directory, or ``None`` if it cannot be read."""
        if self.pid is None:
            return None
        try:
            return os.readlink("/proc/%d/cwd" % self.pid)
        except OSError:
            return None


def live_pids(exclude):
    """Pids of the processes in this pid namespace that are not zombies."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in exclude:
            continue
        try:
            with open("/proc/%d/stat" % pid, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        state = data[data.rfind(b")") + 2:data.rfind(b")") + 3]
        if state not in (b"Z", b"X"):
            pids.append(pid)
    return pids


def usage(exclude):
    """``(count, rss_by_pid)`` of the live processes not in ``exclude``."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss = {}
    for pid in live_pids(exclude):
        try:
            with open("/proc/%d/statm" % pid, "rb") as fh:
                rss[pid] = int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return len(rss), rss


def process_name(pid):
    """The command name of a process, or ``?``."""
    try:
        with open("/proc/%d/comm" % pid) as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def kill_all(keep, reap):
    """Kill every process of the namespace except pid 1 and ``keep``.

    Everything is stopped at once first (``kill(-1, SIGSTOP)`` from pid 1 reaches
    all other processes), so nothing can fork while the survivors are killed; the
    kept processes are then continued. ``reap`` collects our own dead children.
    """
    keep = set(keep)
    for _attempt in range(100):
        if keep:
            _signal_all(signal.SIGSTOP)
            victims = live_pids(keep | {1, os.getpid()})
            for pid in victims:
                _signal(pid, signal.SIGKILL)
            for pid in keep:
                _signal(pid, signal.SIGCONT)
        else:
            _signal_all(signal.SIGKILL)
            return
        reap()
        if not victims:
            return
        time.sleep(0.0005)
    raise RuntimeError("processes survived 100 rounds of SIGKILL")


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
