"""Imported first by a run's fork server (see ``workerserver.PRELOAD_GYMNASIUM``:
for a plugin's environment, a ``gymnasium.Env``): the server's
NumPy runs its math library (OpenBLAS) on one thread, unless the run's environment names
a number of threads for it.

NumPy's OpenBLAS (Gymnasium imports NumPy) started its threads when NumPy was imported
and spun them, which cost the fork server's start about as much CPU again as the import
(on 2 cores: some 90 ms, while the run's own process starts on the other core). The
workers forked from the server run side by side, one per core, and none needs a math
library's own threads. The library reads its setting when it is loaded: the variables
are set for NumPy's import here and removed after it, so that nothing else forked from
the server (the run's workers get the run's environment anyway; a program's own
processes, when the fork server is also its default) sees them."""

import os

__all__ = ["THREADS"]

THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _import_numpy_on_one_thread() -> None:
    if any(name in os.environ for name in THREADS):
        return  # the run says how many
    for name in THREADS:
        os.environ[name] = "1"
    try:
        import numpy  # noqa: F401 -- loads OpenBLAS with the setting above
    except ImportError:
        pass
    finally:
        for name in THREADS:
            os.environ.pop(name, None)


_import_numpy_on_one_thread()
