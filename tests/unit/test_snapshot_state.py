"""Snapshot pieces that run without a sandbox: the tree's states, the shell state's filter."""

from __future__ import annotations

import os

from intercode.envs.sandbox_state import replay_script
from intercode.sandbox.inbox.tree import FILE, TRUST_NS, Tree

ENTRIES = [("w", "d", 0o755, 10**18, None), ("w/a.txt", FILE, 0o644, 10**18, b"alpha\n"),
           ("w/keep", FILE, 0o644, 10**18, b"kept\n")]


def make(tmp_path):
    tree = Tree(str(tmp_path))
    tree.set_base([])
    tree.load(ENTRIES)
    return tree


def files(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _dirs, names in os.walk(root) for f in names}


def test_a_tree_snapshot_restores_exactly_and_leaves_the_pristine_state(tmp_path):
    tree = make(tmp_path)
    (tmp_path / "w" / "a.txt").write_bytes(b"changed\n")
    (tmp_path / "w" / "new").mkdir()
    (tmp_path / "w" / "new" / "b").write_bytes(b"b\n")
    os.chmod(tmp_path / "w" / "a.txt", 0o600)
    snap, _reads = tree.snapshot()
    assert snap["w/keep"] is tree.pristine["w/keep"]  # unchanged: shares the pristine value
    then = files(tmp_path)
    (tmp_path / "w" / "a.txt").write_bytes(b"later\n")
    (tmp_path / "w" / "new" / "b").unlink()
    (tmp_path / "w" / "c").write_bytes(b"c\n")
    for _ in range(3):  # a snapshot survives restores
        tree.restore_to(snap)
        assert files(tmp_path) == then
        assert os.stat(tmp_path / "w" / "a.txt").st_mode & 0o777 == 0o600
        assert tree.status([]) == [["w/a.txt", "M"], ["w/new/", "??"]]
    tree.restore()  # the pristine state is still the task's
    assert files(tmp_path) == {"w/a.txt": b"alpha\n", "w/keep": b"kept\n"}
    assert tree.status([]) == []


def old_enough(reads):
    """``reads`` with every record dated well after its change (trusted, not compared)."""
    return {rel: (ino, ctime, ctime + TRUST_NS + 1, value)
            for rel, (ino, ctime, _when, value) in reads.items()}


def test_a_restore_leaves_the_files_its_snapshot_read_alone_while_unchanged(tmp_path):
    tree = make(tmp_path)
    (tmp_path / "w" / "a.txt").write_bytes(b"changed\n")
    (tmp_path / "w" / "b").write_bytes(b"b\n")
    snap, reads = tree.snapshot()
    reads = old_enough(reads)
    then = files(tmp_path)
    for _ in range(2):
        stats = tree.restore_to(snap, reads)
        assert files(tmp_path) == then
        assert stats["written"] == 0  # vouched for by the snapshot's reads: not rewritten
    # changed in place after the snapshot (same inode, new ctime): restored all the same
    with open(tmp_path / "w" / "b", "r+b") as fh:
        fh.write(b"X")
    os.chmod(tmp_path / "w" / "a.txt", 0o600)
    assert tree.restore_to(snap, reads)["written"] == 2
    assert files(tmp_path) == then
    assert os.stat(tmp_path / "w" / "a.txt").st_mode & 0o777 == 0o644
    tree.restore()  # and the pristine state is still the task's
    assert files(tmp_path) == {"w/a.txt": b"alpha\n", "w/keep": b"kept\n"}


def test_a_file_unchanged_since_the_last_snapshot_is_shared_not_copied(tmp_path):
    tree = make(tmp_path)
    (tmp_path / "w" / "big").write_bytes(b"x" * 100_000)
    first, reads = tree.snapshot()
    ino, ctime, _when, value = reads["w/big"]
    reads["w/big"] = (ino, ctime, ctime + TRUST_NS + 1, value)  # an old enough record
    (tmp_path / "w" / "a.txt").write_bytes(b"other\n")
    second, _ = tree.snapshot(reads)
    assert second["w/big"] is first["w/big"]
    assert second["w/a.txt"][3] == b"other\n"
    (tmp_path / "w" / "big").write_bytes(b"y")  # changed: read again
    third, _ = tree.snapshot(reads)
    assert third["w/big"][3] == b"y"


def test_the_shell_state_keeps_the_agents_variables_and_drops_bashs_own():
    marker = "M1"
    captured = "\n".join([
        "declare -- X=\"5\"", "declare -ar BASH_VERSINFO=([0]=\"5\")", "declare -- __ic_seq=\"9\"",
        "declare -x HOME=\"/root\"", "declare -ir PPID=\"1\"", "declare -a arr=([0]=$'a\\nb')",
        "", marker, "shopt -u autocd", "shopt -s extglob", "umask 0027", "alias q='echo q'",
        "f () ", "{ ", "    echo fn", "}", "set +o allexport", "set -o noglob", ""])
    script = replay_script(captured, marker)
    assert script is not None
    lines = script.splitlines()
    assert "declare -- X=\"5\"" in lines and "declare -x HOME=\"/root\"" in lines
    assert "declare -a arr=([0]=$'a\\nb')" in lines
    assert not any("__ic_seq" in line or "PPID" in line or "BASH_VERSINFO" in line
                   for line in lines)
    assert "shopt -u autocd" in lines and "shopt -s extglob" in lines
    assert lines[-2:] == ["set +o allexport", "set -o noglob"]  # last: errexit cannot stop it
    assert "alias q='echo q'" in lines and "    echo fn" in lines


def test_a_capture_without_its_marker_is_refused():
    assert replay_script("declare -- X=\"5\"\n", "M1") is None
