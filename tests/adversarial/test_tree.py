"""Attacks on the sandbox's writable tree (diff, hashes, restore) through the Bash env.

An agent runs as the same user as the supervisor that diffs, hashes and restores its
tree, so every mode, link, special file or xattr it leaves binds the supervisor too.
Whatever it does: submit scores the episode (no infrastructure error), nothing blocks,
and the next episode starts from exactly the pristine tree, where the gold scores 1.0.
"""

from __future__ import annotations

import json
import os

import pytest
from mapping_helpers import shared_pages

from intercode.envs.bash import BashEnv
from intercode.sandbox.limits import Limits

OUTPUT_TASK = 0  # gold: md5sum of the .java files (changes nothing)
TOUCH_TASK = 44  # gold: touch /testbed/dir1/abc.txt
LINK_TASK = 57  # gold: ln -s /testbed/dir3/subdir1/subsubdir1/FooBar /  (a link to a dir)

# what a capture does not show: xattrs, and special files (fifos, sockets)
LEFTOVERS = (
    "import os, stat\n"
    "found = []\n"
    "dev = os.lstat('/').st_dev\n"
    "for top, dirs, files in os.walk('/'):\n"
    "    dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == dev]\n"
    "    for name in ['', *dirs, *files]:\n"
    "        p = os.path.join(top, name)\n"
    "        mode = os.lstat(p).st_mode\n"
    "        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):\n"
    "            found.append(p)\n"
    "        elif not stat.S_ISLNK(mode):\n"
    "            found += [(p, x) for x in os.listxattr(p)]\n"
    "print(found)\n"
)
# a POSIX ACL (user::rwx, user:1000:rwx, group::r-x, mask::rwx, other::r-x)
ACL = ("import os, struct\n"
       "acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, i) for t, p, i in "
       "[(1, 7, 2**32 - 1), (2, 7, 1000), (4, 5, 2**32 - 1), (16, 7, 2**32 - 1), "
       "(32, 5, 2**32 - 1)])\n"
       "for name in ('system.posix_acl_access', 'system.posix_acl_default'):\n"
       "    os.setxattr('/testbed/dir1', name, acl)\n")


def py(code: str) -> str:
    """A shell action running ``code`` in the sandbox's python3."""
    return "python3 - <<'EOF'\n" + code + "EOF"


@pytest.fixture(scope="module")
def env():
    environment = BashEnv("nl2bash-fs1", limits=Limits(timeout=20))
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def pristine(env):
    """The agent sandbox's whole tree right after a reset, per task."""
    trees = {}
    for task in (OUTPUT_TASK, TOUCH_TASK, LINK_TASK):
        env.reset(options={"task": task})
        trees[task] = env._sandbox("agent").capture().entries
    return trees


def attack(env, task: int, action: str) -> tuple[float, dict]:
    """Run ``action`` in a fresh episode of ``task`` and submit; return reward and info."""
    env.reset(options={"task": task})
    env.step(action)
    _obs, reward, done, _trunc, info = env.step("submit")
    assert done
    json.dumps(info, ensure_ascii=False).encode("utf-8")  # the runner can record it
    return float(reward), info


def assert_next_episode_clean(env, pristine, task: int) -> None:
    """The next reset restores the exact pristine tree, and the gold scores 1.0."""
    env.reset(options={"task": task})
    box = env._sandbox("agent")
    assert box.capture().entries == pristine[task]
    assert box.diff() == []
    assert box.run(py(LEFTOVERS)).output == "[]\n"
    assert box.run("ls -A /dev/shm; stat -c %a / /dev/shm").output == "755\n755\n"
    _obs, _r, _d, _t, _i = env.step(env.task.gold)
    assert env.step("submit")[1] == 1.0


