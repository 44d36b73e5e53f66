"""Prepared file systems: run a setup script in a sandbox once, cache the tree.

The tree is what the script left in the sandbox's writable root, with the time
stamp of everything it created or changed set to one fixed instant (``EPOCH``,
2023-06-01, just after the latest explicit time stamp the upstream scripts use),
also inside the tar archives it wrote. Building twice then gives the same bytes,
and time-relative tasks (``find -mtime``) behave the same on every machine and day.
A single instant, rather than creation order, because the kernel stamps files with
a coarse clock (several files share a tick, and where the ticks fall varies from
run to run); entries with equal times sort by name in ``ls -t``. Time stamps the
script sets explicitly (``touch -t``) are kept.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import io
import logging
import tarfile
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from intercode import safeio
from intercode.errors import DatasetError
from intercode.fetch import data_file
from intercode.fsutil import cache_dir, write_atomic
from intercode.sandbox.filetree import FILE, Entry, FileTree
from intercode.sandbox.inbox.tree import ancestors
from intercode.sandbox.layout import EPOCH_NS
from intercode.sandbox.limits import Limits

__all__ = ["prepared_fs", "script_fs"]

log = logging.getLogger(__name__)

BUILD_VERSION = 1
SECOND = 1_000_000_000

# file system name -> (where the script is, which one)
FILE_SYSTEMS: dict[str, tuple[str, str]] = {
    "nl2bash-fs1": ("data", "setup_nl2b_fs_1"),
    "nl2bash-fs2": ("data", "setup_nl2b_fs_2"),
    "nl2bash-fs3": ("data", "setup_nl2b_fs_3"),
    "nl2bash-fs4": ("data", "setup_nl2b_fs_4"),
    "bash-test": ("data", "setup_fs"),
    "bash-demo": ("embedded", "setup_demo.sh"),
}


@dataclass(frozen=True)
class BuiltFs:
    """A prepared file system and the output of its setup script."""

    name: str
    tree: FileTree
    setup_output: str


def setup_script(name: str) -> bytes:
    """The setup script of a file system."""
    try:
        where, key = FILE_SYSTEMS[name]
    except KeyError as exc:
        raise DatasetError(f"unknown file system {name!r}") from exc
    if where == "embedded":
        return resources.files("intercode.datasets.data").joinpath(key).read_bytes()
    return data_file(key).read_bytes()


@lru_cache(maxsize=16)
def prepared_fs(name: str) -> BuiltFs:
    """The prepared file system ``name``, built and cached on first use."""
    return _cached(name, name, setup_script(name), strict=False)


@lru_cache(maxsize=64)
def script_fs(path: str, sha256: str) -> BuiltFs:
    """The file system a user's setup script builds (a user dataset's ``setup``).

    Cached in the same folder as the built-in file systems, keyed by the script's
    content (``user-<key>.tar``): the same script is built once, a changed one again.
    ``sha256`` is the script's hash when its dataset was loaded; a script changed since
    is refused (reload the dataset). A script that fails (exit status not 0, time
    limit) is a :class:`DatasetError` with the end of its output.
    """
    try:
        script = safeio.read_bytes(path, 1 << 20)
    except (OSError, safeio.Refused) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise DatasetError(f"cannot read the setup script {path}: {why}") from None
    if hashlib.sha256(script).hexdigest() != sha256:
        raise DatasetError(f"the setup script {path} changed since its dataset was loaded; "
                           "load the dataset again")
    return _cached(f"user-{sha256[:16]}", "user", script, strict=True)


def _cached(name: str, prefix: str, script: bytes, strict: bool) -> BuiltFs:
    """Build ``script`` once into ``<cache>/fs/<prefix>-<key>.tar`` (key: its content)."""
    key = hashlib.sha256(script + f"|{BUILD_VERSION}|{EPOCH_NS}".encode()).hexdigest()[:16]
    folder = cache_dir() / "fs"
    archive = folder / f"{prefix}-{key}.tar"
    if not archive.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f".{prefix}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not archive.is_file():
                tree, output, status = _build(script) if strict else (*build(script), 0)
                if strict and status != 0:
                    tail = output[-500:].strip() or "(no output)"
                    raise DatasetError(f"the setup script failed ({status}): {tail}")
                write_atomic(archive.with_suffix(".log"), output.encode())
                write_atomic(archive, tree.to_tar())
    try:
        tree = FileTree.from_tar(archive.read_bytes(), source=str(archive))
        output = archive.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
    except (OSError, DatasetError) as exc:
        archive.unlink(missing_ok=True)
        raise DatasetError(f"the cached file system {archive} is unreadable ({exc}); "
                           "it was removed and will be rebuilt on the next run") from exc
    return BuiltFs(name, tree, output)


def build(script: bytes, limits: Limits | None = None,
          backend: str = "bwrap") -> tuple[FileTree, str]:
    """Run a setup script in a fresh sandbox; return the normalised tree and its output."""
    tree, output, _status = _build(script, limits, backend)
    return tree, output


def _build(script: bytes, limits: Limits | None = None,
           backend: str = "bwrap") -> tuple[FileTree, str, int | str]:
    """:func:`build`, and the script's exit status (``"signal"`` if it was killed)."""
    from intercode.sandbox import create_sandbox

    text = script.decode("utf-8", "replace")
    interpreter = shebang(text)
    with create_sandbox(backend, limits or Limits(timeout=600)) as sandbox:
        before = {e.path: e for e in sandbox.capture().entries}
        start_ns = time.time_ns() - SECOND
        result = sandbox.exec([interpreter, "-c", text], cwd="/")
        after = sandbox.capture()
    if result.timed_out:
        raise DatasetError("the setup script did not finish within the time limit")
    changed = {e.path for e in after.entries if before.get(e.path) != e}
    keep = set(changed)
    for path in changed:
        keep.update(ancestors(path))
    entries = [e for e in after.entries if e.path in keep]
    status = result.exit_code if result.exit_code is not None else "signal"
    return FileTree.of(normalise(entries, start_ns)), result.output, status


