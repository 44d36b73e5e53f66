"""Upstream compared `md5sum p` (if "." in p) or `md5deep -r p` outputs; we compare the same."""

from __future__ import annotations

import os

from intercode.sandbox.inbox.tree import Tree


def make(tmp_path, files: dict[str, bytes]) -> Tree:
    for rel, data in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return Tree(str(tmp_path))


def test_files_compare_by_content(tmp_path):
    a = make(tmp_path / "a", {"x/f.txt": b"same", "x/g": b"one"})
    b = make(tmp_path / "b", {"x/f.txt": b"same", "x/g": b"two"})
    assert a.hashes(["x/f.txt"]) == b.hashes(["x/f.txt"])
    assert a.hashes(["x/g"]) != b.hashes(["x/g"])


def test_directories_without_a_dot_compare_recursively(tmp_path):
    a = make(tmp_path / "a", {"new/1": b"1", "new/sub/2": b"2"})
    b = make(tmp_path / "b", {"new/sub/2": b"2", "new/1": b"1"})
    c = make(tmp_path / "c", {"new/1": b"1", "new/sub/2": b"changed"})
    assert a.hashes(["new/"]) == b.hashes(["new/"])
    assert a.hashes(["new/"]) != c.hashes(["new/"])


def test_directories_with_a_dot_always_match(tmp_path):
    # upstream ran `md5sum dir.d/`, which only prints "Is a directory" on both sides
    a = make(tmp_path / "a", {"dir.d/1": b"1"})
    b = make(tmp_path / "b", {"dir.d/1": b"different"})
    assert a.hashes(["dir.d/"]) == b.hashes(["dir.d/"])
    assert "Is a directory" in a.hashes(["dir.d/"])["dir.d/"]


def test_unreadable_files_are_still_hashed(tmp_path):
    a = make(tmp_path / "a", {"secret.txt": b"s"})
    b = make(tmp_path / "b", {"secret.txt": b"s"})
    os.chmod(tmp_path / "a" / "secret.txt", 0)
    assert a.hashes(["secret.txt"]) == b.hashes(["secret.txt"])
    assert (os.stat(tmp_path / "a" / "secret.txt").st_mode & 0o777) == 0