MODES = {
    "chmod-000-testbed": "chmod 000 /testbed",
    "chmod-000-root": "chmod 000 /",
    "chmod-000-everything": "find /testbed -depth -exec chmod 000 {} +",
    "chmod-000-nested": "chmod 000 /testbed/dir1/subdir1 /testbed/dir1 /testbed/dir2",
    "read-only-dirs-with-changes": "rm /testbed/hello.c; echo x > /testbed/dir1/new; "
                                   "mkdir /testbed/dir2/d; chmod -R a-w /testbed",
    "write-only-dirs": "chmod 200 /testbed/dir1 /testbed/dir2 /testbed",
    "sticky-setgid-setuid": "chmod 1777 /testbed; chmod 2755 /testbed/dir1; "
                            "chmod 4755 /testbed/hello.c; chmod 1000 /testbed/dir2",
    "unreadable-files": "find /testbed -type f -exec chmod 000 {} +",
    "new-locked-dirs": "mkdir -p /testbed/n/a/b && echo x > /testbed/n/a/b/f && "
                       "chmod 000 /testbed/n/a/b /testbed/n/a /testbed/n",
    "locked-tmp-and-home": "mkdir -p /tmp/a/b ~/c && chmod 000 /tmp/a/b /tmp/a ~/c /tmp ~",
    "immutable-append-only": "chattr +i /testbed/hello.c; chattr +a /testbed/dir1; "
                             "chmod 000 /testbed/hello.c",
}
SHAPES = {
    "dir-replaced-by-file": "rm -rf /testbed/dir1 && echo x > /testbed/dir1",
    "file-replaced-by-locked-dir": "rm /testbed/hello.c && mkdir -p /testbed/hello.c/s && "
                                   "echo x > /testbed/hello.c/s/f && "
                                   "chmod 000 /testbed/hello.c/s /testbed/hello.c",
    "dir-to-proc": "rm -rf /testbed/dir1 && ln -s /proc /testbed/dir1",
    "dir-to-dev": "rm -rf /testbed/dir1 && ln -s /dev /testbed/dir1",
    "dir-to-usr": "rm -rf /testbed/dir1 && ln -s /usr /testbed/dir1",
    "dir-to-loop": "rm -rf /testbed/dir1 && ln -s dir1 /testbed/dir1",
    "dir-to-parent": "rm -rf /testbed/dir1 && ln -s / /testbed/dir1",
    "file-to-dev-zero": "rm /testbed/hello.c && ln -s /dev/zero /testbed/hello.c",
    "tracked-file-is-a-fifo": "rm /testbed/hello.c && mkfifo /testbed/hello.c",
    "fifo-and-socket": "mkfifo /testbed/fifo /testbed/dir1/f.txt && python3 -c "
                       "\"import socket; socket.socket(socket.AF_UNIX).bind('/testbed/s')\"",
    "hard-link-to-pristine-modified": "ln /testbed/hello.c /tmp/h && echo pwned >> /tmp/h && "
                                      "ln /testbed/dir1/AnotherHello.java /testbed/x.java",
    "long-names": "touch /testbed/$(printf 'a%.0s' {1..255}) && mkdir /testbed/"
                  "$(printf 'b%.0s' {1..255}) && touch /testbed/b*/$(printf 'c%.0s' {1..255})",
    "deeper-than-path-max": py("import os\nos.chdir('/testbed')\nname = 'd' * 20\n"
                               "for _ in range(600):\n    os.mkdir(name)\n    os.chdir(name)\n"
                               "open('f', 'w').write('x')\n"
                               "for _ in range(600):\n    os.chdir('..')\n"
                               "    os.chmod(name, 0)\n"),
    "deeper-than-recursion": py("import os\nos.chdir('/testbed/dir1')\n"
                                "for _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
                                "open('f', 'w').write('x')\n"),
    "non-utf8-names": "touch /testbed/$'\\xff\\xfe.txt' && mkdir /testbed/$'\\xff' && "
                      "touch /testbed/$'\\xff/\\x80' /testbed/$'new\\nline'",
    "xattrs": py("import os\nfor p in ('/', '/testbed', '/testbed/dir1', '/testbed/hello.c',"
                 " '/tmp', '/dev/shm'):\n    os.setxattr(p, 'user.x', b'1')\n"),
    "acls": py(ACL) + "; touch /testbed/dir1/made-under-default-acl",
    # (the scans list no empty tmpfs directory: its size says it is empty, see tree.py)
    "files-in-empty-dirs": "for d in /srv /opt /mnt /media /boot /run /var/tmp /var/log ~ "
                           "/testbed/dir2; do echo x > $d/f; mkdir $d/e; ln -s / $d/l; "
                           "done 2>/dev/null; mkdir -p /testbed/n && mv ~/f /testbed/n/",
    # every other way to put an entry in an empty directory (each raises its size): a
    # whiteout left by renameat2(RENAME_WHITEOUT) (unprivileged since Linux 5.8), a
    # RENAME_EXCHANGE of a file with an empty directory, RENAME_NOREPLACE, a hard link, a
    # socket, a fifo, a thousand files less all but one
    "renameat2-and-specials-in-empty-dirs": py(
        "import ctypes, os, socket\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def r2(a, b, flags):\n"
        "    return libc.renameat2(-100, a.encode(), -100, b.encode(), flags)\n"
        "open('/srv/f', 'w').close(); r2('/srv/f', '/tmp/w1', 4)\n"
        "os.mkdir('/opt/d'); r2('/opt/d', '/tmp/w2', 4)\n"
        "open('/testbed/x', 'w').close(); r2('/testbed/x', '/mnt', 2)\n"
        "open('/tmp/n', 'w').close(); r2('/tmp/n', '/media/n', 1)\n"
        "os.link('/testbed/hello.c', '/run/h')\n"
        "socket.socket(socket.AF_UNIX).bind('/var/tmp/s')\n"
        "os.mkfifo(os.path.expanduser('~/p'))\n"
        "for i in range(1000):\n    open('/boot/%d' % i, 'w').close()\n"
        "for i in range(999):\n    os.unlink('/boot/%d' % i)\n"),
    "scratch-mount": "mkdir -p /dev/shm/a/b && touch /dev/shm/a/b/c && "
                     "chmod 000 /dev/shm/a/b /dev/shm/a /dev/shm",
    "racing-background-job": "(while :; do rm -rf /testbed/r; mkdir -p /testbed/r/a; "
                             "ln -sfn /proc /testbed/r/a/p; mkfifo /testbed/r/q 2>/dev/null; "
                             "chmod 000 /testbed/r/a; done) >/dev/null 2>&1 &",
}


