"""The Bash gold's results, kept on disk across runs.

What the gold command leaves (its output, its changes to the file system, the fingerprints
of the files it added) is a function of the task and of the pristine sandbox it runs in.
An entry is keyed by everything that decides it: the task (dataset, source, gold command,
the digest of its file system), the root file system's identity, the sandbox's limits and
layout, the kernel and the number of CPUs the sandbox may use, the action mode (upstream
quirks), the backend and the in-sandbox code that runs and fingerprints it. It is never
used for a task the known issues list as time-dependent, nondeterministic or needing the
network, nor kept when the gold timed out or its fingerprints ran out of budget. A
host-dependent task's result depends on what the key also holds (the root file system,
the limits, the kernel, which every key names) but may also race (``find /`` meeting
processes that exit in ``/proc``): its entry is used only once two runs of the gold (each
on a freshly loaded tree) gave the same result (the first is kept as a candidate, the
second confirms it); a host-dependent task whose gold does not score 1.0 against itself
is never stored.

Trust: entries live in the user cache (``INTERCODE_CACHE``/gold, a directory of the host
user, mode 0700), which no sandbox mounts. An entry is read only if it is a regular file
owned by this user and writable by nobody else, names the same key, and its checksum and
fields check out; anything else is ignored (and recomputed), never trusted. The opt-out is
``gold_cache=False`` (``--no-gold-cache``, or ``INTERCODE_GOLD_CACHE=0``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import platform
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from intercode.sandbox.base import Change, ExecResult

__all__ = [
    "CONFIRMED_KINDS",
    "UNCACHEABLE_KINDS",
    "EntryStore",
    "GoldCache",
    "GoldResult",
    "cache_root",
    "code_digest",
    "cpu_count",
    "enabled",
    "kernel_identity",
    "root_identity",
    "rootfs_identity",
    "sandbox_code_digest",
]

log = logging.getLogger(__name__)
FORMAT = 2
# known-issue kinds whose gold result is not a function of the task and the root fs
UNCACHEABLE_KINDS = frozenset({"time_dependent", "nondeterministic", "network"})
# kinds whose entries need a second, identical run of the gold before they are used
CONFIRMED_KINDS = frozenset({"host_dependent"})
_EXEC_TYPES: dict[str, tuple[type, ...]] = {
    "output": (str,), "exit_code": (int, type(None)), "timed_out": (bool,),
    "output_bytes": (int,), "output_truncated": (bool,), "shell_restarted": (bool,),
    "notes": (list,), "cwd": (str,), "reply": (str, type(None))}


def enabled(requested: bool = True) -> bool:
    """Whether the cache is used: asked for, and not turned off by ``INTERCODE_GOLD_CACHE=0``."""
    return requested and os.environ.get("INTERCODE_GOLD_CACHE", "1").strip() not in ("0", "")


@dataclass(frozen=True)
class GoldResult:
    """The gold's run: its result, its changes and the fingerprint of every added path."""

    result: ExecResult
    changes: tuple[Change, ...]
    hashes: dict[str, str]


def cache_root() -> Path:
    """Where entries live (under the user cache of intercode)."""
    from intercode.fsutil import cache_dir

    return cache_dir() / "gold"


# the code that runs the gold and turns it into a result: the sandbox (host side and
# in-sandbox), the Bash environment, the prepared file systems and this module
CODE_PACKAGES = ("intercode.sandbox", "intercode.sandbox.inbox")
CODE_MODULES = ("intercode.envs.core.bash", "intercode.envs.gold_cache",
                "intercode.datasets.fsbuild")


def sandbox_code_digest() -> str:
    """Digest of the source of the code that decides a Bash gold result (see CODE_PACKAGES
    and CODE_MODULES): an entry made by other code is never reused."""
    return code_digest(CODE_MODULES)


@lru_cache(maxsize=4)
def code_digest(modules: tuple[str, ...]) -> str:
    """Digest of the sandbox's source (:data:`CODE_PACKAGES`) and of ``modules``'."""
    from importlib import import_module, resources

    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for item in sorted(resources.files(package).iterdir(), key=lambda f: f.name):
            if item.name.endswith(".py"):
                digest.update(f"{package}/{item.name}".encode() + b"\0" + item.read_bytes())
    for module in modules:
        source = Path(str(import_module(module).__file__))
        digest.update(module.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=8)
