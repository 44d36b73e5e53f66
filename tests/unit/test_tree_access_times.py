"""A restore gives the pristine files their access times back, so ``find -atime`` sees
the same tree at every episode's start whatever earlier episodes read."""

from __future__ import annotations

import os

from intercode.sandbox.inbox.tree import FILE, TRUST_NS, Tree

MTIME = 10**18  # 2001: any read moves the access time (relatime)
ENTRIES = [("w", "d", 0o755, MTIME, None), ("w/a.txt", FILE, 0o644, MTIME, b"alpha\n"),
           ("w/b.txt", FILE, 0o644, MTIME, b"beta\n")]


def make(tmp_path):
    tree = Tree(str(tmp_path))
    tree.set_base([])
    tree.load(ENTRIES)
    return tree


def read(path):
    with open(path, "rb") as f:
        f.read()


def trust_all(tree):
    """Pretend every record was taken long after the entry last changed (as when an
    episode lasts longer than a clock tick)."""
    for rel in list(tree.clean):
        st = os.lstat(tree.abspath(rel))
        tree.clean[rel] = (st.st_ino, st.st_ctime_ns, st.st_ctime_ns + TRUST_NS + 1)


def test_a_file_read_since_the_last_restore_gets_its_access_time_back(tmp_path):
    tree = make(tmp_path)
    path = tmp_path / "w" / "a.txt"
    assert os.stat(path).st_atime_ns == MTIME
    trust_all(tree)
    read(path)
    assert os.stat(path).st_atime_ns != MTIME  # relatime: a read of an old file moves it
    tree.restore()
    assert os.stat(path).st_atime_ns == MTIME
    assert os.stat(tmp_path / "w" / "b.txt").st_atime_ns == MTIME


def test_a_read_by_the_restore_itself_is_undone(tmp_path):
    tree = make(tmp_path)
    path = tmp_path / "w" / "a.txt"
    st = os.lstat(path)  # a record taken in the same clock tick: compared, so read
    tree.clean["w/a.txt"] = (st.st_ino, st.st_ctime_ns, st.st_ctime_ns + 1)
    assert tree.restore()["written"] == 0
    assert os.lstat(path).st_ino == st.st_ino
    assert os.stat(path).st_atime_ns == MTIME
    assert path.read_bytes() == b"alpha\n"


def test_a_file_the_agent_changed_is_still_rewritten(tmp_path):
    tree = make(tmp_path)
    path = tmp_path / "w" / "a.txt"
    path.write_bytes(b"ALPHA\n")
    stats = tree.restore()
    assert os.stat(path).st_atime_ns == MTIME
    assert stats["written"] == 1 and path.read_bytes() == b"alpha\n"
