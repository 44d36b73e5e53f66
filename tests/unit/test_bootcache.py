"""The supervisor's compiled modules on disk: read back only whole and unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intercode.sandbox import bootcache

KEY = ("BwrapSandbox:/usr/bin/python3", "/roots/a", "digest")


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    return tmp_path


def test_a_kept_blob_comes_back_for_its_key_only() -> None:
    bootcache.store(KEY, "3.11.2 (main)", b"\x00code\xff" * 100)
    assert bootcache.load(KEY) == ("3.11.2 (main)", b"\x00code\xff" * 100)
    assert bootcache.load((KEY[0], "/roots/b", KEY[2])) is None


def test_a_damaged_short_long_or_foreign_file_is_ignored() -> None:
    bootcache.store(KEY, "3.11.2", b"abc" * 1000)
    path = bootcache.path_for(KEY)
    good = path.read_bytes()
    for bad in (good[:-1], good + b"x", good[:-3] + b"xyz", b"", b"garbage\n" + good,
                good.replace(b'"3.11.2"', b'3')):
        path.write_bytes(bad)
        assert bootcache.load(KEY) is None
    path.write_bytes(good)
    assert bootcache.load(KEY) == ("3.11.2", b"abc" * 1000)


def test_a_link_a_fifo_or_a_huge_file_is_never_read(tmp_path: Path) -> None:
    path = bootcache.path_for(KEY)
    path.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    bootcache.store(("other",), "3.11.2", b"abc")
    target.write_bytes(bootcache.path_for(("other",)).read_bytes())
    path.symlink_to(target)
    assert bootcache.load(KEY) is None
    path.unlink()
    os.mkfifo(path)
    assert bootcache.load(KEY) is None  # (never blocks)
    path.unlink()
    with open(path, "wb") as fh:
        fh.truncate(bootcache.MAX_BLOB + 10_000)
    assert bootcache.load(KEY) is None


def test_an_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("INTERCODE_CACHE", str(blocker))
    bootcache.store(KEY, "3.11.2", b"abc")  # no error
    assert bootcache.load(KEY) is None


def test_a_file_others_can_write_is_ignored() -> None:
    bootcache.store(KEY, "3.11.2", b"abc")
    path = bootcache.path_for(KEY)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    for mode in (0o620, 0o602, 0o666):
        path.chmod(mode)
        assert bootcache.load(KEY) is None
    path.chmod(0o600)
    assert bootcache.load(KEY) == ("3.11.2", b"abc")
