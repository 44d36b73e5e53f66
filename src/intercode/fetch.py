"""Get a pinned data file: from a local mirror, the user cache, or a download.

``INTERCODE_DATA_MIRROR`` names a folder laid out like the upstream repository (or
like ``shared/datasets/intercode``); when it is set, only the mirror is used.
Otherwise files are downloaded once from the upstream repository at the pinned
revision into ``INTERCODE_CACHE`` (default ``$XDG_CACHE_HOME/intercode``). Every
file is checked against its sha256, or its git blob id where that is what pins it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path

from intercode.datafiles import FILES, REPOSITORY, REVISION, DataFile
from intercode.errors import DatasetError, DataUnavailable
from intercode.fsutil import cache_dir, write_atomic

__all__ = ["blob_id", "data_file", "fetch_file"]

log = logging.getLogger(__name__)

DEFAULT_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{REVISION}/"
_verified: dict[tuple[str, int, int], str] = {}
MAX_UNSIZED = 1 << 30  # bytes read of a file pinned without its size


def data_file(key: str) -> Path:
    """Local path of the verified data file ``key`` (see ``files.FILES``)."""
    try:
        spec = FILES[key]
    except KeyError as exc:
        raise DatasetError(f"unknown data file {key!r}") from exc
    return fetch_file(spec)


def fetch_file(spec: DataFile) -> Path:
    """Local path of a verified file of the upstream repository."""
    mirror = os.environ.get("INTERCODE_DATA_MIRROR")
    target = cache_dir() / "data" / REVISION[:12] / spec.upstream
    if mirror:
        try:
            return _from_mirror(Path(mirror), spec)
        except DataUnavailable:
            # a file pinned by its blob id alone is one a mirror may leave out for its size
            # (see shared/datasets/intercode/README.md): the cache may have it
            if spec.sha256 or not target.is_file() or _pinned(target, spec) != spec.pin:
                raise
            return target
    if target.is_file():
        if _pinned(target, spec) == spec.pin:
            return target
        log.warning("cached %s is corrupt; downloading it again", target)
        target.unlink()
    _download(spec, target)
    return target


def _from_mirror(mirror: Path, spec: DataFile) -> Path:
    candidates = [mirror / spec.upstream, mirror / spec.mirror]
    for path in candidates:
        if path.is_file():
            actual = _pinned(path, spec)
            if actual != spec.pin:
                raise DatasetError(
                    f"{path} does not match the pinned revision {REVISION[:12]} of "
                    f"{REPOSITORY} ({actual[:23]}..., expected {spec.pin[:23]}...); "
                    "the mirror is corrupt or from another revision")
            return path
    looked = " or ".join(str(p) for p in candidates)
    raise DataUnavailable(
        f"{spec.upstream} is missing from INTERCODE_DATA_MIRROR={mirror} (looked for {looked}); "
        "point INTERCODE_DATA_MIRROR at a copy of the upstream repository, or unset it to "
        "download the data")


def _pinned(path: Path, spec: DataFile) -> str:
    """``sha256:<hex>`` of the file, or ``blob:<hex>`` (its git blob id) when the spec
    is pinned by one; computed once per file version."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    kind = "sha256" if spec.sha256 else "blob"
    cached = _verified.get(key)
    if cached is None or not cached.startswith(kind + ":"):
        h = hashlib.sha256() if spec.sha256 else hashlib.sha1(f"blob {st.st_size}\0".encode())
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        cached = _verified[key] = f"{kind}:{h.hexdigest()}"
    return cached


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (sha1 of ``"blob <size>\\0" + data``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _download(spec: DataFile, target: Path, attempts: int = 3) -> None:
    # imported here: urllib's HTTP client brings ssl (9 ms), which every process that
    # reads a cached or mirrored file paid for nothing
    import http.client
    import urllib.error
    import urllib.request

    url = os.environ.get("INTERCODE_DATA_URL", DEFAULT_URL).rstrip("/") + "/" + spec.upstream
    try:
        request = urllib.request.Request(url)
    except ValueError as exc:
        raise DatasetError(f"INTERCODE_DATA_URL gives an invalid URL {url!r}: {exc}") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    error: Exception | None = None
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=60) as resp:
                data = resp.read(spec.size + 1 if spec.size else MAX_UNSIZED)
            break
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the open response
            error = exc
            time.sleep(0.5 * (attempt + 1))
    else:
        raise DataUnavailable(
            f"could not download {url}: {error}; set INTERCODE_DATA_MIRROR to a local copy of "
            f"{REPOSITORY} if this machine has no internet access") from error
    actual = (f"sha256:{hashlib.sha256(data).hexdigest()}" if spec.sha256
              else f"blob:{blob_id(data)}")
    if actual != spec.pin:
        raise DatasetError(f"{url} does not have the pinned content ({actual[:23]}..., "
                           f"expected {spec.pin[:23]}...)")
    write_atomic(target, data)
