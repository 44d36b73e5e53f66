"""``results.jsonl``: one record per finished episode, appended, and fsync'd by a thread
(see :mod:`~intercode.runner.syncer`).

A run can be resumed: records already in the file are kept, tasks with an ``ok``
record are not run again, and a torn last line (a crash mid-write) is cut off.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.errors import ConfigError
from intercode.runner.records import malformed
from intercode.runner.syncer import Syncer

__all__ = ["ResultsLog", "check_resumable", "encode_json", "latest_by_task", "save_json"]


class ResultsLog:
    """Append-only JSONL file of episode records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None
        self._syncer: Syncer | None = None
        self.skipped: list[int] = []  # line numbers :meth:`read` could not use

    def check(self) -> None:
        """Refuse (:class:`ConfigError`) a path that is there but is not a regular file:
        a FIFO would block the run's first write, a device never end a read."""
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(f"cannot use {self.path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{self.path} is {safeio.describe(mode)}, not a regular file")

    def repair(self) -> int:
        """Cut a torn last line back to the last newline, wherever it is; return the
        number of bytes removed (a file without any newline is one torn line). A path
        that is not a regular file (a FIFO, a device) is a :class:`ConfigError`."""
        if not self.path.exists():
            return 0
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfigError(f"cannot open {self.path}: {exc.strerror or exc}") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # (before fdopen: a FIFO is no random-access file)
            os.close(fd)
            raise ConfigError(f"{self.path} is {safeio.describe(mode)}, not a regular file")
        with os.fdopen(fd, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            keep = _after_last_newline(fh, size)
            if keep == size:
                return 0
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
            return size - keep

    def read(self, max_size: int = safeio.MAX_FILE) -> list[dict[str, Any]]:
        """All complete records in the file; lines that are not records (unparseable,
        longer than :data:`~intercode.safeio.MAX_LINE`, nested deeper than
        :data:`~intercode.safeio.MAX_DEPTH`, not an object, or with a field of the wrong
        type, see :func:`~intercode.runner.records.malformed`) are skipped and counted
        in :attr:`skipped`. A path that is not a regular file, or one larger than
        :data:`~intercode.safeio.MAX_FILE` (or ``max_size``), is
        :class:`~intercode.safeio.Refused`."""
        self.skipped = []
        if not self.path.exists():
            return []
        records: list[dict[str, Any]] = []
        obj: Any
        with safeio.open_regular(self.path, max_size) as fh:
            for number, raw in safeio.lines(fh, max_total=max_size):
                try:
                    obj = None if raw is None else safeio.loads(raw)
                except ValueError:  # JSONDecodeError, too deep, a number too long
                    obj = None
                if is_record(obj):
                    records.append(obj)
                elif raw is None or raw.strip():
                    self.skipped.append(number)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Write one record: a whole line in the kernel now, on the disk within
        :data:`~intercode.runner.syncer.SYNC_EVERY_S`. A failure to sync an earlier one is
        raised here, before this one is written (the file then holds the records the run
        counted)."""
        if self._fh is None or self._syncer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = self.path.open("ab")
            try:
                self._syncer = Syncer(fh.fileno(), str(self.path))
            except BaseException:
                fh.close()
                raise
            self._fh = fh
        self._syncer.check()
        self._fh.write(encode_json(record) + b"\n")
        self._fh.flush()
        self._syncer.request()

    def close(self) -> None:
        """Sync what is left and close the file (a failure to sync is raised, the file
        closed all the same)."""
        if self._fh is not None:
            fh, syncer, self._fh, self._syncer = self._fh, self._syncer, None, None
            try:
                if syncer is not None:
                    syncer.close()
            finally:
                fh.close()


CHUNK = 1 << 20


def _after_last_newline(fh: Any, size: int) -> int:
    """Offset just after the last newline of a binary file (0 if it has none)."""
    end = size
    while end > 0:
        start = max(0, end - CHUNK)
        fh.seek(start)
        cut: int = fh.read(end - start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def is_record(obj: Any) -> bool:
    """Whether a parsed line is an episode record: an object with an integer ``task``, a
    string ``status`` and no field of the wrong type (:func:`malformed`)."""
    return (isinstance(obj, dict) and type(obj.get("task")) is int
            and isinstance(obj.get("status"), str) and malformed(obj) is None)


def latest_by_task(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The last record of each task (a resumed run supersedes earlier errors)."""
    latest: dict[int, dict[str, Any]] = {}
    for rec in records:
        latest[int(rec["task"])] = rec
    return latest


def encode_json(data: Any, indent: int | None = None) -> bytes:
    """UTF-8 JSON that never fails to write: text that is not valid Unicode (a lone
    surrogate from a model's reply or a recorded action) is escaped, and values json
    does not know (a numpy number in an info dict) are converted."""
    try:
        return json.dumps(data, indent=indent, ensure_ascii=False,
                          default=_plain).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, indent=indent, ensure_ascii=True, default=_plain).encode("ascii")


def _plain(value: Any) -> Any:
    """A JSON value for what json cannot write (numpy scalars, bytes, ...)."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    return repr(value)


def save_json(path: Path, data: Any) -> None:
    """Write a JSON file atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(encode_json(data, indent=2) + b"\n")
    os.replace(tmp, path)


def check_resumable(config_path: Path, config: dict[str, Any], keys: tuple[str, ...],
                    defaults: dict[str, Any] | None = None) -> None:
    """Refuse to resume into a run with a different configuration (``defaults``: what a
    key missing from an older run's configuration meant)."""
    try:
        old = safeio.loads(safeio.read_bytes(config_path))
    except (OSError, ValueError, safeio.Refused) as exc:
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise ConfigError(f"cannot resume: {config_path} is unreadable ({why})") from None
    if not isinstance(old, dict):
        raise ConfigError(f"cannot resume: {config_path} is not a run's configuration")
    for key in keys:
        if old.get(key, (defaults or {}).get(key)) != config.get(key):
            raise ConfigError(f"cannot resume: {key} was {old.get(key)!r} in {config_path}, "
                              f"now {config.get(key)!r}; use a new --output")