@pytest.mark.parametrize("action", list({**MODES, **SHAPES}.values()),
                         ids=list({**MODES, **SHAPES}))
def test_tree_attack_is_scored_and_undone(env, pristine, action):
    reward, _info = attack(env, OUTPUT_TASK, action)
    assert reward < 1.0
    assert_next_episode_clean(env, pristine, OUTPUT_TASK)


def test_a_directory_mode_is_not_a_change_but_is_restored(env, pristine):
    # git (as root upstream) read through modes and ignored directory modes
    _reward, info = attack(env, TOUCH_TASK, "touch /testbed/dir1/abc.txt && "
                           "chmod 000 /testbed/dir1/abc.txt /testbed/dir1 /testbed")
    assert info["reward_parts"]["file_diff"] == 0.33
    assert info["reward_parts"]["file_changes"] == 0.33
    assert_next_episode_clean(env, pristine, TOUCH_TASK)


def test_xattrs_do_not_count_in_the_diff(env, pristine):
    env.reset(options={"task": TOUCH_TASK})
    env.step(py("import os\nos.setxattr('/testbed', 'user.x', b'1')\n"))
    env.step(env.task.gold)
    assert env.step("submit")[1] == 1.0
    assert_next_episode_clean(env, pristine, TOUCH_TASK)


@pytest.mark.parametrize("action", [
    "mkfifo /tmp/f && ln -s /tmp/f /testbed/dir1/abc.txt",
    "ln -s /dev/zero /testbed/dir1/abc.txt",
    "ln -s /dev/tty /testbed/dir1/abc.txt",
    "ln -s /proc/self/mem /testbed/dir1/abc.txt",
    "ln -s abc.txt /testbed/dir1/abc.txt",
    "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('/tmp/s')\" && "
    "ln -s /tmp/s /testbed/dir1/abc.txt",
], ids=["fifo", "dev-zero", "dev-tty", "proc-mem", "loop", "socket"])
def test_a_link_to_a_special_file_where_the_gold_makes_a_file(env, pristine, action):
    reward, info = attack(env, TOUCH_TASK, action)
    assert reward < 1.0
    assert info["diff_same"]["correct"] == 0
    assert_next_episode_clean(env, pristine, TOUCH_TASK)


def test_a_link_to_dev_null_hashes_as_an_empty_file(env, pristine):
    # md5sum reads /dev/null as empty, like the empty file the gold creates
    _reward, info = attack(env, TOUCH_TASK, "ln -s /dev/null /testbed/dir1/abc.txt")
    assert info["diff_same"]["correct"] == 1
    assert_next_episode_clean(env, pristine, TOUCH_TASK)


