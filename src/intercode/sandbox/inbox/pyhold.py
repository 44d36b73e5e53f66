"""Held copies of the Python interpreter: the execution state of a snapshot.

On a ``hold`` request the interpreter forks; the copy waits, using no CPU, in ``read``
on a private pipe that only its own signal handler writes to (``set_wakeup_fd``). Each
``SIGUSR1`` (sent by the supervisor, see ``snaps``) makes it fork a new interpreter
through an intermediate process that exits at once, so that the new interpreter is
an orphan adopted by the supervisor, and wait again: a held copy is restored any
number of times. The new interpreter returns from :func:`hold` with ``None`` and goes
on serving actions with the namespace, the directory and everything else as they
were at the snapshot.

The forks are ``fork(2)`` itself, not ``os.fork()``, while the interpreter runs one
thread: CPython's child side of ``os.fork()`` replaces its internal locks by new ones
and leaks the old ones on purpose (``_PyThread_at_fork_reinit``: about 290 bytes per
fork), and a restore makes three forks, so a long chain of snapshots and restores
grew by about 1 KiB per cycle. With a single thread no lock can be held by another
thread, so nothing needs reinitialising (the child's thread has the parent's thread
id). It also leaves ``os.register_at_fork`` hooks unrun, so that ``random`` is not
reseeded: a restored interpreter's random state is the snapshot's.
"""

import os
import signal
import sys

_raw = []  # libc's fork, called with the GIL held (ctypes.PyDLL); empty: not loaded yet


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
    if pid == 0 and "threading" in sys.modules:
        main = sys.modules["threading"].main_thread()
        if hasattr(main, "_native_id"):
            main._native_id = sys.modules["threading"].get_native_id()
    return pid


def _ignore(*_args):
    pass


def hold(flush):
    """Fork a held copy: its pid in the interpreter, ``None`` in a resumed copy."""
    flush()
    # blocked until the copy handles it: a restore may signal it at once
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    pid = _fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        return pid
    try:
        _wait(signal.getsignal(signal.SIGINT))
    except BaseException:
        os._exit(1)
    return None


def _wait(sigint):
    """The held copy's loop; returns in a new interpreter."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    r, w = os.pipe2(os.O_CLOEXEC)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    signal.signal(signal.SIGUSR1, _ignore)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    while True:
        data = os.read(r, 64)
        for _ in range(data.count(bytes([signal.SIGUSR1]))):
            middle = _fork()
            if middle == 0:
                if _fork():
                    os._exit(0)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGUSR1, signal.SIG_DFL)
                signal.signal(signal.SIGINT, sigint)
                os.close(r)
                os.close(w)
                return
            os.waitpid(middle, 0)
