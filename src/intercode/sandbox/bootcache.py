"""The sandbox supervisor's compiled modules, kept in the user cache across processes.

A sandbox boots its supervisor from sources, which its own Python compiles (about 60 ms
of CPU), unless the host hands it the modules that Python compiled before
(:data:`intercode.sandbox.supervisor.COMPILED`, see ``boot_code``). That memo lived only
as long as the process, so every run, every worker and every server paid the compile in
its first sandbox. The first sandbox of a key now also leaves them in
``INTERCODE_CACHE``/boot, one file per key (the backend and its Python, the root file
system, the sources' digest), which the first sandbox of a later process reads.

A file is ``MAGIC``, a JSON header (the Python version that compiled it, the blob's size
and sha256) and the blob. Anything else (a short, long, foreign or damaged file, one
that is not a regular file, one another user owns or could write) is ignored, and the
sandbox compiles as before. The folder is the user's alone (0700). The boot
code itself checks the version again: a blob of another Python is never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from intercode.fsutil import cache_dir, write_atomic
from intercode.safeio import Refused, open_regular

__all__ = ["MAX_BLOB", "load", "path_for", "store"]

MAGIC = b"intercode-boot-code 1\n"
MAX_BLOB = 16 << 20  # bytes; the modules compile to about 0.5 MB


def path_for(key: tuple[str, ...]) -> Path:
    """Where the compiled modules of ``key`` are kept."""
    name = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:40]
    return cache_dir() / "boot" / f"{name}.bin"


def load(key: tuple[str, ...]) -> tuple[str, bytes] | None:
    """``(python version, blob)`` kept for ``key``, or None (none, or not trusted)."""
    try:
        with open_regular(path_for(key), MAX_BLOB + 4096, follow=False) as fh:
            info = os.fstat(fh.fileno())
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                return None  # another user could have written it
            data = fh.read(MAX_BLOB + 4097)
    except (OSError, Refused):
        return None
    if not data.startswith(MAGIC):
        return None
    head, sep, blob = data[len(MAGIC):].partition(b"\n")
    try:
        header = json.loads(head) if sep else None
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    version, size, digest = header.get("version"), header.get("size"), header.get("sha256")
    if (not isinstance(version, str) or not version or size != len(blob)
            or digest != hashlib.sha256(blob).hexdigest()):
        return None
    return version, blob


def store(key: tuple[str, ...], version: str, blob: bytes) -> None:
    """Keep ``blob`` for ``key`` (best effort: a cache that cannot be written is skipped)."""
    if not version or not blob or len(blob) > MAX_BLOB:
        return
    header = json.dumps({"version": version, "size": len(blob),
                         "sha256": hashlib.sha256(blob).hexdigest()}).encode()
    path = path_for(key)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, MAGIC + header + b"\n" + blob)
        os.chmod(path, 0o600)
    except OSError:
        return
