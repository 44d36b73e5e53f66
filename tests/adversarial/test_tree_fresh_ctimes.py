"""Records that vouch by their own look (``Tree.fresh_ctimes``), attacked.

Where the file system gives every change made after a look at an inode a ctime of its
own (Linux's multigrain timestamps), a restore trusts the files and links it recorded at
once, instead of from the next tick of the coarse clock. These tests change entries
right after a restore, in the tick of its records, in every way an agent can, and check
that the next restore and the diff see it. Directories keep the coarse clock's rule: a
hard link made and removed in one stamps it with another inode's time and clears the
mark a look left on it, so that its own changes in that tick could keep its ctime.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import struct
import tempfile
import time
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
        os.listdir(tree.abspath("w"))  # (access times move: the restore touches them)
        with open(tree.abspath("w/a.txt"), "rb") as f:
            f.read()
        tree.restore()
        assert tree.clean["w/a.txt"][2] == LOOKED
        CHANGES[change](tree, place)
        tree.restore()
        assert _is_pristine(tree), change


def _dir_mode(path: str, mtime: int) -> None:
    os.chmod(path, 0o777)
    os.utime(path, ns=(mtime, mtime))


def _dir_flag(path: str, mtime: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, fsops.FS_IOC_SETFLAGS, struct.pack("=i", 0x80) + bytes(4))  # +A
    finally:
        os.close(fd)
    os.utime(path, ns=(mtime, mtime))


def _dir_order(path: str, mtime: int) -> None:
    """A rename out and back (no listing: a listing's ``fstat`` would look at it)."""
    name = "a.txt" if os.path.basename(path) == "w" else "w"
    os.rename(os.path.join(path, name), os.path.join(path, ".moved"))
    os.rename(os.path.join(path, ".moved"), os.path.join(path, name))
    os.utime(path, ns=(mtime, mtime))


def _dir_state(path: str) -> tuple[int, int, list[str]]:
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), fsops.inode_flags(path, True), os.listdir(path)


@pytest.mark.parametrize("target", ["w", ""], ids=["a directory", "the root"])
@pytest.mark.parametrize("change", [_dir_mode, _dir_flag, _dir_order],
                         ids=["mode", "flag", "listing order"])
def test_a_directory_stamped_with_another_inodes_time_keeps_nothing(place, target, change):
    """A hard link made and removed in a directory right after a restore stamps it with
    the time of the inode linked (the coarse clock's: nothing looked at it), which also
    clears the mark the restore's look left: its mode, a flag or its listing order
    changed next, and its mtime put back, keep the ctime its record holds. A directory
    is trusted by the coarse clock's rule only, so the next restore undoes them."""
    tree = _fresh_tree(place)
    path = tree.abspath(target)
    pristine = _dir_state(path)
    mtime = os.lstat(path).st_mtime_ns
    for _ in range(30):
        os.listdir(path)  # its access time moves: the restore stamps it last thing
        tree.restore()
        os.link(os.path.join(place, "x"), os.path.join(path, ".n"))
        os.unlink(os.path.join(path, ".n"))
        change(path, mtime)
        tree.restore()
        assert _dir_state(path) == pristine


def test_a_change_in_the_tick_of_the_records_shows_in_the_diff(place):
    tree = _fresh_tree(place)
    for _ in range(30):
        tree.restore()
        _write_same_size(tree, place)
        assert tree.status([]) == [["w/a.txt", "M"]]
        tree.restore()
        assert tree.status([]) == []


def test_an_unchanged_tree_is_trusted_at_the_next_restore(place):
    """What the rule is for: a file or link the restore touched (here: a file whose access
    time it gave back) is trusted at the next restore, not compared."""
    tree = _fresh_tree(place)
    time.sleep(0.05)  # (the directories: trusted once a tick older than their records)
    tree.restore()
    with open(tree.abspath("w/a.txt"), "rb") as f:
        f.read()
    os.readlink(tree.abspath("w/ln"))
    tree.restore()
    compared = []
    real = tree._matches_pristine

    def spy(rel: str, st: os.stat_result) -> bool:
        compared.append(rel)
        return real(rel, st)

    tree._matches_pristine = spy  # type: ignore[method-assign]
    assert tree.restore() == {"deleted": 0, "written": 0}
    assert compared == []
