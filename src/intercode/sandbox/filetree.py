"""Immutable descriptions of file trees, and their on-disk form (a tar archive)."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from intercode.errors import DatasetError

__all__ = ["DIR", "FILE", "LINK", "Entry", "FileTree"]

DIR, FILE, LINK = "d", "f", "l"


@dataclass(frozen=True)
class Entry:
    """One path of a tree, relative to ``/`` without a leading slash."""

    path: str
    kind: str
    mode: int
    mtime_ns: int
    payload: bytes | str | None = None

    def as_tuple(self) -> tuple[str, str, int, int, bytes | str | None]:
        """The tuple form the in-sandbox code uses."""
        return (self.path, self.kind, self.mode, self.mtime_ns, self.payload)


@dataclass(frozen=True)
class FileTree:
    """A whole tree; ``id`` is a digest of its content, so equal trees share an id."""

    entries: tuple[Entry, ...]

    @cached_property
    def id(self) -> str:
        """Content digest of the tree (computed once)."""
        digest = hashlib.sha256()
        for e in self.entries:
            payload = e.payload if isinstance(e.payload, bytes) else str(e.payload).encode()
            head = json.dumps([e.path, e.kind, e.mode, e.mtime_ns, len(payload)])
            digest.update(head.encode() + b"\0" + payload)
        return digest.hexdigest()

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> FileTree:
        """A tree with entries sorted by path."""
        return cls(tuple(sorted(entries, key=lambda e: e.path)))

    def paths(self) -> list[str]:
        """All paths, sorted."""
        return [e.path for e in self.entries]

    def to_tar(self) -> bytes:
        """A deterministic uncompressed tar archive of the tree."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for e in self.entries:
                info = tarfile.TarInfo(e.path)
                info.mode = e.mode
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.pax_headers = {"mtime": _ns_to_pax(e.mtime_ns)}
                info.mtime = e.mtime_ns // 1_000_000_000
                if e.kind == DIR:
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif e.kind == LINK:
                    info.type = tarfile.SYMTYPE
                    info.linkname = str(e.payload)
                    tar.addfile(info)
                else:
                    data = e.payload if isinstance(e.payload, bytes) else b""
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    @classmethod
    def from_tar(cls, data: bytes, source: str = "archive") -> FileTree:
        """Read a tree written by :meth:`to_tar` (or any tar of dirs, files and symlinks)."""
        entries = []
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                for info in tar:
                    entries.append(_entry_of(tar, info))
        except (tarfile.TarError, EOFError, ValueError) as exc:
            raise DatasetError(f"{source} is not a valid tree archive: {exc}") from exc
        return cls.of(entries)


def _ns_to_pax(ns: int) -> str:
    sec, frac = divmod(ns, 1_000_000_000)
    return f"{sec}.{frac:09d}"


def _entry_of(tar: tarfile.TarFile, info: tarfile.TarInfo) -> Entry:
    path = info.name.lstrip("./").rstrip("/")
    if not path or ".." in path.split("/"):
        raise ValueError(f"unsafe path {info.name!r}")
    raw = info.pax_headers.get("mtime")
    mtime_ns = _pax_to_ns(raw) if raw else int(info.mtime) * 1_000_000_000
    mode = stat.S_IMODE(info.mode)
    if info.isdir():
        return Entry(path, DIR, mode, mtime_ns)
    if info.issym():
        return Entry(path, LINK, mode, mtime_ns, info.linkname)
    if info.isfile():
        fh = tar.extractfile(info)
        return Entry(path, FILE, mode, mtime_ns, fh.read() if fh else b"")
    raise ValueError(f"unsupported entry type for {info.name!r}")


def _pax_to_ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])
