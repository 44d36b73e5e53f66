"""Held copies of the Python interpreter: the execution state of a snapshot.

On a ``hold`` request the interpreter forks; the copy waits, using no CPU, in
``sigwaitinfo`` for a ``SIGUSR1``, and runs nothing of the agent's meanwhile (see
:func:`_wait`: an agent that ran code in it, through a signal handler of its own, carried
a later state into the restore of the snapshot). Each ``SIGUSR1`` the supervisor sends
(see ``snaps``; one from anyone else is ignored), once the interpreter that made the
copy is dead, so that the copy's parent is the supervisor, makes it fork a new
interpreter that is the supervisor's child, and wait again: a held copy is restored
any number of times. The new interpreter waits, as quiet as the copy, for the
supervisor's ``SIGUSR2`` (it restores the snapshot's tree meanwhile: the fork and the
restore run at once), then returns from :func:`hold` with ``None`` and goes on serving
actions with the namespace, the directory and everything else as
they were at the snapshot.

That fork is ``clone(CLONE_PARENT)``: one fork, whose child is its parent's child
(see :func:`_sibling`). Where it is not available, the copy forks an intermediate
process that forks the new interpreter and exits at once, so that the new
interpreter is an orphan adopted by the supervisor (two forks and an exit: about
a millisecond more per restore).

The forks are ``fork(2)`` itself, not ``os.fork()``, while the interpreter runs one
thread: CPython's child side of ``os.fork()`` replaces its internal locks by new ones
and leaks the old ones on purpose (``_PyThread_at_fork_reinit``: about 290 bytes per
fork), and a restore made three forks, so a long chain of snapshots and restores
grew by about 1 KiB per cycle. With a single thread no lock can be held by another
thread, so nothing needs reinitialising (the child's thread has the parent's thread
id). It also leaves ``os.register_at_fork`` hooks unrun, so that ``random`` is not
reseeded: a restored interpreter's random state is the snapshot's.
"""

import _signal
import gc
import os
import signal
import sys

# What the held copy and the new interpreter call before the go, taken when this module is
# imported (before any of the agent's code ran): the agent shares these modules with
# them, and a patched ``signal.sigwaitinfo`` (or a function of ``os``, ``gc``, ``sys``,
# ``threading``, a builtin, ``builtins.__import__`` at an ``import``) ran its code in the
# held copy (it pushed a later state into it) and in the new interpreter before its go.
# The C functions of ``_signal`` (those of ``signal`` wrap their sets in ``Signals``
# through a function of that module): sets of plain ints.
_sigwaitinfo = _signal.sigwaitinfo
_sigmask = _signal.pthread_sigmask
_all_signals = _signal.valid_signals
SIG_BLOCK, SIG_SETMASK = int(signal.SIG_BLOCK), int(signal.SIG_SETMASK)
SIGUSR1, SIGUSR2, SIGCHLD = int(signal.SIGUSR1), int(signal.SIGUSR2), int(signal.SIGCHLD)
_gc_enable, _gc_disable, _gc_isenabled = gc.enable, gc.disable, gc.isenabled
_os_fork, _waitpid, _exit, _getppid = os.fork, os.waitpid, os._exit, os.getppid
_frames = sys._current_frames
_len = len
_listdir = os.listdir


def _alone():
    """Whether this process runs one thread, as the kernel counts them: a thread an
    at-fork hook has just started may have no Python frame yet (``_frames`` misses it)."""
    try:
        return _len(_listdir("/proc/self/task")) == 1
    except OSError:
        return False

_raw = []  # (libc's fork, called holding the GIL: PyDLL; ctypes.get_errno); empty: not yet
_clone = []  # see _clone_setup; [None]: unusable here; empty: not looked at yet
_prctl = []  # libc's prctl ([None]: not here); empty: not loaded yet
CLONE_PARENT = 0x00008000
PR_SET_DUMPABLE = 4
CLONE_SYSCALL = {"x86_64": 56, "aarch64": 220}  # clone's flags are its first argument on both
# where glibc keeps a thread's kernel id in its thread descriptor (``struct pthread``)
TID_OFFSETS = {"x86_64": 0x2D0, "aarch64": 0xD0}
TID_SCAN = 0x800  # bytes of the descriptor searched when the known offset does not hold it


def _fork(fix=True):
    """``fork(2)`` while this interpreter runs one thread, else ``os.fork()`` (``fix``:
    the child sets its thread's native id, see :func:`_fix_native_id`)."""
    if _len(_frames()) != 1:
        return _os_fork()
    if not _raw:
        try:
            import ctypes

            fork = ctypes.PyDLL(None, use_errno=True).fork
            fork.restype = ctypes.c_int
            fork.argtypes = []
            _raw.append((fork, ctypes.get_errno))
        except (ImportError, OSError, AttributeError):
            _raw.append(None)
    if _raw[0] is None:
        return _os_fork()
    fork, get_errno = _raw[0]
    pid = fork()
    if pid < 0:
        errno = get_errno()
        raise OSError(errno, os.strerror(errno))
    if pid == 0 and fix:
        _fix_native_id()
    return pid


def _fix_native_id():
    if "threading" in sys.modules:
        main = sys.modules["threading"].main_thread()
        if hasattr(main, "_native_id"):
            main._native_id = sys.modules["threading"].get_native_id()


