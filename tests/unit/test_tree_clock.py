"""Restore and diff must not trust (inode, ctime) records taken within one clock tick,
where the file system may keep a ctime through a change in the tick of a look (the
coarse route: a tree that cannot vouch by its records' own looks, see
``test_tree_fresh_ctimes.py`` for the other)."""

from __future__ import annotations

import os

from intercode.sandbox.inbox.tree import FILE, TRUST_NS, Tree

ENTRIES = [("w", "d", 0o755, 10**18, None), ("w/a.txt", FILE, 0o644, 10**18, b"alpha\n")]


def make(tmp_path):
    tree = Tree(str(tmp_path))
    tree.fresh_ctimes = False  # (what a file system stamping from the coarse clock gets)
    tree.set_base([])
    tree.load(ENTRIES)
    return tree


def forge_same_tick(tree, rel):
    """Pretend the kernel kept the ctime and our record was taken in the same tick (the
    coarse clock read for it still showed the time the file was stamped with)."""
    st = os.lstat(tree.abspath(rel))
    tree.clean[rel] = (st.st_ino, st.st_ctime_ns, st.st_ctime_ns)


def test_a_change_in_the_same_tick_is_still_seen(tmp_path):
    tree = make(tmp_path)
    path = tmp_path / "w" / "a.txt"
    path.write_bytes(b"ALPHA\n")
    os.utime(path, ns=(10**18, 10**18))
    forge_same_tick(tree, "w/a.txt")
    assert tree.status([]) == [["w/a.txt", "M"]]
    stats = tree.restore()
    assert stats["written"] == 1 and path.read_bytes() == b"alpha\n"
    assert tree.status([]) == []


def test_an_old_record_is_trusted(tmp_path):
    tree = make(tmp_path)
    st = os.lstat(tree.abspath("w/a.txt"))
    tree.clean["w/a.txt"] = (st.st_ino, st.st_ctime_ns, st.st_ctime_ns + TRUST_NS + 1)
    assert tree._trusted("w/a.txt", st)
    assert tree.restore() == {"deleted": 0, "written": 0}


def test_unchanged_recent_entries_are_verified_not_rewritten(tmp_path):
    tree = make(tmp_path)
    ino = os.lstat(tree.abspath("w/a.txt")).st_ino
    forge_same_tick(tree, "w/a.txt")
    assert tree.restore()["written"] == 0
    assert os.lstat(tree.abspath("w/a.txt")).st_ino == ino


def test_the_trust_margin_covers_four_ticks_of_the_coarse_clock():
    """Files are stamped from the kernel's ticking clock, which moves in whole ticks and
    lags the precise one by up to about two: a record is trusted only once its ctime is
    four ticks old (and never less than 10 ms)."""
    import time

    from intercode.sandbox.inbox.tree import CLOCK_REALTIME_COARSE, trust_ns

    # the wall clock's coarse twin (file times are wall-clock times), not a monotonic one
    assert abs(time.clock_gettime_ns(CLOCK_REALTIME_COARSE) - time.time_ns()) < 10**9
    tick_ns = time.clock_getres(CLOCK_REALTIME_COARSE) * 1e9
    assert trust_ns() == TRUST_NS
    assert max(4 * tick_ns, 10_000_000) <= TRUST_NS <= 50_000_000


def test_the_coarse_clock_lags_the_precise_one_by_less_than_the_margin():
    """Measured: how far behind the precise clock the coarse one reads (a file's ctime
    comes from the coarse one), over a few thousand samples."""
    import time

    from intercode.sandbox.inbox.tree import CLOCK_REALTIME_COARSE

    worst = 0
    for _ in range(5000):
        fine = time.clock_gettime_ns(time.CLOCK_REALTIME)
        coarse = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
        worst = max(worst, fine - coarse)
    assert worst < TRUST_NS


def test_a_change_after_a_look_is_stamped_at_or_after_what_the_look_vouches_from(tmp_path):
    """What a restore's record rests on, measured on this kernel: a file changed after
    ``vouch_ns`` was read gets a ctime at or after it (so never the ctime a trusted
    record holds, which is before it), whether or not its ctime was looked at since its
    last change (kernels that stamp a looked-at file from the precise clock)."""
    from intercode.sandbox.inbox.tree import vouch_ns

    path = tmp_path / "f"
    path.write_bytes(b"0")
    for i in range(3000):
        if i % 2:
            os.lstat(path)
        vouch = vouch_ns()
        with open(path, "wb") as f:
            f.write(b"%d" % i)
        assert os.lstat(path).st_ctime_ns >= vouch
        os.chmod(path, 0o600 | (i % 2) << 6)
        assert os.lstat(path).st_ctime_ns >= vouch


def test_a_restore_trusts_what_was_stamped_before_its_look_and_nothing_newer(tmp_path):
    """The entries a restore wrote or touched are recorded with the time their look
    vouches from: one stamped in an earlier tick is trusted at once, one stamped in the
    tick of the look is compared by content at the next restore."""
    import time

    from intercode.sandbox.inbox.tree import vouch_ns

    tree = make(tmp_path)
    path = tmp_path / "w" / "a.txt"
    path.write_bytes(b"ALPHA\n")  # a change: the restore writes the file back
    before = vouch_ns()
    tree.restore()
    ino, ctime, vouch = tree.clean["w/a.txt"]
    st = os.lstat(path)
    assert (ino, ctime) == (st.st_ino, st.st_ctime_ns) and vouch >= before
    assert tree._trusted("w/a.txt", st) == (ctime < vouch)
    while vouch_ns() <= ctime:  # the next tick
        time.sleep(0.001)
    assert tree.restore() == {"deleted": 0, "written": 0}  # verified, and recorded again
    assert tree._trusted("w/a.txt", os.lstat(path))