@pytest.mark.parametrize("action", [
    "ln -s / /FooBar", "ln -s /dev /FooBar", "ln -s /proc /FooBar", "ln -s /FooBar /FooBar",
    "mkdir /FooBar && ln -s /dev/zero /FooBar/z && mkfifo /FooBar/p && ln -s / /FooBar/r",
    "mkdir -p /FooBar/a && echo x > /FooBar/a/f && chmod 000 /FooBar/a/f /FooBar/a /FooBar",
], ids=["root", "dev", "proc", "loop", "specials-inside", "locked-inside"])
def test_hashing_a_directory_link_where_the_gold_makes_one(env, pristine, action):
    reward, info = attack(env, LINK_TASK, action)
    assert reward < 1.0
    assert info["diff_same"]["correct"] == 0
    assert_next_episode_clean(env, pristine, LINK_TASK)


def test_fifos_in_both_trees_compare_by_type(tmp_path):
    from intercode.sandbox.inbox.tree import Tree

    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        __import__("os").mkfifo(tmp_path / side / "p.txt")
    a, b = Tree(str(tmp_path / "a")), Tree(str(tmp_path / "b"))
    assert a.hashes(["p.txt"]) == b.hashes(["p.txt"]) == {"p.txt": "(fifo)  p.txt"}


def test_hashing_past_the_budget_matches_nothing(tmp_path, monkeypatch):
    import os

    from intercode.sandbox.inbox import hashing
    from intercode.sandbox.inbox.tree import Tree

    monkeypatch.setattr(hashing, "HASH_BYTES", 1000)
    trees = []
    for side in ("a", "b"):
        (tmp_path / side / "d").mkdir(parents=True)
        (tmp_path / side / "big").write_bytes(b"x" * 600)
        for i in range(3):  # links to one file: read once, counted each time
            os.symlink("../big", tmp_path / side / "d" / f"l{i}")
        trees.append(Tree(str(tmp_path / side)))
    a, b = (t.hashes(["d/"])["d/"] for t in trees)
    assert a != b and "not hashed" in a


ORDER_TASK = 12  # gold: find /testbed -type f -mtime +7 | tee compressedP.list | ...
LISTING = "ls -f /testbed /testbed/dir1 / | tr '\\n' ' '"


@pytest.mark.parametrize("earlier", [
    "rm /testbed/hello.php",  # restored: it came first in every later listing
    "mv /testbed/hello.c /testbed/x; mv /testbed/x /testbed/hello.c; "
    "touch -d @1685577600 /testbed",  # a rename undone, the directory's time put back
    "touch /testbed/new; rm -r /testbed/dir1; mkdir /testbed/dir1",
    "rm -r /testbed /var",
])
def test_an_earlier_episode_does_not_change_listing_order_or_the_score(earlier):
    """Directory listings (``find``, ``ls -f``) are in creation order, and a reset restored
    only what changed: a file an earlier episode deleted came first in the next episode's
    ``find``, so the gold of fs1#12 (a ``find`` listing written to a file) scored 0.67, its
    list no longer the gold sandbox's. The order must be the fresh tree's."""
    fresh = BashEnv("nl2bash-fs1")
    worn = BashEnv("nl2bash-fs1")
    try:
        fresh.reset(options={"task": ORDER_TASK})
        expected, *_ = fresh.step(LISTING)
        worn.reset(options={"task": ORDER_TASK})
        worn.step(earlier)
        worn.evaluate()
        worn.reset(options={"task": ORDER_TASK})
        listing, *_ = worn.step(LISTING)
        assert listing == expected
        worn.reset(options={"task": ORDER_TASK})
        worn.step(earlier)
        worn.reset(options={"task": ORDER_TASK})
        worn.step(worn.task.gold)
        assert worn.evaluate().reward == 1.0
    finally:
        fresh.close()
        worn.close()


@pytest.mark.parametrize("line, tmpfs", [
    # a mount point whose name holds " - tmpfs ": the kernel escapes its spaces (\040)
    ("70 62 0:99 / /a\\040-\\040tmpfs\\040b rw,nosuid shared:1 - ext4 /dev/vda rw\n", False),
    # a root (a bind of a directory) with " - tmpfs " in its name, and optional fields
    ("70 62 0:99 /x\\040-\\040tmpfs /mnt rw master:2 shared:3 - xfs /dev/vdb rw\n", False),
    # a tmpfs whose source is named like another type
    ("70 62 0:99 / /m rw - tmpfs ext4 rw,size=4k\n", True),
])
def test_the_tmpfs_check_reads_the_file_system_type_not_a_path(monkeypatch, line, tmpfs):
    """Scans skip directories of size 40 only on a tmpfs (``on_tmpfs``), read from
    ``/proc/self/mountinfo``: no mount point, root or source name can pass for the
    separator (`` - ``) or the type (the agent cannot mount, but the parser must hold)."""
    import io

    from intercode.sandbox.inbox import tree

    other = "1 0 0:98 / / rw - tmpfs tmpfs rw\n"
    monkeypatch.setattr(tree, "open", lambda *a, **k: io.StringIO(other + line),
                        raising=False)
    assert tree.on_tmpfs(os.makedev(0, 99)) is tmpfs
    assert tree.on_tmpfs(os.makedev(0, 98)) is True
    assert tree.on_tmpfs(os.makedev(0, 97)) is False


