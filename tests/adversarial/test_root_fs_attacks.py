"""The sandbox's root file system (docs/images.md): the default is the pinned minimal root,
so an agent sees neither the host's installed software nor its configuration, and cannot
change the root that later sandboxes (and the gold) mount."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intercode.sandbox import rootfs


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    monkeypatch.delenv("INTERCODE_ROOTFS", raising=False)


def test_the_hosts_software_and_configuration_are_not_visible(sandbox):
    # the host runs bubblewrap and has built the root with mmdebstrap: both are host-only
    host_only = [p for p in ("/usr/bin/bwrap", "/usr/bin/mmdebstrap") if Path(p).exists()]
    assert host_only, "the host should have bwrap (it runs these tests)"
    probe = "; ".join(f"test -e {p} && echo SEEN {p}" for p in host_only)
    out = sandbox.run(f"{probe}; echo done").output
    assert "SEEN" not in out and "done" in out
    root = rootfs.find("base")
    assert root is not None
    # what it lists is the pinned root's /usr/bin, entry for entry
    inside = sandbox.run("ls -A /usr/bin | wc -l").output.strip()
    assert inside == str(len(os.listdir(root.path / "usr/bin")))


def test_the_pinned_root_cannot_be_changed_from_inside(sandbox):
    root = rootfs.find("base")
    assert root is not None
    before = sorted(os.listdir(root.path / "usr/bin"))
    out = sandbox.run("touch /usr/bin/planted; echo a=$?; echo x >> /etc/bash.bashrc; "
                      "echo b=$?; mount -o remount,rw /usr; echo c=$?; "
                      "rm -f /usr/bin/python3; echo d=$?").output
    for mark in ("a=0", "b=0", "c=0", "d=0"):
        assert mark not in out, out
    assert sorted(os.listdir(root.path / "usr/bin")) == before
    assert b"\nx\n" not in (root.path / "etc/bash.bashrc").read_bytes()[-3:]