def rootfs_identity(root: Path) -> str:
    """What identifies the root file system the sandbox mounts (``/usr``, ``/etc``, the
    top-level links): the installed packages (dpkg's status file, hashed), and the
    identity and modification time of its top directories, which change when files are
    added or removed in them. A root prepared once (``INTERCODE_ROOTFS``) changes only
    when rebuilt; on the host's root, a package installed or removed changes it. A pinned
    root (:mod:`intercode.sandbox.rootfs`) is its recorded identity (the package list and
    every installed version), the same in every cache directory and on every machine."""
    from intercode.sandbox.rootfs import describe

    pinned = describe(root)
    if pinned.get("kind") == "pinned":
        return f"pinned:{pinned['identity']}"
    digest = hashlib.sha256(str(root.resolve()).encode())
    status = root / "var" / "lib" / "dpkg" / "status"
    try:
        digest.update(hashlib.sha256(status.read_bytes()).digest())
    except OSError:
        digest.update(b"no dpkg status")
    for rel in ("usr", "usr/bin", "usr/sbin", "usr/lib", "usr/share", "usr/libexec", "etc",
                "bin", "sbin", "lib", "lib64"):
        try:
            st = os.lstat(root / rel)
        except OSError:
            digest.update(f"{rel}:-".encode())
            continue
        link = os.readlink(root / rel) if stat.S_ISLNK(st.st_mode) else ""
        digest.update(f"{rel}:{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{link}".encode())
    return digest.hexdigest()


def root_identity(box: Any, layout: Any) -> str:
    """What a sandbox's root is: the image a docker sandbox runs (by content), else the
    root file system bubblewrap mounts (``layout.rootfs``)."""
    image_id = getattr(box, "image_id", None)
    if image_id:
        return f"image:{image_id}"
    return rootfs_identity(layout.rootfs)


def kernel_identity() -> str:
    """The kernel the sandboxes run on (``uname -r``, its build, the machine): what a
    sandbox sees of the host beyond its root file system and its limits."""
    uname = platform.uname()
    return f"{uname.system} {uname.release} {uname.version} {uname.machine}"