ATIME_TASK = 12  # nl2bash-fs3: find /workspace -atime +1 -type f -exec mv {} / \;


def test_an_earlier_episodes_reads_do_not_change_access_times_or_the_score():
    """A read moves a file's access time, and a reset restored only what changed: files
    an earlier episode read (or the reward hashed) were "accessed today" in every later
    episode, so ``find -atime +1`` left them out and the gold of fs3#12 scored 0.67 after
    an episode that read ``old2.txt``. Every episode must start with the fresh tree's
    access times."""
    env = BashEnv("nl2bash-fs3")
    try:
        env.reset(options={"task": ATIME_TASK})
        expected, *_ = env.step("find /workspace -type f -atime +1 | sort")
        env.step("find /workspace -type f -exec cat {} + > /dev/null")
        env.step("echo x > /workspace/new.txt")
        env.evaluate()  # the reward hashes both sides' files
        env.reset(options={"task": ATIME_TASK})
        listing, *_ = env.step("find /workspace -type f -atime +1 | sort")
        assert listing == expected and listing.count("\n") > 20
        env.step("find /workspace -type f -exec cat {} + > /dev/null")
        env.reset(options={"task": ATIME_TASK})
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
    finally:
        env.close()


MTIME_TASK = 32  # nl2bash-fs2: find /system -type f -mtime +31 -exec rm -f {} \;


def test_an_earlier_episodes_changes_do_not_date_a_later_episodes_files():
    """--upstream-quirks keeps upstream's long-lived containers: a file an episode's
    agent changed or deleted is written anew (dated at the reset) in the next episode of
    the same environment. That history must never reach the default mode, a fresh
    environment, nor the gold's side: an agent that deletes or rewrites the old files
    cannot make them young for a later episode and so change its score."""
    old = "find /system -type f -mtime +31 | sort"
    spoil = ("find /system -type f -mtime +31 -delete; touch -d '1 hour ago' /system/*.txt; "
             "rm -rf /system/folder1")
    for quirks in (False, True):
        env = BashEnv("nl2bash-fs2", upstream_quirks=quirks, gold_cache=False)
        try:
            env.reset(options={"task": MTIME_TASK})
            expected, *_ = env.step(old)
            assert expected.count("\n") >= 3
            env.step(spoil)
            env.evaluate()
            env.reset(options={"task": MTIME_TASK})
            listing, *_ = env.step(old)
            if quirks:  # upstream's reset wrote them anew: young in the agent's container
                assert listing == ""
            else:
                assert listing == expected
            env.step(env.task.gold)  # (quirks: the gold's container deleted them before too)
            assert env.evaluate().reward == 1.0
        finally:
            env.close()
        fresh = BashEnv("nl2bash-fs2", upstream_quirks=quirks, gold_cache=False)
        try:
            fresh.reset(options={"task": MTIME_TASK})
            assert fresh.step(old)[0] == expected
            fresh.step(fresh.task.gold)
            assert fresh.evaluate().reward == 1.0
        finally:
            fresh.close()



def test_a_pooled_quirks_environment_carries_no_history_to_the_next_borrower():
    """A server session (or an Inspect sample) borrows a warm environment from a pool:
    the history --upstream-quirks keeps (file times of upstream's long-lived containers)
    must not reach the next borrower, who would otherwise find the old files young."""
    from intercode.envs.pool import WarmPool
    from intercode.envs.settings import EnvSettings

    old = "find /system -type f -mtime +31 | sort"
    key = ("bash", "nl2bash-fs2", EnvSettings(upstream_quirks=True))
    pool = WarmPool()
    try:
        env = pool.borrow(key)
        env.reset(options={"task": MTIME_TASK})
        expected, *_ = env.step(old)
        env.step("find /system -type f -mtime +31 -delete")
        env.evaluate()
        pool.give_back(key, env)
        again = pool.borrow(key)
        assert again is env
        again.reset(options={"task": MTIME_TASK})
        assert again.step(old)[0] == expected and expected.count("\n") >= 3
        again.step(again.task.gold)
        assert again.evaluate().reward == 1.0
        pool.give_back(key, again)
    finally:
        pool.close()


