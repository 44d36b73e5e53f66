"""Prepared file systems: built in a sandbox, cached, and the same on every rebuild."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from intercode.datasets import fsbuild
from intercode.datasets.fsbuild import build, normalise, prepared_fs, setup_script, shebang
from intercode.errors import DatasetError
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.layout import EPOCH_NS


@pytest.mark.parametrize("name", ["nl2bash-fs1", "nl2bash-fs2", "nl2bash-fs3", "bash-test"])
def test_rebuilding_gives_the_same_bytes(name):
    first, _ = build(setup_script(name))
    second, _ = build(setup_script(name))
    assert first.to_tar() == second.to_tar()


def test_what_the_fs2_script_builds():
    tree, output = build(setup_script("nl2bash-fs2"))
    paths = set(tree.paths())
    assert {"system", "system/folder2/special text3.txt", "system/folder2.tar.gz"} <= paths
    entries = {e.path: e for e in tree.entries}
    assert entries["system/a.out"].mtime_ns == 1_680_393_540 * 10**9  # touch -t 202304012359.00
    assert entries["system/text1.txt"].mtime_ns == EPOCH_NS
    assert "invalid date format" in output  # the script's own bug (touch -t 20230522359.59)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(entries["system/folder2.tar.gz"].payload))) as tar:
        members = tar.getmembers()
    assert {m.mtime for m in members} == {EPOCH_NS // 10**9}
    assert "system/folder2/special text3.txt" in {m.name for m in members}


def test_the_script_runs_with_its_shebang_interpreter():
    assert shebang("#!/bin/bash\necho") == "/bin/bash"
    assert shebang("#!/usr/bin/env python3\n") == "/usr/bin/env"
    assert shebang("echo no shebang") == "/bin/sh"
    tree, _ = build(setup_script("bash-test"))  # #!/bin/sh: dash's echo prints "-e"
    entries = {e.path: e for e in tree.entries}
    assert entries["testbed/dir1/subdir1/jsonfile1.json"].payload.startswith(b"-e {")


def test_fs4_is_empty_and_demo_needs_no_data():
    assert prepared_fs("nl2bash-fs4").tree.entries == ()
    demo = prepared_fs("bash-demo").tree
    assert "project/src/app.py" in demo.paths()


def test_times_set_by_the_script_are_kept_and_the_rest_fixed():
    start = 2_000_000_000 * 10**9
    entries = [Entry("a", DIR, 0o755, start + 5), Entry("a/old", FILE, 0o644, 10**18, b"x"),
               Entry("a/new", FILE, 0o644, start + 7, b"y")]
    out = {e.path: e.mtime_ns for e in normalise(entries, start)}
    assert out == {"a": EPOCH_NS, "a/old": 10**18, "a/new": EPOCH_NS}


def test_cache_is_used_and_a_corrupt_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    prepared_fs.cache_clear()
    try:
        first = prepared_fs("bash-demo")
        archives = list((tmp_path / "fs").glob("bash-demo-*.tar"))
        assert len(archives) == 1
        prepared_fs.cache_clear()
        calls = []
        monkeypatch.setattr(fsbuild, "build", lambda *a, **k: calls.append(1))
        assert prepared_fs("bash-demo").tree == first.tree and calls == []
        archives[0].write_bytes(b"not a tar archive")
        prepared_fs.cache_clear()
        with pytest.raises(DatasetError, match="rebuilt"):
            prepared_fs("bash-demo")
        assert not archives[0].exists()
    finally:
        prepared_fs.cache_clear()


def test_tar_round_trip_keeps_everything():
    tree = FileTree.of([Entry("d", DIR, 0o750, 123_456_789_012_345_678),
                        Entry("d/f", FILE, 0o4755, 5 * 10**18 + 1, b"\x00\xff"),
                        Entry("d/l", "l", 0o777, 10**9, "../target")])
    again = FileTree.from_tar(tree.to_tar())
    assert again == tree and again.id == tree.id
