"""Records that vouch by their own look (``Tree.fresh_ctimes``), attacked.

Where the file system gives every change made after a look at an inode a ctime of its
own (Linux's multigrain timestamps), a restore trusts what it recorded at once, instead
of from the next tick of the coarse clock. These tests change entries right after a
restore, in the tick of its records, in every way an agent can, and check that the next
restore and the diff see it; among them the one change that stamps a directory with
another inode's time (a hard link made and removed in it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import pytest

from intercode.sandbox.inbox import fsops
from intercode.sandbox.inbox.tree import DIR, FILE, LINK, LOOKED, Tree

EPOCH = 10**18
ENTRIES = [("w", DIR, 0o755, EPOCH, None), ("w/a.txt", FILE, 0o644, EPOCH, b"alpha\n"),
           ("w/sub", DIR, 0o755, EPOCH, None), ("w/ln", LINK, 0o777, EPOCH, "a.txt")]


@pytest.fixture
def place() -> Iterator[str]:
    """A folder on a tmpfs (as the sandbox's root) holding the tree's root ``t`` and a
    file ``x`` outside the tree on the same file system."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (a tmpfs, as the sandbox's root)")
    base = tempfile.mkdtemp(dir="/dev/shm")
    os.mkdir(os.path.join(base, "t"))
    with open(os.path.join(base, "x"), "wb") as f:
        f.write(b"x")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _fresh_tree(base: str) -> Tree:
    tree = Tree(os.path.join(base, "t"))
    if not tree.fresh_ctimes:
        pytest.skip("this file system stamps changes from the coarse clock only")
    tree.set_base([])
    tree.load(ENTRIES)
    return tree


def _is_pristine(tree: Tree) -> bool:
    for rel, kind, mode, mtime, payload in ENTRIES:
        path = tree.abspath(rel)
        st = os.lstat(path)
        if st.st_mtime_ns != mtime or st.st_atime_ns != mtime:
            return False
        if kind == LINK:
            if os.readlink(path) != payload:
                return False
            continue
        if st.st_mode & 0o7777 != mode or fsops.has_agent_xattrs(path):
            return False
        if kind == FILE:
            with open(path, "rb") as f:
                if f.read() != payload:
                    return False
    return sorted(os.listdir(tree.abspath("w"))) == ["a.txt", "ln", "sub"]


def test_the_probe_agrees_with_a_longer_measurement(place):
    """``fresh_ctimes`` says yes only where no change after a look kept its ctime in a
    thousand tries of a file's mode and bytes."""
    path = os.path.join(place, "x")
    kept = 0
    for i in range(1000):
        before = os.lstat(path).st_ctime_ns
        if i % 2:
            os.chmod(path, 0o600 | (i % 4) << 5)
        else:
            with open(path, "r+b") as f:
                f.write(b"%d" % i)
        kept += os.lstat(path).st_ctime_ns == before
    assert fsops.fresh_ctimes(place) == (kept == 0)


