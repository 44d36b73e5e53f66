"""Getting pinned data files: mirror layouts, corruption, the download path and its cache."""

from __future__ import annotations

import gc
import hashlib
import os
import socket
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from upstream_server import serve_files

from intercode import fetch
from intercode.datafiles import FILES, REVISION
from intercode.datasets.registry import load_dataset
from intercode.errors import DatasetError, IntercodeError

# the mirror the suite runs with (tests/conftest.py sets it)
SHARED = Path(os.environ.get("INTERCODE_DATA_MIRROR", "/nonexistent"))
pytestmark = pytest.mark.usefixtures("fresh_caches")
REV12 = REVISION[:12]


# ---------------------------------------------------------------- helpers and fixtures




@pytest.fixture()
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"the shared data mirror {SHARED} is missing")
    return SHARED


def _copy(shared: Path, key: str, root: Path, layout: str) -> Path:
    """Copy one pinned file from the shared mirror into ``root`` (writable copy)."""
    spec = FILES[key]
    dest = root / (spec.upstream if layout == "upstream" else spec.mirror)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes((shared / spec.mirror).read_bytes())
    return dest


def _flip_byte(path: Path, offset: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def no_mirror(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Download mode: no mirror, a private cache; returns the cache folder."""
    monkeypatch.delenv("INTERCODE_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("INTERCODE_CACHE", str(cache))
    return cache


@dataclass
class Upstream:
    """A local stand-in for raw.githubusercontent.com at the pinned revision."""

    root: Path
    url: str
    requests: list[str] = field(default_factory=list)
    mode: str = "serve"  # serve | wrong | long


@pytest.fixture()
def upstream(tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch,
             no_mirror: Path) -> Iterator[Upstream]:
    root = tmp_path / "upstream"
    for key in ("nl2bash_fs_4", "setup_nl2b_fs_4", "bash_test_queries"):
        _copy(shared, key, root, "upstream")
    state = Upstream(root=root, url="")

    def alter(path: Path, body: bytes) -> bytes:
        if state.mode == "wrong":
            return body[:-1] + bytes([body[-1] ^ 0x01])
        return body + b"\n" if state.mode == "long" else body

    with serve_files(root, alter) as served:
        state.url, state.requests = served.url, served.requests
        monkeypatch.setenv("INTERCODE_DATA_URL", state.url)
        yield state


@pytest.fixture()
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Make the download retries instant; returns the requested sleeps."""
    sleeps: list[float] = []
    monkeypatch.setattr(fetch, "time", SimpleNamespace(sleep=sleeps.append))
    return sleeps


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the file table


def test_file_table_is_consistent_with_the_shared_mirror(shared: Path) -> None:
    for key, spec in FILES.items():
        path = shared / spec.mirror
        if spec.blob:  # a large file the mirror may leave out, pinned by its blob id
            assert not spec.sha256 and not spec.size and len(spec.blob) == 40, key
            if path.is_file():
                assert fetch.blob_id(path.read_bytes()) == spec.blob, key
            continue
        assert path.is_file(), key
        assert path.stat().st_size == spec.size, key
        assert _sha(path) == spec.sha256, key


def test_unknown_data_file_key() -> None:
    with pytest.raises(DatasetError, match="no_such_file"):
        fetch.data_file("no_such_file")


def test_cache_dir_honours_intercode_cache_then_xdg(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fetch.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("INTERCODE_CACHE")
    assert fetch.cache_dir() == tmp_path / "xdg" / "intercode"


# ---------------------------------------------------------------- mirrors


@pytest.mark.parametrize("layout", ["flat", "upstream"])
def test_mirror_layouts_resolve(layout: str, shared: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    keys = ("nl2bash_fs_1", "nl2bash_fs_4", "setup_nl2b_fs_4", "results_bash_fs_4")
    copied = {key: _copy(shared, key, mirror, layout) for key in keys}
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(mirror))
    # a download would fail loudly: the mirror must be the only source
    monkeypatch.setenv("INTERCODE_DATA_URL", f"http://127.0.0.1:{_closed_port()}/")
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    for key in keys:
        got = fetch.data_file(key)
        assert got == copied[key]
        assert _sha(got) == FILES[key].sha256
    expected_first = (shared / FILES["nl2bash_fs_1"].mirror).read_bytes()
    assert fetch.data_file("nl2bash_fs_1").read_bytes() == expected_first
    assert not (tmp_path / "cache").exists()
    # and datasets load from it
    assert len(load_dataset("nl2bash-fs1")) == 60
    assert len(load_dataset("nl2bash-fs4")) == 27


def test_mirror_missing_file_says_what_to_do(shared: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    _copy(shared, "nl2bash_fs_1", mirror, "flat")
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetError) as info:
        fetch.data_file("nl2bash_fs_2")
    msg = str(info.value)
    assert "INTERCODE_DATA_MIRROR" in msg
    assert "data/nl2bash/nl2bash_fs_2.json" in msg
    assert str(mirror / "bash" / "nl2bash_fs_2.json") in msg  # where it looked
    assert "unset" in msg


def test_mirror_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(tmp_path / "nowhere"))
    with pytest.raises(DatasetError, match="INTERCODE_DATA_MIRROR"):
        fetch.data_file("nl2bash_fs_4")


@pytest.mark.parametrize("layout", ["flat", "upstream"])
def test_mirror_corrupt_file(layout: str, shared: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    path = _copy(shared, "nl2bash_fs_3", mirror, layout)
    _flip_byte(path, 100)
    assert path.stat().st_size == FILES["nl2bash_fs_3"].size  # same size, other content
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetError) as info:
        fetch.data_file("nl2bash_fs_3")
    msg = str(info.value)
    assert str(path) in msg
    assert "corrupt" in msg
    assert "revision" in msg
    assert REV12 in msg
    # the loader surfaces the same error, not a parse of bad data
    with pytest.raises(DatasetError, match="corrupt"):
        load_dataset("nl2bash-fs3")


def test_mirror_corrupted_after_a_good_read_is_detected(shared: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    path = _copy(shared, "setup_nl2b_fs_4", mirror, "flat")
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(mirror))
    assert fetch.data_file("setup_nl2b_fs_4") == path
    path.write_bytes(path.read_bytes() + b"echo extra\n")  # other size: a new digest key
    with pytest.raises(DatasetError, match="corrupt"):
        fetch.data_file("setup_nl2b_fs_4")


def test_mirror_truncated_file_is_corrupt(shared: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    path = _copy(shared, "bash_test_queries", mirror, "upstream")
    path.write_bytes(path.read_bytes()[:-20])
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetError, match="corrupt"):
        fetch.data_file("bash_test_queries")


# ---------------------------------------------------------------- download


def test_download_into_cache_and_verify(upstream: Upstream, no_mirror: Path) -> None:
    spec = FILES["nl2bash_fs_4"]
    got = fetch.data_file("nl2bash_fs_4")
    assert got == no_mirror / "data" / REV12 / "data" / "nl2bash" / "nl2bash_fs_4.json"
    assert got.is_file()
    assert _sha(got) == spec.sha256
    assert got.stat().st_size == spec.size
    assert upstream.requests == ["/data/nl2bash/nl2bash_fs_4.json"]
    assert not list(got.parent.glob(".part-*"))  # no temporary file left behind


def test_download_setup_script_path(upstream: Upstream, no_mirror: Path) -> None:
    got = fetch.data_file("setup_nl2b_fs_4")
    assert got == no_mirror / "data" / REV12 / "docker" / "bash_scripts" / "setup_nl2b_fs_4.sh"
    assert upstream.requests == ["/docker/bash_scripts/setup_nl2b_fs_4.sh"]


def test_second_call_uses_the_cache(upstream: Upstream) -> None:
    first = fetch.data_file("nl2bash_fs_4")
    second = fetch.data_file("nl2bash_fs_4")
    assert first == second
    fetch._verified.clear()  # as in a new process: verified again from disk, still no request
    third = fetch.data_file("nl2bash_fs_4")
    assert third == first
    assert len(upstream.requests) == 1


def test_datasets_load_through_the_download_path(upstream: Upstream) -> None:
    assert len(load_dataset("nl2bash-fs4")) == 27
    assert len(load_dataset("bash-test")) == 24
    assert sorted(upstream.requests) == ["/data/nl2bash/nl2bash_fs_4.json",
                                         "/data/nl2bash/test_queries.json"]


def test_corrupt_cached_file_is_downloaded_again(upstream: Upstream) -> None:
    spec = FILES["nl2bash_fs_4"]
    path = fetch.data_file("nl2bash_fs_4")
    _flip_byte(path, 50)
    fetch._verified.clear()
    again = fetch.data_file("nl2bash_fs_4")
    assert again == path
    assert _sha(again) == spec.sha256
    assert len(upstream.requests) == 2


def test_corrupt_cached_file_and_bad_server(upstream: Upstream) -> None:
    path = fetch.data_file("nl2bash_fs_4")
    _flip_byte(path, 50)
    fetch._verified.clear()
    upstream.mode = "wrong"
    with pytest.raises(DatasetError, match="pinned content"):
        fetch.data_file("nl2bash_fs_4")
    assert not path.exists()  # the corrupt copy is not kept around


@pytest.mark.parametrize("mode", ["wrong", "long"])
def test_server_with_wrong_content(mode: str, upstream: Upstream, no_mirror: Path) -> None:
    upstream.mode = mode
    with pytest.raises(DatasetError) as info:
        fetch.data_file("nl2bash_fs_4")
    msg = str(info.value)
    assert "pinned content" in msg
    assert upstream.url + "data/nl2bash/nl2bash_fs_4.json" in msg
    target = no_mirror / "data" / REV12 / "data" / "nl2bash" / "nl2bash_fs_4.json"
    assert not target.exists()
    assert not list(target.parent.glob(".part-*"))
    # once the server is right again, the file is fetched and verified
    upstream.mode = "serve"
    assert _sha(fetch.data_file("nl2bash_fs_4")) == FILES["nl2bash_fs_4"].sha256


def test_server_without_the_file(upstream: Upstream, no_sleep: list[float]) -> None:
    (upstream.root / FILES["nl2bash_fs_4"].upstream).unlink()
    with pytest.raises(DatasetError) as info:
        fetch.data_file("nl2bash_fs_4")
    assert "data/nl2bash/nl2bash_fs_4.json" in str(info.value)
    assert upstream.requests


def test_unreachable_server(no_mirror: Path, monkeypatch: pytest.MonkeyPatch,
                            no_sleep: list[float]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    monkeypatch.setenv("INTERCODE_DATA_URL", url)
    with pytest.raises(DatasetError) as info:
        fetch.data_file("nl2bash_fs_1")
    msg = str(info.value)
    assert "INTERCODE_DATA_MIRROR" in msg
    assert url + "data/nl2bash/nl2bash_fs_1.json" in msg
    assert len(no_sleep) >= 2  # it retried
    assert not (no_mirror / "data" / REV12 / "data" / "nl2bash" / "nl2bash_fs_1.json").exists()


def _raw_server(payload: bytes) -> tuple[socket.socket, threading.Thread]:
    """A TCP server that answers every connection with ``payload`` and hangs up."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def run() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(payload)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return srv, thread


@pytest.mark.parametrize("payload", [
    b"garbage\r\n\r\n",  # not HTTP at all
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",  # cut off mid-chunk
], ids=["bad-status-line", "truncated-chunked"])
def test_broken_http_response_is_a_dataset_error(payload: bytes, no_mirror: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 no_sleep: list[float]) -> None:
    srv, thread = _raw_server(payload)
    try:
        monkeypatch.setenv("INTERCODE_DATA_URL", f"http://127.0.0.1:{srv.getsockname()[1]}/")
        with pytest.raises(DatasetError, match="INTERCODE_DATA_MIRROR"):
            fetch.data_file("nl2bash_fs_4")
    finally:
        # urllib leaves the connection open after a non-OSError HTTP failure; collect it
        # here rather than have its ResourceWarning surface in another test
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        srv.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        srv.close()
        thread.join(timeout=5)
        assert not thread.is_alive()


def test_invalid_data_url(no_mirror: Path, monkeypatch: pytest.MonkeyPatch,
                          no_sleep: list[float]) -> None:
    monkeypatch.setenv("INTERCODE_DATA_URL", "not a url")
    with pytest.raises(IntercodeError, match="INTERCODE_DATA_URL"):
        fetch.data_file("nl2bash_fs_4")


def test_mirror_set_means_no_download(upstream: Upstream, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(empty))
    with pytest.raises(DatasetError, match="INTERCODE_DATA_MIRROR"):
        fetch.data_file("nl2bash_fs_4")
    assert upstream.requests == []

