"""A file's ``fsync`` done by a thread of its own, for an append-only log.

The writer's ``write`` puts each line in the kernel at once (a killed run loses nothing
it wrote); what ``fsync`` adds is that the line survives the machine's crash. Done in the
writer's thread, it held the run's process for 0.1 to a few milliseconds per record (the
disk's flush), which bounded the records one process could write; here a thread does it,
at most every :data:`SYNC_EVERY_S` (lines written meanwhile share one ``fsync``: a group
commit), and :meth:`Syncer.close` does the last one before the file is closed. A crash of
the machine loses at most the lines of that interval; ``--resume`` runs their episodes
again.
"""

from __future__ import annotations

import errno
import os
import threading

__all__ = ["SYNC_EVERY_S", "Syncer"]

SYNC_EVERY_S = 0.05


class Syncer:
    """``fsync`` of descriptor ``fd`` (of the file ``name``, for messages) after each
    :meth:`request`, in a thread. A thread that cannot be started is an ``OSError``."""

    def __init__(self, fd: int, name: str, every: float = SYNC_EVERY_S) -> None:
        self.fd = fd
        self.name = name
        self.every = every
        self._wanted = threading.Event()
        self._stopping = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._loop, name="intercode-fsync", daemon=True)
        try:
            self._thread.start()
        except RuntimeError as exc:  # "can't start new thread": the process's limit
            raise OSError(errno.EAGAIN, f"cannot start the thread that syncs it ({exc})",
                          name) from None

    def check(self) -> None:
        """Raise an ``fsync`` that failed since the file was opened (the disk is full or
        failing: the run must not go on as if its records were kept), every time."""
        if self._error is not None:  # a new one each time (a raise keeps its traceback)
            raise OSError(self._error.errno, self._error.strerror, self.name)

    def request(self) -> None:
        """Lines were written: sync them soon."""
        self._wanted.set()

    def close(self) -> None:
        """Stop the thread and sync what is left, here; raise a failure of either. An
        interruption (Ctrl-C) while the thread finishes its ``fsync`` waits for it all the
        same, and is raised after the last sync."""
        self._stopping.set()
        self._wanted.set()
        interrupted = False
        while self._thread.is_alive():
            try:
                self._thread.join()
            except KeyboardInterrupt:
                interrupted = True
        self.check()
        try:
            os.fsync(self.fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, self.name) from None
        if interrupted:
            raise KeyboardInterrupt

    def _loop(self) -> None:
        while True:
            self._wanted.wait()
            if self._stopping.is_set():
                return
            self._wanted.clear()
            try:
                os.fsync(self.fd)
            except OSError as exc:
                self._error = exc  # raised by every later call: no line is kept any more
                return
            if self._stopping.wait(self.every):
                return
