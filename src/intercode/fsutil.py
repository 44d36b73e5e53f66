"""Small file helpers shared by the data and run code."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["cache_dir", "write_atomic"]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cache_dir() -> Path:
    """The user cache of intercode (data, built file systems): ``INTERCODE_CACHE``, else
    ``intercode`` in ``XDG_CACHE_HOME`` (``~/.cache``)."""
    explicit = os.environ.get("INTERCODE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "intercode"
