"""What an episode can leave in a kept file for the reset to miss, or to trip on.

Each attack keeps the file's bytes pristine (or removes it), so that a reset which looks
only at what a read shows keeps it: a tmpfs filled through a file the reset frees too
late, the large page ``madvise(MADV_COLLAPSE)`` makes of a small file (a shared mapping
writes after its last page, and the bytes stay), holes that make room for such a page
within the file's own blocks, inode flags (``chattr +A``), and access times of
directories.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Iterator

import pytest

from intercode.envs.bash import BashEnv
from intercode.sandbox.inbox import fsops
from intercode.sandbox.inbox.tree import DIR, FILE, Tree
from intercode.sandbox.limits import Limits

EPOCH = 10**18
TASK = 0  # nl2bash-fs1's first task: its gold changes nothing


def py(code: str) -> str:
    return "python3 - <<'EOF'\n" + code + "EOF"


@pytest.fixture(scope="module")
def env() -> Iterator[BashEnv]:
    environment = BashEnv("nl2bash-fs1", limits=Limits(timeout=60, storage=64 << 20))
    yield environment
    environment.close()


def _trusting_reset(env: BashEnv) -> None:
    """Resets until the last one trusts (and maps) every kept file."""
    for _ in range(3):
        env.reset(options={"task": TASK})
        time.sleep(0.05)


# the kept files, first and last in path order, that fit a mapping
KEPT = (
    "import os\n"
    "files = sorted(os.path.join(t, n) for t, _d, names in os.walk('/testbed') for n in names\n"
    "               if os.path.isfile(os.path.join(t, n))\n"
    "               and not os.path.islink(os.path.join(t, n))\n"
    "               and 0 < os.lstat(os.path.join(t, n)).st_size <= 1 << 20)\n"
    "first, last = files[0], files[-1]\n"
)
FILL = (
    "os.truncate(first, 0)\n"  # (its room is filled too)
    "fd = os.open(last, os.O_WRONLY | os.O_APPEND)\n"
    "try:\n"
    "    while True:\n"
    "        os.write(fd, b'x' * (1 << 20))\n"
    "except OSError as exc:\n"
    "    print('full:', exc.strerror)\n"
    "os.close(fd)\n"
)


@pytest.mark.parametrize("then", ["removed", "kept"])
def test_a_file_grown_to_fill_the_tmpfs_does_not_break_the_reset(env, then):
    """The agent grows the last kept file until the tree's tmpfs is full and empties the
    first one (removing the grown file, whose inode a mapping of the reset kept, or
    not): the reset must write the first file back before it reaches the last one.
    Every reset after it failed with ENOSPC; now the grown file's room is freed first."""
    _trusting_reset(env)
    box = env._sandbox("agent")
    action = KEPT + FILL + ("os.unlink(last)\n" if then == "removed" else "")
    assert "full: No space left on device" in box.run(py(action)).output
    for _ in range(2):
        _assert_reset_clean_and_roomy(env)


def _assert_reset_clean_and_roomy(env: BashEnv) -> None:
    """A reset works, and leaves the pristine tree with its room free."""
    env.reset(options={"task": TASK})
    box = env._sandbox("agent")
    assert box.diff() == []
    used = box.run("df -k --output=pcent / | tail -1").output.strip()
    assert int(used.rstrip("%")) < 10, used


COLLAPSE = (
    "import ctypes, mmap, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,\n"
    "                      ctypes.c_int, ctypes.c_long]\n"
    "libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]\n"
    "H = 2 << 20\n"
    "room = libc.mmap(None, 2 * H, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)\n"
    "at = (room + H - 1) & ~(H - 1)\n"
    "fd = os.open('/testbed/hello.c', os.O_RDWR if WRITE else os.O_RDONLY)\n"
    "prot = mmap.PROT_READ | (mmap.PROT_WRITE if WRITE else 0)\n"
    "a = libc.mmap(at, H, prot, mmap.MAP_SHARED | 0x10, fd, 0)  # MAP_FIXED\n"
    "ctypes.c_char.from_address(a).value\n"
    "if WRITE:\n"
    "    if libc.madvise(a, H, 25) != 0:  # MADV_COLLAPSE\n"
    "        print('no collapse:', ctypes.get_errno())\n"
    "    else:\n"
    "        ctypes.memmove(a + 65536, b'STA' + b'SHED', 7)\n"
    "        print('stashed')\n"
    "else:\n"
    "    print(ctypes.string_at(a + 65536, 7))\n"
)


