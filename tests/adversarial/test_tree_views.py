"""The mappings a restore keeps of the tree's files (``inbox/views.py``), attacked.

A restore looks at every kept file's bytes, and at the rest of its last page, through a
private read-only mapping kept since the last restore. These tests show that the look
sees what the agent can do to the file without moving its times, that it never faults
in a page the file does not hold, that nothing of it reaches a forked child, and that a
removed file's inode is let go at the next restore.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import time
from collections.abc import Iterator

import pytest
from mapping_helpers import shared_pages

from intercode.sandbox.inbox import fsops, views
from intercode.sandbox.inbox.tree import DIR, FILE, Tree

EPOCH = 10**18
FILES = {"w/a.txt": b"alpha\n", "w/b.txt": b"b" * (fsops.PAGE + 7), "w/page": b"p" * fsops.PAGE}


def _tree(route: str, files: dict[str, bytes] = FILES) -> tuple[Tree, str]:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (a tmpfs, as the sandbox's root)")
    root = tempfile.mkdtemp(dir="/dev/shm")
    tree = Tree(root)
    if route == "read":
        tree.views.max_files = 0  # no mapping: every look reads the file
    tree.set_base([])
    tree.load([("w", DIR, 0o755, EPOCH, None)]
              + [(rel, FILE, 0o644, EPOCH, data) for rel, data in files.items()])
    return tree, root


def _settle(tree: Tree, files: int) -> int:
    """Restore (past the trust margin each time) until the restore trusts every file, and
    so maps ``files`` of them: a restore's records are too new to be trusted when it
    wrote, compared or moved an entry in the same tick. Returns how many are mapped."""
    for _ in range(5):
        time.sleep(0.05)
        tree.restore()
        if len(tree.views) == files:
            break
    return len(tree.views)


@pytest.fixture(params=["view", "read"])
def trusted(request: pytest.FixtureRequest) -> Iterator[tuple[Tree, str, str]]:
    """A tree whose last restore trusted every file (and, by the view route, mapped it)."""
    tree, root = _tree(request.param)
    try:
        assert _settle(tree, len(FILES)) == (len(FILES) if request.param == "view" else 0)
        assert all(tree._trusted(rel, os.lstat(os.path.join(root, rel))) for rel in FILES)
        yield tree, root, request.param
    finally:
        tree.views.clear()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(("rel", "at", "what"), [
    ("w/a.txt", 0, "in place"),
    ("w/a.txt", 10, "past the end"),
    ("w/b.txt", fsops.PAGE + 3, "in place, in the second page"),
    ("w/b.txt", fsops.PAGE + 9, "past the end, in the second page"),
    ("w/page", fsops.PAGE - 1, "in place, the last byte of a whole page"),
])
def test_a_restore_sees_every_write_through_a_shared_mapping(trusted, rel, at, what):
    """Whether it looks through its kept mapping or reads: the file, trusted by its
    record, is written anew, and the next episode's copy holds the pristine bytes."""
    tree, root, _route = trusted
    path = os.path.join(root, rel)
    st = os.lstat(path)
    pages = shared_pages(path, -(-st.st_size // fsops.PAGE) * fsops.PAGE)
    pages[at] = b"\x01"
    after = os.lstat(path)
    if (after.st_ctime_ns, after.st_mtime_ns) != (st.st_ctime_ns, st.st_mtime_ns):
        pytest.skip("this file system moves the times of a file written through a mapping")
    assert tree._trusted(rel, after)  # what the record alone says
    assert tree.restore() == {"deleted": 0, "written": 1}
    assert os.lstat(path).st_ino != st.st_ino
    with open(path, "rb") as f:
        assert f.read() == FILES[rel]
    fd = os.open(path, os.O_RDONLY)
    try:
        assert fsops.tail_is_clear(fd, len(FILES[rel]))
    finally:
        os.close(fd)


def test_the_next_restore_looks_through_a_mapping_without_opening_the_file(trusted, monkeypatch):
    """What the view route saves (and the read route still pays): no file is opened."""
    tree, _root, route = trusted
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    time.sleep(0.05)
    assert tree.restore() == {"deleted": 0, "written": 0}
    looked = [p for p in opened if isinstance(p, str) and "/w/" in p]
    assert looked == ([] if route == "view" else [os.path.join(tree.root, r) for r in sorted(FILES)])


@pytest.mark.parametrize("how", ["truncated and grown back", "hole punched"])
def test_a_file_that_changed_size_or_gained_a_hole_is_not_looked_at_through_its_mapping(
        trusted, how):
    """Both move the ctime: the file is no longer trusted, its mapping is dropped (a look
    through it would fault the hole in), and it is compared by reading, then written
    anew."""
    tree, root, route = trusted
    rel = "w/b.txt"
    path = os.path.join(root, rel)
    fd = os.open(path, os.O_RDWR)
    try:
        if how == "truncated and grown back":
            os.ftruncate(fd, 10)
            os.ftruncate(fd, len(FILES[rel]))
        else:
            libc = ctypes.CDLL(None, use_errno=True)
            # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE over the first page
            if libc.fallocate(fd, 3, ctypes.c_long(0), ctypes.c_long(fsops.PAGE)) != 0:
                pytest.skip("no hole punching here")
    finally:
        os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.lseek(fd, 0, os.SEEK_HOLE) < len(FILES[rel])
    finally:
        os.close(fd)
    assert not tree._trusted(rel, os.lstat(path))
    assert tree.restore() == {"deleted": 0, "written": 1}
    with open(path, "rb") as f:
        assert f.read() == FILES[rel]
    assert rel not in tree.views._views
    assert _settle(tree, len(FILES)) == (len(FILES) if route == "view" else 0)


def test_a_file_with_a_hole_is_not_mapped():
    """A file with a hole (a restore writes it anew, but one a snapshot's record vouches
    for is kept): mapping it would fault the hole in (a new page, a SIGBUS on a full
    tmpfs), so it is read instead, and the hole stays."""
    data = b"a" + bytes(3 * fsops.PAGE) + b"z"
    tree, root = _tree("view", {"w/sparse": data})
    try:
        path = os.path.join(root, "w", "sparse")
        fd = os.open(path, os.O_RDWR)
        try:  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE over two pages of zeros
            if ctypes.CDLL(None).fallocate(fd, 3, ctypes.c_long(fsops.PAGE),
                                           ctypes.c_long(2 * fsops.PAGE)) != 0:
                pytest.skip("no hole punching here")
            st = os.fstat(fd)
            blocks = st.st_blocks
            assert not tree.views.make("w/sparse", fd, st, data)
            assert len(tree.views) == 0
            assert tree.views.same("w/sparse", st, data) is None
        finally:
            os.close(fd)
        assert os.lstat(path).st_blocks == blocks  # no page was faulted in
    finally:
        tree.views.clear()
        shutil.rmtree(root, ignore_errors=True)


def _maps(pid: int | str, root: str) -> list[str]:
    with open(f"/proc/{pid}/maps") as f:
        return [line.rstrip("\n") for line in f if root in line]


def test_a_removed_files_inode_is_let_go_at_the_next_restore(trusted):
    """Until the next restore the mapping keeps a removed file's inode (and its room in
    the tmpfs); the restore drops it."""
    tree, root, route = trusted
    if route == "read":
        pytest.skip("nothing is mapped")
    shutil.rmtree(os.path.join(root, "w"))
    assert any(line.endswith("(deleted)") for line in _maps("self", root))
    tree.restore()
    assert not any(line.endswith("(deleted)") for line in _maps("self", root))


def test_a_new_tree_drops_every_mapping_of_the_old_one(trusted):
    tree, root, route = trusted
    if route == "read":
        pytest.skip("nothing is mapped")
    tree.load([("v", DIR, 0o755, EPOCH, None), ("v/c", FILE, 0o644, EPOCH, b"c\n")])
    assert len(tree.views) == 0
    assert _maps("self", root) == []


def test_a_forked_child_gets_no_mapping_of_the_tree(trusted):
    """The supervisor forks interpreters where no zygote is: none of them may hold a
    mapping of the tree (``MADV_DONTFORK``)."""
    _, root, route = trusted
    if route == "read":
        pytest.skip("nothing is mapped")
    assert len(_maps("self", root)) == len(FILES)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(write_end, str(len(_maps("self", root))).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        assert os.read(read_end, 64) == b"0"
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


def test_the_mappings_keep_to_their_bounds():
    """Past a bound, files are read instead, and the verdicts are the same."""
    files = {f"w/f{i}": bytes([65 + i]) * (100 + i) for i in range(6)}
    tree, root = _tree("view", files)
    try:
        tree.views.max_bytes = 3 * fsops.PAGE
        assert _settle(tree, 3) == 3
        for rel in ("w/f1", "w/f5"):  # one mapped, one read
            shared_pages(os.path.join(root, rel), fsops.PAGE)[2] = b"!"
        assert tree.restore()["written"] == 2
        for rel, data in files.items():
            with open(os.path.join(root, rel), "rb") as f:
                assert f.read() == data
    finally:
        tree.views.clear()
        shutil.rmtree(root, ignore_errors=True)


def test_the_budget_is_a_share_of_the_tmpfs_and_of_the_address_space(monkeypatch):
    import resource

    fs = os.statvfs("/dev/shm")
    size = fs.f_blocks * fs.f_frsize
    assert views.budget("/dev/shm") == min(views.MAX_BYTES, size // views.SHARE)
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (64 << 20, 64 << 20))
    assert views.budget("/dev/shm") == min(views.MAX_BYTES, size // views.SHARE,
                                           (64 << 20) // views.SHARE)
    assert views.budget("/nonexistent-directory") == 0