def test_the_probe_says_no_where_a_change_keeps_the_ctime(place, monkeypatch):
    """A file system that kept a ctime through a change (as a coarse clock does within
    its tick) is not trusted by its records' looks, and the probe leaves nothing behind."""
    real = os.fstat

    def stale(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((*st[:9], st.st_ctime), {"st_ctime_ns": 1})  # never moves

    monkeypatch.setattr(os, "fstat", stale)
    assert fsops.fresh_ctimes(place) is False
    monkeypatch.undo()
    assert sorted(os.listdir(place)) == ["t", "x"]
    assert fsops.fresh_ctimes(os.path.join(place, "missing")) is False


def _write_same_size(tree: Tree, base: str) -> None:
    with open(tree.abspath("w/a.txt"), "r+b") as f:
        f.write(b"ALPHA\n")
    os.utime(tree.abspath("w/a.txt"), ns=(EPOCH, EPOCH))


def _chmod(tree: Tree, base: str) -> None:
    os.chmod(tree.abspath("w/a.txt"), 0o600)


def _chmod_dir(tree: Tree, base: str) -> None:
    os.chmod(tree.abspath("w/sub"), 0o700)


def _truncate_and_refill(tree: Tree, base: str) -> None:
    os.truncate(tree.abspath("w/a.txt"), 0)
    with open(tree.abspath("w/a.txt"), "r+b") as f:
        f.write(b"alpHa\n")
    os.utime(tree.abspath("w/a.txt"), ns=(EPOCH, EPOCH))


def _dir_times(tree: Tree, base: str) -> None:
    os.utime(tree.abspath("w/sub"), ns=(EPOCH + 5, EPOCH + 5))


def _xattr(tree: Tree, base: str) -> None:
    try:
        os.setxattr(tree.abspath("w/a.txt"), "user.k", b"v")
    except OSError:
        pytest.skip("no user xattrs on this tmpfs")


def _link_replaced(tree: Tree, base: str) -> None:
    os.unlink(tree.abspath("w/ln"))
    os.symlink("sub", tree.abspath("w/ln"))
    os.utime(tree.abspath("w/ln"), ns=(EPOCH, EPOCH), follow_symlinks=False)


def _hard_link_made_and_removed(tree: Tree, base: str) -> None:
    """Stamps ``w`` with the time of ``x``, which nothing looked at: the coarse clock's."""
    os.link(os.path.join(base, "x"), tree.abspath("w/n"))
    os.unlink(tree.abspath("w/n"))


def _file_renamed_out_and_back(tree: Tree, base: str) -> None:
    os.rename(tree.abspath("w/a.txt"), tree.abspath("w/sub/a.txt"))
    os.rename(tree.abspath("w/sub/a.txt"), tree.abspath("w/a.txt"))


def _file_removed_and_made_again(tree: Tree, base: str) -> None:
    os.unlink(tree.abspath("w/a.txt"))
    with open(tree.abspath("w/a.txt"), "wb") as f:
        f.write(b"alpha\n")
    os.chmod(tree.abspath("w/a.txt"), 0o644)
    os.utime(tree.abspath("w/a.txt"), ns=(EPOCH, EPOCH))


CHANGES: dict[str, Callable[[Tree, str], None]] = {
    "bytes of the same size, times put back": _write_same_size,
    "a file's mode": _chmod,
    "a directory's mode": _chmod_dir,
    "truncated and refilled, times put back": _truncate_and_refill,
    "a directory's times": _dir_times,
    "an xattr": _xattr,
    "a symlink made anew to another target": _link_replaced,
    "a hard link made and removed in a directory": _hard_link_made_and_removed,
    "a file renamed out and back": _file_renamed_out_and_back,
    "a file removed and made again with its bytes, mode and times": _file_removed_and_made_again,
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_change_in_the_tick_of_the_restores_records_is_undone(place, change):
    """Each change comes right after a restore (its records vouch by their look), many
    times over, so that most fall in the tick of the records; the next restore always
    brings the tree back."""
    tree = _fresh_tree(place)
    for _ in range(30):
        os.listdir(tree.abspath("w"))  # (its access time moves: the restore touches it)
        tree.restore()
        assert tree.clean["w"][2] == LOOKED
        CHANGES[change](tree, place)
        tree.restore()
        assert _is_pristine(tree), change


def test_a_directory_stamped_with_another_inodes_time_is_not_trusted(place):
    """A hard link made and removed right after a restore leaves the directory's ctime
    the one its record holds (it takes the coarse time of the inode linked, which nothing
    looked at), and only its mtime says it changed: the restore gives that back."""
    tree = _fresh_tree(place)
    kept = 0
    for _ in range(30):
        os.listdir(tree.abspath("w"))
        tree.restore()
        record = tree.clean["w"]
        _hard_link_made_and_removed(tree, place)
        st = os.lstat(tree.abspath("w"))
        if st.st_ctime_ns == record[1]:
            kept += 1
            assert st.st_mtime_ns != EPOCH and not tree._trusted("w", st)
        tree.restore()
        assert os.lstat(tree.abspath("w")).st_mtime_ns == EPOCH
    if not kept:
        pytest.skip("no link kept the directory's ctime here (nothing for the mtime to catch)")


def test_a_change_in_the_tick_of_the_records_shows_in_the_diff(place):
    tree = _fresh_tree(place)
    for _ in range(30):
        tree.restore()
        _write_same_size(tree, place)
        assert tree.status([]) == [["w/a.txt", "M"]]
        tree.restore()
        assert tree.status([]) == []


def test_an_unchanged_tree_is_trusted_at_the_next_restore(place):
    """What the rule is for: an entry the restore touched (here: directories and a file
    whose access time it gave back) is trusted at the next restore, not compared."""
    tree = _fresh_tree(place)
    os.listdir(tree.abspath("w"))
    with open(tree.abspath("w/a.txt"), "rb") as f:
        f.read()
    tree.restore()
    compared = []
    real = tree._matches_pristine

    def spy(rel: str, st: os.stat_result) -> bool:
        compared.append(rel)
        return real(rel, st)

    tree._matches_pristine = spy  # type: ignore[method-assign]
    assert tree.restore() == {"deleted": 0, "written": 0}
    assert compared == []
