"""Imported first by a run's fork server (see ``executors._PRELOAD``): its math
libraries run one thread each, unless the run's environment names a number of threads
for any of them.

NumPy's OpenBLAS (Gymnasium imports NumPy) started its threads when NumPy was imported
and spun them, which cost the fork server's start about as much CPU again as the import
(on 2 cores: some 90 ms, while the run's own process starts on the other core). The
workers forked from the server run side by side, one per core, and none needs a math
library's own threads. Only the server's environment is changed: each worker gets the
run's (``worker_main``), and the run's own process is never touched."""

import os

__all__ = ["THREADS"]

THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

if not any(name in os.environ for name in THREADS):
    for _name in THREADS:
        os.environ[_name] = "1"
