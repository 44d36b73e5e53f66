"""Imported last by a run's fork server when it started with SIGINT ignored (see
``workerserver.start``): Ctrl-C's default handler back for the processes it forks.

The server starts so, so that a Ctrl-C during its imports does not print their
traceback (the run stops, and the server with it). Python's fork server
ignores SIGINT itself once its imports are done, and gives each process it forks the
handler it had before: the default one again, set here, so that nothing else forked
from it (a program's own processes, where the fork server is also its default) ignores
Ctrl-C. The run's workers ignore it anyway (``worker.worker_main``)."""

import signal
import threading

__all__: list[str] = []

if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, signal.default_int_handler)
