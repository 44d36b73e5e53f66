"""Get a pinned data file: from a local mirror, the user cache, or a download.

``INTERCODE_DATA_MIRROR`` names a folder laid out like the upstream repository (or
like ``shared/datasets/intercode``); when it is set, only the mirror is used.
Otherwise files are downloaded once from the upstream repository at the pinned
revision into ``INTERCODE_CACHE`` (default ``$XDG_CACHE_HOME/intercode``). Every
file is checked against its sha256.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

from intercode.datafiles import FILES, REPOSITORY, REVISION, DataFile
from intercode.errors import DatasetError
from intercode.fsutil import cache_dir, write_atomic

__all__ = ["data_file", "fetch_file"]

log = logging.getLogger(__name__)

DEFAULT_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{REVISION}/"
_verified: dict[tuple[str, int, int], str] = {}


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
    if mirror:
        return _from_mirror(Path(mirror), spec)
    target = cache_dir() / "data" / REVISION[:12] / spec.upstream
    if target.is_file():
        if _digest(target) == spec.sha256:
            return target
        log.warning("cached %s is corrupt; downloading it again", target)
        target.unlink()
    _download(spec, target)
    return target


def _from_mirror(mirror: Path, spec: DataFile) -> Path:
    candidates = [mirror / spec.upstream, mirror / spec.mirror]
    for path in candidates:
        if path.is_file():
            actual = _digest(path)
            if actual != spec.sha256:
                raise DatasetError(
                    f"{path} does not match the pinned revision {REVISION[:12]} of "
                    f"{REPOSITORY} (sha256 {actual[:16]}..., expected {spec.sha256[:16]}...); "
                    "the mirror is corrupt or from another revision")
            return path
    looked = " or ".join(str(p) for p in candidates)
    raise DatasetError(
        f"{spec.upstream} is missing from INTERCODE_DATA_MIRROR={mirror} (looked for {looked}); "
        "point INTERCODE_DATA_MIRROR at a copy of the upstream repository, or unset it to "
        "download the data")


def _digest(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _verified:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _verified[key] = h.hexdigest()
    return _verified[key]


def _download(spec: DataFile, target: Path, attempts: int = 3) -> None:
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
                data = resp.read(spec.size + 1)
            break
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the open response
            error = exc
            time.sleep(0.5 * (attempt + 1))
    else:
        raise DatasetError(
            f"could not download {url}: {error}; set INTERCODE_DATA_MIRROR to a local copy of "
            f"{REPOSITORY} if this machine has no internet access") from error
    actual = hashlib.sha256(data).hexdigest()
    if actual != spec.sha256:
        raise DatasetError(f"{url} does not have the pinned content (sha256 {actual[:16]}..., "
                           f"expected {spec.sha256[:16]}...)")
    write_atomic(target, data)
