"""The run folder: checked, created, and locked for the life of the run.

The lock is ``fcntl.flock`` on ``run.lock`` in the folder. The kernel drops it when
the process ends, however it ends (``kill -9`` included), so a stale lock never
outlives its run; a second run on the same folder is refused while the first lives.
Worker processes do not inherit the lock (descriptors are not inheritable).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from intercode.errors import ConfigError

__all__ = ["RunFolder"]

LOCK_NAME = "run.lock"


class RunFolder:
    """An output folder held by this process until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def acquire(self) -> RunFolder:
        """Create the folder if needed and lock it; refuse one another run holds."""
        check_output(self.path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fh = (self.path / LOCK_NAME).open("a+", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot use --output {self.path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            fh.seek(0)
            holder = fh.read(32).strip()
            fh.close()
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise ConfigError(f"--output {self.path} is in use by another run{who}; wait for "
                              "it to end or choose another --output") from exc
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        """Unlock the folder (the lock file stays: removing it would race)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RunFolder:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_output(path: Path) -> None:
    """Refuse an output path that cannot be a run folder, with a one-line reason."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--output {path} is a file, not a folder")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"--output {path} is under {parent}, which is not a folder")
            break
    resolved = path.absolute().resolve()
    inside = {resolved, *resolved.parents}
    for virtual in ("/proc", "/sys", "/dev"):
        if Path(virtual) in inside and Path("/dev/shm") not in inside:
            raise ConfigError(f"--output {path} is under {virtual}, not a place for files")