def test_bytes_after_the_last_page_of_a_collapsed_file_do_not_outlive_the_episode(env):
    """A small file made one large page (``MADV_COLLAPSE``, no privilege needed) can be
    written through a shared mapping after its last page: no fault, no time moved, and
    neither a read nor the last page's rest shows it. The reset writes anew a file that
    holds more pages than its bytes fill, so the next episode's mapping of the page
    after the end faults (SIGBUS)."""
    _trusting_reset(env)
    box = env._sandbox("agent")
    out = box.run(py("WRITE = True\n" + COLLAPSE)).output
    if "no collapse" in out:
        pytest.skip("this kernel does not collapse tmpfs pages: " + out.strip())
    assert "stashed" in out
    env.step("submit")
    env.reset(options={"task": TASK})
    result = env._sandbox("agent").run(py("WRITE = False\n" + COLLAPSE))
    assert "STASHED" not in result.output
    assert result.exit_code != 0  # SIGBUS: no page there any more


FLAGS = (
    "import fcntl, os, struct\n"
    "for path in ('/testbed/hello.c', '/testbed/dir1'):\n"
    "    fd = os.open(path, os.O_RDONLY)\n"
    "    flags = struct.unpack('i', fcntl.ioctl(fd, 0x80086601, bytes(8))[:4])[0]\n"
    "    if SET:\n"
    "        fcntl.ioctl(fd, 0x40086602, struct.pack('q', flags | 0x80 | 0x40))\n"
    "        flags = struct.unpack('i', fcntl.ioctl(fd, 0x80086601, bytes(8))[:4])[0]\n"
    "    print(path, hex(flags))\n"
)


def test_inode_flags_do_not_outlive_the_episode(env):
    """``chattr +A +d`` (no atime, no dump: an owner's flags) on a kept file and a kept
    directory: the next episode's copies have none (they changed ``find -atime``'s
    answers, and carried bits from one episode to the next)."""
    env.reset(options={"task": TASK})
    box = env._sandbox("agent")
    out = box.run(py("SET = True\n" + FLAGS)).output
    if "0xc0" not in out:
        pytest.skip("this file system keeps no inode flags: " + out.strip())
    env.step("submit")
    env.reset(options={"task": TASK})
    out = env._sandbox("agent").run(py("SET = False\n" + FLAGS)).output
    assert out.split() == ["/testbed/hello.c", "0x0", "/testbed/dir1", "0x0"]


# -- the same on a tree of its own (tmpfs) --------------------------------------------


@pytest.fixture
def shm_tree() -> Iterator[tuple[Tree, str]]:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (a tmpfs, as the sandbox's root)")
    root = tempfile.mkdtemp(dir="/dev/shm")
    tree = Tree(root)
    tree.set_base([])
    tree.load([("w", DIR, 0o755, EPOCH, None), ("w/f", FILE, 0o644, EPOCH, b"x" * 100)])
    try:
        yield tree, root
    finally:
        tree.views.clear()
        shutil.rmtree(root, ignore_errors=True)


def test_a_file_with_pages_after_its_end_is_written_anew(shm_tree):
    """``fallocate(KEEP_SIZE)`` past the end: the bytes and times as pristine, more
    pages than they fill; the restore writes the file anew (one page again)."""
    tree, root = shm_tree
    path = os.path.join(root, "w", "f")
    time.sleep(0.05)
    tree.restore()
    fd = os.open(path, os.O_WRONLY)
    try:  # FALLOC_FL_KEEP_SIZE: 1 MiB after the end
        if ctypes.CDLL(None).fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(1 << 20)) != 0:
            pytest.skip("no fallocate here")
    finally:
        os.close(fd)
    os.utime(path, ns=(EPOCH, EPOCH))
    assert os.lstat(path).st_size == 100 and os.lstat(path).st_blocks * 512 >= 1 << 20
    assert fsops.more_than(os.lstat(path), 100)
    stats = tree.restore()
    assert stats == {"deleted": 0, "written": 1}
    assert os.lstat(path).st_blocks * 512 == fsops.PAGE