def cpu_count() -> int | None:
    """How many CPUs this process, and so the bwrap sandboxes it starts, may use
    (``nproc``): one in a worker pinned to its CPU (``intercode.runner.pinning``), every
    CPU of the machine or of a ``taskset`` otherwise; a gold may print it. (A Docker
    container's count is the engine's: there it only keys entries apart.) The runner's
    own reading of the affinity is not imported here: envs sit below the runner."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count()


def key_digest(key: dict[str, Any]) -> str:
    """The file name of an entry: a digest of its canonical key."""
    return hashlib.sha256(_canonical(key)).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


_SEEN_ENTRIES = 4096  # decoded entries a store keeps in memory (then it starts over)


class EntryStore:
    """Sealed JSON entries of one directory, by key: what both gold stores share (the
    Bash gold's results here, the Python gold's test outcomes in ``outcome_store``).

    ``decode`` turns a stored payload back into its value, or ``None`` if anything about
    it is wrong (the entry is then ignored)."""

    def __init__(self, root: Path, decode: Callable[[Any], Any]) -> None:
        self.root = root
        self._decode_payload = decode
        # entries read before, by the file they came from (its path, inode, times and
        # size): a file replaced or changed since is read again
        self._seen: dict[tuple[Path, int, int, int, int], tuple[Any, bool]] = {}

    def _path(self, key: dict[str, Any]) -> Path:
        name = key_digest(key)
        return self.root / name[:2] / f"{name}.json"

    def read(self, key: dict[str, Any]) -> tuple[Any, bool] | None:
        """The value stored under ``key`` and whether it is confirmed, or None (absent,
        unreadable, corrupt or not ours)."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()
                    or st.st_mode & 0o022 or st.st_size > 64 << 20):
                log.warning("gold cache: ignoring %s (not a private regular file)", path)
                return None
            seen = (path, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
            if seen in self._seen:
                return self._seen[seen]
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        finally:
            os.close(fd)
        sealed = _unseal(data, key)
        value = None if sealed is None else self._decode_payload(sealed[0])
        if sealed is None or value is None:
            log.warning("gold cache: ignoring %s (corrupt or another key); recomputing", path)
            return None
        entry = (value, sealed[1])
        if len(self._seen) >= _SEEN_ENTRIES:
            self._seen.clear()
        self._seen[seen] = entry
        return entry

    @contextmanager
    def locked(self, key: dict[str, Any]) -> Iterator[None]:
        """Hold the lock of ``key``'s folder (other processes' reads and writes of its
        entries that take it wait): a read, a decision and a write made as one. Without a
        folder to lock (not writable), nothing is held: the write fails as it would."""
        folder = self._path(key).parent
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system without locks: as without a folder
                pass
            yield
        finally:
            os.close(fd)

    def write(self, key: dict[str, Any], payload: Any, confirmed: bool) -> None:
        """Store ``payload`` (JSON data) under ``key``, sealed, atomically; a failure to
        write only costs a later run time."""
        path = self._path(key)
        body = {"format": FORMAT, "key": key, "payload": payload, "confirmed": confirmed,
                "sha256": hashlib.sha256(_canonical([payload, confirmed])).hexdigest()}
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(_canonical(body))
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("gold cache: could not write %s: %s", path, exc)


class GoldCache:
    """The Bash gold's results (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root()
        self._entries = EntryStore(self.root, _gold_result)

    def get(self, key: dict[str, Any]) -> GoldResult | None:
        """The entry of ``key``, or None (absent, unconfirmed, unreadable, corrupt or not
        ours)."""
        found = self._entries.read(key)
        return found[0] if found is not None and found[1] else None

    def candidate(self, key: dict[str, Any]) -> GoldResult | None:
        """The entry of ``key`` whether confirmed or not (see :meth:`put`)."""
        found = self._entries.read(key)
        return found[0] if found is not None else None

    def put(self, key: dict[str, Any], entry: GoldResult, confirmed: bool = True) -> None:
        """Store an entry (atomically; a failure to write only costs the next run time).
        An unconfirmed one is only a candidate: :meth:`get` does not return it."""
        payload = {"result": {**asdict(entry.result), "notes": list(entry.result.notes)},
                   "changes": [[c.path, c.code] for c in entry.changes],
                   "hashes": dict(entry.hashes)}
        self._entries.write(key, payload, confirmed)


def _unseal(data: bytes, key: dict[str, Any]) -> tuple[Any, bool] | None:
    """An entry's payload and whether it is confirmed, if its format, key and checksum
    check out."""
    try:
        body = json.loads(data)
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            return None
        if _canonical(body.get("key")) != _canonical(key):
            return None
        payload, confirmed = body["payload"], body.get("confirmed")
        if not isinstance(confirmed, bool):
            return None
        if hashlib.sha256(_canonical([payload, confirmed])).hexdigest() != body.get("sha256"):
            return None
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return payload, confirmed


def _gold_result(payload: Any) -> GoldResult | None:
    """A Bash gold entry's payload as a result, if every field is what it should be."""
    try:
        raw = payload["result"]
        if set(raw) != {f.name for f in fields(ExecResult)}:
            return None
        for name, types in _EXEC_TYPES.items():
            if not isinstance(raw[name], types):
                return None
        if not all(isinstance(n, str) for n in raw["notes"]):
            return None
        result = ExecResult(**{**raw, "notes": tuple(raw["notes"])})
        changes = []
        for item in payload["changes"]:
            if not (isinstance(item, list) and len(item) == 2
                    and all(isinstance(v, str) for v in item)):
                return None
            changes.append(Change(item[0], item[1]))
        hashes = payload["hashes"]
        if not isinstance(hashes, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()):
            return None
    except (ValueError, TypeError, KeyError):
        return None
    return GoldResult(result, tuple(changes), hashes)