def shebang(text: str) -> str:
    """The interpreter named on a script's first line (``/bin/sh`` if none)."""
    first = text.splitlines()[0] if text else ""
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts:
            return parts[0]
    return "/bin/sh"


def normalise(entries: list[Entry], start_ns: int) -> list[Entry]:
    """Give everything created or changed after ``start_ns`` the time ``EPOCH``."""
    times = {e.path: EPOCH_NS for e in entries if e.mtime_ns >= start_ns}
    out = []
    for e in entries:
        new = replace(e, mtime_ns=times.get(e.path, e.mtime_ns))
        if e.kind == FILE and e.path in times and isinstance(e.payload, bytes):
            rewritten = _normalise_archive(e.payload, times, start_ns)
            if rewritten is not None:
                new = replace(new, payload=rewritten)
        out.append(new)
    return out


def _normalise_archive(data: bytes, times: dict[str, int], start_ns: int) -> bytes | None:
    """Rewrite a (gzipped) tar so its members carry the normalised times."""
    zipped = data[:2] == b"\x1f\x8b"
    try:
        raw = gzip.decompress(data) if zipped else data
    except (OSError, EOFError):
        return None
    if raw[257:262] != b"ustar":
        return None
    out = io.BytesIO()
    try:
        with tarfile.open(fileobj=io.BytesIO(raw)) as src, \
                tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as dst:
            for member in src:
                if member.mtime * SECOND >= start_ns:
                    name = member.name.rstrip("/")
                    member.mtime = times.get(name, EPOCH_NS) // SECOND
                fh = src.extractfile(member) if member.isfile() else None
                dst.addfile(member, fh)
    except tarfile.TarError:
        return None
    body = out.getvalue()
    return gzip.compress(body, compresslevel=6, mtime=0) if zipped else body