GOLD_32 = r"find /system -type f -mtime +31 -exec rm -f {} \;"


def test_extra_scorings_do_not_move_the_golds_history_in_quirks_mode():
    """Upstream scored once a turn, after the turn's action, and each scoring re-ran the
    gold on a reset container (so a time-dependent gold changes from one turn to the
    next). A scoring the agent asks for at turn 0, or a second one in a turn (an
    ``evaluate`` tool, the baseline reward), must not count as one of upstream's: it
    would let the agent choose what the gold does."""
    def solved(first: str | None, repeat: int) -> float:
        with BashEnv("nl2bash-fs2", upstream_quirks=True, gold_cache=False) as env:
            env.reset(options={"task": MTIME_TASK})
            for _ in range(repeat if first == "evaluate" else 0):
                env.evaluate()
            env.step(GOLD_32)
            for _ in range(repeat if first == "after" else 1):
                result = env.evaluate()
            return float(result.reward)

    assert solved(None, 1) == 1.0
    assert solved("evaluate", 3) == 1.0  # scorings at turn 0 do not count
    assert solved("after", 3) == 1.0  # nor a second or third in the same turn
    with BashEnv("nl2bash-fs2", upstream_quirks=True, gold_cache=False) as env:
        env.reset(options={"task": MTIME_TASK})
        env.evaluate()
        assert env.step("submit")[1] < 0.5  # doing nothing is not paid by a free scoring


def test_a_snapshot_brings_back_the_golds_history_in_quirks_mode():
    with BashEnv("nl2bash-fs2", upstream_quirks=True, gold_cache=False) as env:
        env.reset(options={"task": MTIME_TASK})
        snap = env.snapshot()
        env.step("true")
        env.evaluate()  # a counted scoring: the gold deleted the old files
        env.step("true")
        env.evaluate()  # the next one found them written anew
        env.restore(snap)
        env.step(GOLD_32)
        assert env.evaluate().reward == 1.0  # as in a fresh environment


def test_a_quirks_baseline_is_not_a_scoring_nor_kept_across_borrowers():
    from intercode.envs.pool import WarmPool
    from intercode.envs.settings import EnvSettings

    key = ("bash", "nl2bash-fs2",
           EnvSettings(upstream_quirks=True, gold_cache=False, reward="baseline"))
    pool = WarmPool(scrub=True)
    try:
        rewards = []
        for _ in range(2):
            env = pool.borrow(key)
            env.reset(options={"task": MTIME_TASK})
            env.step(GOLD_32)
            rewards.append(env.step("submit")[1])
            pool.give_back(key, env)
        assert rewards == [1.0, 1.0]
    finally:
        pool.close()


# A write through a shared mapping of a tmpfs file whose page a read faulted in first:
# tmpfs asks for no notice of a page's first write, so the page is mapped writable at
# once and the write moves no time of the file (neither its ctime nor its mtime).
MAPPED_WRITE = (
    "import mmap, os\n"
    "fd = os.open('/testbed/hello.c', os.O_RDWR | os.O_NOATIME)\n"
    "m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)\n"
    "m[0]\n"
    "m[0:5] = b'OWNED'\n"
    "m.close()\n"
    "os.close(fd)\n"
)


def trusted_episode(env):
    """An episode of the output task whose reset trusts its record of ``hello.c`` (taken
    past the trust margin); its agent sandbox."""
    import time

    env.reset(options={"task": OUTPUT_TASK})
    time.sleep(0.05)
    env.reset(options={"task": OUTPUT_TASK})
    return env._sandbox("agent")


def test_a_write_through_a_shared_mapping_does_not_outlive_the_episode(env, pristine):
    """The file keeps the ctime the last restore recorded, so a restore that trusted its
    record kept the agent's bytes into every later episode: the restore reads the bytes
    of every file that such a mapping could have written."""
    box = trusted_episode(env)
    before = box.run("stat -c %Z.%z /testbed/hello.c").output
    assert box.run(py(MAPPED_WRITE)).exit_code == 0
    assert box.run("head -c 5 /testbed/hello.c").output == "OWNED"
    if box.run("stat -c %Z.%z /testbed/hello.c").output != before:
        pytest.skip("this kernel moves the ctime of a file written through a mapping")
    env.step("submit")
    assert_next_episode_clean(env, pristine, OUTPUT_TASK)