def test_a_flag_on_a_file_or_directory_is_not_kept(shm_tree):
    tree, root = shm_tree
    paths = [os.path.join(root, "w", "f"), os.path.join(root, "w")]
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            flags = struct.unpack("i", fcntl.ioctl(fd, fsops.FS_IOC_GETFLAGS, bytes(8))[:4])[0]
            fcntl.ioctl(fd, fsops.FS_IOC_SETFLAGS, struct.pack("q", flags | 0x80))
        except OSError:
            pytest.skip("this file system keeps no inode flags")
        finally:
            os.close(fd)
    assert [fsops.inode_flags(p, os.path.isdir(p)) for p in paths] == [0x80, 0x80]
    tree.restore()
    assert [fsops.inode_flags(p, os.path.isdir(p)) for p in paths] == [0, 0]


# a file filling the tmpfs that only a unix socket's own queue keeps: no process holds it
# once the holder is killed, but the kernel lets it go only when it next collects sockets
IN_FLIGHT = (
    "import os, socket, time\n"
    "for t, _d, names in os.walk('/testbed'):\n"
    "    for n in names:\n"
    "        p = os.path.join(t, n)\n"
    "        if os.path.isfile(p) and not os.path.islink(p):\n"
    "            os.truncate(p, 0)\n"
    "big = os.open('/tmp/big', os.O_RDWR | os.O_CREAT, 0o600)\n"
    "os.unlink('/tmp/big')\n"
    "for step in (1 << 20, 4096, 1):\n"
    "    try:\n"
    "        while True:\n"
    "            os.write(big, b'x' * step)\n"
    "    except OSError as exc:\n"
    "        error = exc.strerror\n"
    "a, b = socket.socketpair()\n"
    "socket.send_fds(a, [b'x'], [big, b.fileno()])\n"
    "a.close()\n"
    "os.close(big)\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    time.sleep(1000)\n"
    "print(error)\n"
)


def test_a_file_kept_in_flight_on_a_unix_socket_does_not_fill_the_next_episode(env):
    """The reset asks the kernel to collect such sockets before it writes: without it,
    the restore found no room (ENOSPC) at that reset and every later one."""
    _trusting_reset(env)
    box = env._sandbox("agent")
    assert "No space left on device" in box.run(py(IN_FLIGHT)).output
    _assert_reset_clean_and_roomy(env)


EMPTY_DIR_FLAGS = (
    "import fcntl, os, struct\n"
    "d = sorted(os.path.join(t, n) for t, ds, _f in os.walk('/testbed') for n in ds\n"
    "           if not os.listdir(os.path.join(t, n)))[0]\n"
    "fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)\n"
    "if SET:\n"
    "    fcntl.ioctl(fd, 0x40086602, struct.pack('=i', 0x40 | 0x80) + bytes(4))\n"
    "print(d, hex(struct.unpack('=i', fcntl.ioctl(fd, 0x80086601, bytes(8))[:4])[0]))\n"
    "os.close(fd)\n"
    "if SET:\n"
    "    os.chmod(d, 0)\n"
)


def test_flags_on_an_empty_directory_made_unreadable_do_not_outlive_the_episode(env):
    """The restore opens a directory up before it clears its flags (it could not open
    one of mode 000), and so before it writes files there, which would inherit them."""
    env.reset(options={"task": TASK})
    out = env._sandbox("agent").run(py("SET = True\n" + EMPTY_DIR_FLAGS)).output.split()
    if out[-1:] != ["0xc0"]:
        pytest.skip("this file system keeps no inode flags: " + " ".join(out))
    env.reset(options={"task": TASK})
    assert env._sandbox("agent").run(py("SET = False\n" + EMPTY_DIR_FLAGS)).output.split() == [
        out[0], "0x0"]


def test_directory_access_times_do_not_outlive_the_episode(env):
    """A listing (``find``) and ``touch -a`` move directories' access times: the next
    episode's directories have the fresh load's (their modification times), so that
    ``find -atime`` answers as after a fresh load."""
    times = "find /testbed -type d -printf '%p %A@ %T@\\n'"  # (times before each listing)
    for _ in range(2):
        env.reset(options={"task": TASK})
    fresh = env._sandbox("agent").run(times).output.split("\n")
    assert all(line.split()[1] == line.split()[2] for line in fresh if line)
    box = env._sandbox("agent")
    box.run("find /testbed > /dev/null; touch -a -d @1999999999 /testbed/dir3 /testbed")
    assert "1999999999" in box.run("stat -c %X /testbed/dir3").output
    for _ in range(2):  # (the first restore after the change, and one that trusts it)
        env.reset(options={"task": TASK})
        assert env._sandbox("agent").run(times).output.split("\n") == fresh