def _clone_setup():
    """``(syscall, number, tid address, gettid)`` for :func:`_sibling`, or ``None``.

    A raw ``clone`` does not do what the C library's ``fork`` does in the child: its
    thread descriptor keeps the parent's thread id (read when another thread signals
    this one). The child writes its own there, at the offset where this process's
    thread id is found: the known one of the architecture, else the only place in the
    descriptor that holds it; anywhere else (or twice), ``None``.
    """
    machine = os.uname().machine
    if machine not in CLONE_SYSCALL or len(sys._current_frames()) != 1:
        return None
    try:
        import ctypes

        libc = ctypes.PyDLL(None, use_errno=True)
        syscall = libc.syscall
        syscall.restype = ctypes.c_long
        syscall.argtypes = [ctypes.c_long] * 6
        self_ = libc.pthread_self
        self_.restype = ctypes.c_void_p
        self_.argtypes = []
        base = self_()
        gettid = libc.gettid
        gettid.restype = ctypes.c_int
        gettid.argtypes = []
        tid = gettid()
        if not base or tid <= 0:
            return None
        known = TID_OFFSETS[machine]
        if ctypes.c_int32.from_address(base + known).value == tid:
            offset = known
        else:
            words = (ctypes.c_int32 * (TID_SCAN // 4)).from_address(base)
            found = [4 * i for i, value in enumerate(words) if value == tid]
            if len(found) != 1:
                return None
            offset = found[0]
        return syscall, CLONE_SYSCALL[machine], base + offset, gettid, ctypes.c_int32
    except (ImportError, OSError, AttributeError, ValueError):
        return None


def _sibling(fix=True):
    """A copy of this process made a child of this process's parent: its pid here, 0 in
    the copy, ``None`` if this cannot be done here (``clone(CLONE_PARENT)``; a process
    running one thread only). ``fix``: see :func:`_fork`."""
    if not _clone:
        _clone.append(_clone_setup())
    if _clone[0] is None or _len(_frames()) != 1:
        return None
    syscall, number, tid_at, gettid, int32 = _clone[0]
    pid = syscall(number, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
    if pid < 0:
        return None
    if pid == 0:
        int32.from_address(tid_at).value = gettid()
        if fix:
            _fix_native_id()
    return pid


def hold(flush):
    """Fork a held copy: its pid in the interpreter, ``None`` in a resumed copy.

    The copy starts quiet (see :func:`_wait`): every signal blocked and not dumpable,
    both set here before the fork and put back in the interpreter after it, so that no
    moment of the copy's is left open to the agent."""
    flush()
    if not _clone:  # found once, inherited by the copies (same memory layout)
        _clone.append(_clone_setup())
    supervisor = _getppid()  # the interpreter is the supervisor's child (or adopted by it)
    mask = _sigmask(SIG_BLOCK, _all_signals())
    _dumpable(False)
    try:
        pid = _fork(fix=False)  # the copy's native id is set when it is resumed
    except BaseException:
        pid = -1
        raise
    finally:
        if pid != 0:  # the interpreter: as it was (signals sent meanwhile come now)
            _dumpable(True)
            _sigmask(SIG_SETMASK, mask)
    if pid:
        return pid
    if not _alone():
        # a thread in the copy, just forked: one an at-fork hook of the agent's started
        # (``os.fork`` runs them: the interpreter ran several threads), to push a later
        # state into it; the snapshot is lost (its restore says so)
        _exit(1)
    try:
        _wait(supervisor, mask)
    except BaseException:
        _exit(1)
    _fix_native_id()  # the agent's code may run here: the go has come (see _wait)
    return None


def _dumpable(on):
    if not _prctl:
        try:
            import ctypes

            _prctl.append(ctypes.CDLL(None).prctl)
        except (OSError, AttributeError):
            _prctl.append(None)
    if _prctl[0] is not None:
        _prctl[0](PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0)


def _wait(supervisor, mask):
    """The held copy's loop; returns in a new interpreter.

    Until then the copy runs nothing of the agent's: every signal is blocked (a handler
    the agent installed, in Python or through ``ctypes``, would run its code: it once
    carried a later state into the restore of the snapshot), no garbage is collected (a
    finalizer would), and it is not dumpable (no process of the agent may trace it or
    write its memory). Only a ``SIGUSR1`` sent by the ``supervisor`` counts (the agent,
    the same user, may signal the copy too). The new interpreter starts with no pending
    signal (a new process's) and gets the interpreter's signal mask (``mask``), garbage
    collection and dumpability back; its handlers were never changed."""
    collecting = _gc_isenabled()
    _gc_disable()
    while True:
        info = _sigwaitinfo({SIGUSR1})
        if info.si_pid != supervisor:
            continue
        if not _alone():  # a thread of the agent's (see hold): the snapshot is lost
            _exit(1)
        pid = _sibling(fix=False)
        if pid is None:
            pid = _orphan()
        if pid == 0:
            _await_go(supervisor)
            if collecting:
                _gc_enable()
            _sigmask(SIG_SETMASK, mask - {SIGUSR1})
            _dumpable(True)
            return


def _await_go(supervisor):
    """In a new interpreter: wait, still quiet, for the supervisor's ``SIGUSR2``, sent
    once it has restored the snapshot's tree (it restores it while this fork runs)."""
    while True:
        info = _sigwaitinfo({SIGUSR2})
        if info.si_pid == supervisor:
            return


def _orphan():
    """A copy of this process adopted by the supervisor (through an intermediate one
    that exits at once): 0 in the copy, -1 here (its pid is not known)."""
    middle = _fork(fix=False)
    if middle == 0:
        if _fork(fix=False):
            _exit(0)
        return 0
    _waitpid(middle, 0)
    return -1