def test_a_restore_reads_the_bytes_of_a_trusted_file():
    """The same on a tree of its own (tmpfs, as the sandbox's): a file written through a
    mapping after a read fault, trusted by the restore's record, is written back."""
    import shutil
    import time

    from intercode.sandbox.inbox.tree import FILE

    tree, root = _shm_tree([("w", "d", 0o755, 10**18, None),
                            ("w/a.txt", FILE, 0o644, 10**18, b"alpha\n"),
                            ("w/ro.txt", FILE, 0o444, 10**18, b"read-only\n"),
                            ("w/empty", FILE, 0o644, 10**18, b"")])
    try:
        path = os.path.join(root, "w", "a.txt")
        time.sleep(0.05)  # past the trust margin: the restore's records are trusted
        assert tree.restore() == {"deleted": 0, "written": 0}
        assert tree._trusted("w/a.txt", os.lstat(path))
        ctime = os.lstat(path).st_ctime_ns
        _shared_page(path)[0:6] = b"OWNED\n"
        if os.lstat(path).st_ctime_ns != ctime:
            pytest.skip("this file system moves the ctime of a file written through a mapping")
        assert tree._trusted("w/a.txt", os.lstat(path))  # what the record alone says
        assert tree.restore() == {"deleted": 0, "written": 1}
        with open(path, "rb") as f:
            assert f.read() == b"alpha\n"
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Bytes written through a shared mapping after the end of a file, in the page that holds
# its end: no fault comes before the page's end, ``read`` never shows them, and on tmpfs
# they stay (growing the file makes them its content). Python's mmap will not map past
# the end of a file: ctypes does.
PAST_THE_END = (
    "import ctypes, mmap, os\n"
    "libc = ctypes.CDLL(None)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,\n"
    "                      ctypes.c_int, ctypes.c_long]\n"
    "fd = os.open('/testbed/hello.c', os.O_RDWR | os.O_NOATIME)\n"
    "size = os.fstat(fd).st_size\n"
    "addr = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)\n"
    "page = (ctypes.c_char * 4096).from_address(addr)\n"
    "page[0]\n"
    "page[size + 1:size + 8] = b'STASHED'\n"
)
# ... and what the page holds after the end, read through a mapping (which moves nothing)
PEEK = (
    "import ctypes, mmap, os\n"
    "libc = ctypes.CDLL(None)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,\n"
    "                      ctypes.c_int, ctypes.c_long]\n"
    "fd = os.open('/testbed/hello.c', os.O_RDONLY | os.O_NOATIME)\n"
    "size = os.fstat(fd).st_size\n"
    "addr = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)\n"
    "print(ctypes.string_at(addr + size, 4096 - size).strip(bytes(1)))\n"
)


def test_bytes_past_the_end_of_a_file_do_not_outlive_the_episode(env, pristine):
    """The next episode's copy of the file has nothing after its end, however it looks
    (growing the file, as ``truncate`` does, shows the page's rest)."""
    box = trusted_episode(env)
    before = box.run("stat -c %Y.%Z /testbed/hello.c").output
    assert box.run(py(PAST_THE_END)).exit_code == 0
    assert box.run(py(PEEK)).output == "b'STASHED'\n"
    assert box.run("stat -c %Y.%Z /testbed/hello.c").output == before
    env.step("submit")
    env.reset(options={"task": OUTPUT_TASK})
    assert box.run(py(PEEK)).output == "b''\n"
    assert "STASHED" not in box.run("truncate -s 4096 /testbed/hello.c; cat /testbed/hello.c"
                                    ).output
    env.step("submit")
    assert_next_episode_clean(env, pristine, OUTPUT_TASK)