def test_a_kept_file_with_a_hole_is_written_anew(shm_tree):
    """Punched where the pristine bytes are zeros, with its times put back: it reads as
    pristine, but its room lets a large page (``MADV_COLLAPSE``) of its last part hold
    pages after its end within the file's own block count. Files a restore keeps have
    no hole."""
    tree, root = shm_tree
    path = os.path.join(root, "w", "f")
    tree.load([("w", DIR, 0o755, EPOCH, None),
               ("w/f", FILE, 0o644, EPOCH, b"a" + bytes(3 * fsops.PAGE) + b"z")])
    time.sleep(0.05)
    tree.restore()
    fd = os.open(path, os.O_WRONLY)
    try:  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE over two pages of zeros
        if ctypes.CDLL(None).fallocate(fd, 3, ctypes.c_long(fsops.PAGE),
                                       ctypes.c_long(2 * fsops.PAGE)) != 0:
            pytest.skip("no hole punching here")
    finally:
        os.close(fd)
    os.utime(path, ns=(EPOCH, EPOCH))
    assert not fsops.more_than(os.lstat(path), 3 * fsops.PAGE + 2)
    assert tree.restore() == {"deleted": 0, "written": 1}
    fd = os.open(path, os.O_RDONLY)
    try:
        assert fsops.is_dense(fd, 3 * fsops.PAGE + 2)
    finally:
        os.close(fd)


def test_the_roots_listing_order_and_times_do_not_outlive_the_episode(env):
    """The tree's root ``/`` is in no pristine state: a rename in it (undone), a
    top-level directory made anew, and new times on ``/`` and ``/dev/shm`` stayed into
    every later episode (``find / -maxdepth 1``'s order, ``find / -mtime -1``)."""
    look = ("find / /dev/shm -maxdepth 0 -printf '%p %A@ %T@\\n'; "  # (times before a listing)
            "find / -xdev -maxdepth 1 | tr '\\n' ' '")
    for _ in range(2):
        env.reset(options={"task": TASK})
    fresh = env._sandbox("agent").run(look).output
    moved, remade = "/srv", "/mnt"  # (empty directories of the skeleton)
    if not {moved, remade} <= set(fresh.split("\n")[-1].split()):
        pytest.skip("no /srv and /mnt in this sandbox's root")
    env._sandbox("agent").run(
        f"mv {moved} {moved}.x && mv {moved}.x {moved}; rmdir {remade} && mkdir {remade}; "
        "touch -m -d 2001-01-01 / /dev/shm; touch -a -d 1999-01-01 / /dev/shm")
    assert env._sandbox("agent").run(look).output != fresh
    for _ in range(2):
        env.reset(options={"task": TASK})
        assert env._sandbox("agent").run(look).output == fresh


def test_the_roots_times_are_not_taken_from_the_agent_at_a_load():
    """A load of another tree (a dataset's tasks in other trees; ``upstream_quirks``)
    keeps the roots' times of the sandbox's first load: it took what the agent left on
    ``/`` and ``/dev/shm`` as theirs. An episode after a load also finds the roots'
    access times as after a reset."""
    times = "find / /dev/shm -maxdepth 0 -printf '%p %A@ %T@\\n'"
    env = BashEnv("nl2bash", limits=Limits(timeout=60))
    try:
        env.reset(options={"task": 0})  # a load (fs1)
        first = env._sandbox("agent").run(times).output.split("\n")
        assert all(line.split()[1] == line.split()[2] for line in first if line)
        env._sandbox("agent").run("touch -d 2001-01-01 / /dev/shm")
        env.reset(options={"task": 60})  # a load of another tree (fs2)
        after = env._sandbox("agent").run(times).output
        assert "978307200" not in after
        assert [line for line in after.split("\n") if line] == [line for line in first if line]
    finally:
        env.close()
