"""Held copies of the Python interpreter: the execution state of a snapshot.

On a ``hold`` request the interpreter forks; the copy waits, using no CPU, in ``read``
on a private pipe that only its own signal handler writes to (``set_wakeup_fd``). Each
``SIGUSR1`` (sent by the supervisor, see ``snaps``) makes it fork a new interpreter
through an intermediate process that exits at once, so that the new interpreter is
an orphan adopted by the supervisor, and wait again: a held copy is restored any
number of times. The new interpreter returns from :func:`hold` with ``None`` and goes
on serving actions with the namespace, the directory and everything else as they
were at the snapshot.
"""

import os
import signal


def _ignore(*_args):
    pass


def hold(flush):
    """Fork a held copy: its pid in the interpreter, ``None`` in a resumed copy."""
    flush()
    # blocked until the copy handles it: a restore may signal it at once
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    pid = os.fork()
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
            middle = os.fork()
            if middle == 0:
                if os.fork():
                    os._exit(0)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGUSR1, signal.SIG_DFL)
                signal.signal(signal.SIGINT, sigint)
                os.close(r)
                os.close(w)
                return
            os.waitpid(middle, 0)