def test_a_restore_writes_anew_a_file_with_bytes_past_its_end():
    """On a tree of its own (tmpfs): the file reads as pristine, its inode and times are
    the recorded ones, yet its last page holds bytes after its end; the restore writes
    it anew, trusted or not."""
    import shutil
    import time

    from intercode.sandbox.inbox import fsops
    from intercode.sandbox.inbox.tree import FILE

    tree, root = _shm_tree([("w", "d", 0o755, 10**18, None),
                            ("w/a.txt", FILE, 0o644, 10**18, b"alpha\n")])
    try:
        path = os.path.join(root, "w", "a.txt")
        for trusted in (True, False):
            time.sleep(0.05)  # past the trust margin: the restore's records are trusted
            tree.restore()
            ino = os.lstat(path).st_ino
            if not trusted:  # the mode changed and back: the ctime moved
                os.chmod(path, 0o600)
                os.chmod(path, 0o644)
            _shared_page(path)[7:14] = b"STASHED"
            fd = os.open(path, os.O_RDONLY)
            try:
                assert not fsops.tail_is_clear(fd, 6)
            finally:
                os.close(fd)
            with open(path, "rb") as f:
                assert f.read() == b"alpha\n"
            assert tree._trusted("w/a.txt", os.lstat(path)) == trusted
            assert tree.restore()["written"] == 1
            assert os.lstat(path).st_ino != ino
            fd = os.open(path, os.O_RDONLY)
            try:
                assert fsops.tail_is_clear(fd, 6)
            finally:
                os.close(fd)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _shm_tree(entries):
    """A Tree of its own on /dev/shm (a tmpfs, as the sandbox's root), loaded with
    ``entries``, and its root."""
    import tempfile

    from intercode.sandbox.inbox.tree import Tree

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (a tmpfs) to make the tree in")
    root = tempfile.mkdtemp(dir="/dev/shm")
    tree = Tree(root)
    tree.set_base([])
    tree.load(entries)
    return tree, root


def _shared_page(path):
    """A page of ``path`` mapped shared and writable, read once (so writes set no time)."""
    return shared_pages(path)


def test_a_mapping_older_than_a_mode_and_a_restore_still_cannot_keep_its_bytes():
    """A read-only file mapped shared while its mode allowed it, the mode put back, a
    held interpreter's copy of the mapping kept through restores to a snapshot: its
    writes set no time, and the next reset still reads the file (its mode excuses
    nothing)."""
    import shutil
    import time

    from intercode.sandbox.inbox.tree import FILE

    tree, root = _shm_tree([("w", "d", 0o755, 10**18, None),
                            ("w/ro.txt", FILE, 0o444, 10**18, b"read-only\n")])
    try:
        path = os.path.join(root, "w", "ro.txt")
        time.sleep(0.05)
        tree.restore()
        os.chmod(path, 0o644)
        page = _shared_page(path)
        os.chmod(path, 0o444)
        time.sleep(0.05)
        state, reads = tree.snapshot()
        for _ in range(2):
            time.sleep(0.05)
            tree.restore_to(state, reads)
        assert tree._trusted("w/ro.txt", os.lstat(path))
        page[0:5] = b"OWNED"
        assert tree.restore()["written"] == 1
        with open(path, "rb") as f:
            assert f.read() == b"read-only\n"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("how", ["past-the-end", "in-place"])
def test_a_file_written_anew_keeps_its_place_in_the_listing(how):
    """A file a restore writes anew is a new inode, listed last (or first) by tmpfs: its
    directory gets the listing order of a fresh load back, whether the file held bytes
    past its end or was changed in place."""
    import shutil
    import time

    from intercode.sandbox.inbox.tree import FILE

    tree, root = _shm_tree([("w", "d", 0o755, 10**18, None)]
                           + [(f"w/{n}", FILE, 0o644, 10**18, b"x\n") for n in "abcd"])
    try:
        fresh = os.listdir(os.path.join(root, "w"))
        time.sleep(0.05)
        tree.restore()
        time.sleep(0.05)
        path = os.path.join(root, "w", "b")
        if how == "past-the-end":
            _shared_page(path)[5:8] = b"XYZ"
        else:
            with open(path, "r+b") as f:
                f.write(b"y")
        time.sleep(0.05)
        assert tree.restore()["written"] == 1
        assert os.listdir(os.path.join(root, "w")) == fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_hole_in_the_last_page_is_not_faulted_in():
    """Looking at the rest of a file's last page never touches a hole there: on tmpfs
    its fault allocates a page, and on a full one that is a SIGBUS in the supervisor."""
    import shutil
    import tempfile

    from intercode.sandbox.inbox import fsops

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm (a tmpfs)")
    root = tempfile.mkdtemp(dir="/dev/shm")
    try:
        path = os.path.join(root, "holey")
        with open(path, "wb") as f:
            f.truncate(fsops.PAGE + 100)  # no data at all
        fd = os.open(path, os.O_RDONLY)
        try:
            assert fsops.tail_is_clear(fd, fsops.PAGE + 100)
            assert os.stat(path).st_blocks == 0  # still a hole: no page was allocated
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(root, ignore_errors=True)
