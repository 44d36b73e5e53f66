"""Scans list no empty tmpfs directory (its size, which no one can set, says it is empty):
what appears in one is still found by a snapshot, a restore and the diff."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from intercode.sandbox.inbox.tree import EMPTY_TMPFS_DIR, FILE, Tree, on_tmpfs

SHM = Path("/dev/shm")
ENTRIES = [("e", "d", 0o755, 10**18, None), ("w", "d", 0o755, 10**18, None),
           ("w/e", "d", 0o755, 10**18, None), ("w/a", FILE, 0o644, 10**18, b"a\n")]


@pytest.fixture
def root() -> Iterator[Path]:
    if not SHM.is_dir() or not on_tmpfs(os.lstat(SHM).st_dev):
        pytest.skip("no tmpfs at /dev/shm")
    path = SHM / f"intercode-test-{uuid.uuid4().hex}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make(root: Path) -> Tree:
    tree = Tree(str(root))
    tree.set_base([])
    tree.load(ENTRIES)
    return tree


def test_the_shortcut_is_on_for_tmpfs_only(root: Path, tmp_path: Path) -> None:
    assert make(root).empty_size == EMPTY_TMPFS_DIR
    assert os.lstat(root / "e").st_size == EMPTY_TMPFS_DIR
    expected = EMPTY_TMPFS_DIR if on_tmpfs(os.lstat(tmp_path).st_dev) else None
    assert Tree(str(tmp_path)).empty_size == expected


@pytest.mark.parametrize("make_entry", [
    lambda d: (d / "f").write_bytes(b"x"),
    lambda d: (d / "sub").mkdir(),
    lambda d: os.symlink("/", d / "l"),
    lambda d: os.mkfifo(d / "p"),
], ids=["file", "dir", "link", "fifo"])
def test_an_entry_in_an_empty_directory_is_found(root: Path, make_entry) -> None:
    tree = make(root)
    snap, _reads = tree.snapshot()
    for rel in ("e", "w/e"):
        make_entry(root / rel)
        assert os.lstat(root / rel).st_size > EMPTY_TMPFS_DIR
    changed = tree.scan()
    assert any(p.startswith("e/") for p in changed) and any(p.startswith("w/e/") for p in changed)
    tree.restore_to(snap)
    assert os.listdir(root / "e") == [] and os.listdir(root / "w" / "e") == []


def test_a_directory_emptied_then_filled_is_listed_again(root: Path) -> None:
    tree = make(root)
    (root / "w" / "a").unlink()
    (root / "w" / "e").rmdir()
    assert os.lstat(root / "w").st_size == EMPTY_TMPFS_DIR
    assert not any(p.startswith("w/") for p in tree.scan())
    (root / "w" / "b").write_bytes(b"b")
    assert "w/b" in tree.scan()
    tree.restore()
    assert sorted(os.listdir(root / "w")) == ["a", "e"]


def test_the_diff_sees_a_file_in_an_empty_directory(root: Path) -> None:
    tree = make(root)
    assert tree.status([]) == []
    (root / "w" / "e" / "f").write_bytes(b"x")
    assert [path for path, _code in tree.status([])] == ["w/e/"]  # git: an untracked dir
