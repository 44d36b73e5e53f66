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

import gc
import os
import signal
import sys

_raw = []  # libc's fork, called with the GIL held (ctypes.PyDLL); empty: not loaded yet
_clone = []  # see _clone_setup; [None]: unusable here; empty: not looked at yet
_prctl = []  # libc's prctl ([None]: not here); empty: not loaded yet
_every = []  # [every valid signal]; empty: not built yet
CLONE_PARENT = 0x00008000
PR_SET_DUMPABLE = 4
CLONE_SYSCALL = {"x86_64": 56, "aarch64": 220}  # clone's flags are its first argument on both
# where glibc keeps a thread's kernel id in its thread descriptor (``struct pthread``)
TID_OFFSETS = {"x86_64": 0x2D0, "aarch64": 0xD0}
TID_SCAN = 0x800  # bytes of the descriptor searched when the known offset does not hold it


def _fork():
    """``fork(2)`` while this interpreter runs one thread, else ``os.fork()``."""
    if len(sys._current_frames()) != 1:
        return os.fork()
    if not _raw:
        try:
            import ctypes

            fork = ctypes.PyDLL(None, use_errno=True).fork
            fork.restype = ctypes.c_int
            fork.argtypes = []
            _raw.append(fork)
        except (ImportError, OSError, AttributeError):
            _raw.append(None)
    fork = _raw[0]
    if fork is None:
        return os.fork()
    pid = fork()
    if pid < 0:
        import ctypes

        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    if pid == 0:
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
        return syscall, CLONE_SYSCALL[machine], base + offset, gettid
    except (ImportError, OSError, AttributeError, ValueError):
        return None


def _sibling():
    """A copy of this process made a child of this process's parent: its pid here, 0 in
    the copy, ``None`` if this cannot be done here (``clone(CLONE_PARENT)``; a process
    running one thread only)."""
    if not _clone:
        _clone.append(_clone_setup())
    if _clone[0] is None or len(sys._current_frames()) != 1:
        return None
    import ctypes

    syscall, number, tid_at, gettid = _clone[0]
    pid = syscall(number, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid < 0:
        return None
    if pid == 0:
        ctypes.c_int32.from_address(tid_at).value = gettid()
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
    supervisor = os.getppid()  # the interpreter is the supervisor's child (or adopted by it)
    if not _every:
        _every.append(frozenset(signal.valid_signals()))  # (building it takes ~0.1 ms)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _every[0])
    _dumpable(False)
    try:
        pid = _fork()
    except BaseException:
        pid = -1
        raise
    finally:
        if pid != 0:  # the interpreter: as it was (signals sent meanwhile come now)
            _dumpable(True)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if pid:
        return pid
    try:
        _wait(supervisor, mask)
    except BaseException:
        os._exit(1)
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
    collecting = gc.isenabled()
    gc.disable()
    while True:
        info = signal.sigwaitinfo({signal.SIGUSR1})
        if info.si_pid != supervisor:
            continue
        pid = _sibling()
        if pid is None:
            pid = _orphan()
        if pid == 0:
            _await_go(supervisor)
            if collecting:
                gc.enable()
            signal.pthread_sigmask(signal.SIG_SETMASK, mask - {signal.SIGUSR1})
            _dumpable(True)
            return


def _await_go(supervisor):
    """In a new interpreter: wait, still quiet, for the supervisor's ``SIGUSR2``, sent
    once it has restored the snapshot's tree (it restores it while this fork runs)."""
    while True:
        info = signal.sigwaitinfo({signal.SIGUSR2})
        if info.si_pid == supervisor:
            return


def _orphan():
    """A copy of this process adopted by the supervisor (through an intermediate one
    that exits at once): 0 in the copy, -1 here (its pid is not known)."""
    middle = _fork()
    if middle == 0:
        if _fork():
            os._exit(0)
        return 0
    os.waitpid(middle, 0)
    return -1
