"""The pinned root file system's bookkeeping (intercode.sandbox.rootfs): package lists,
identity, manifest, cache lookup, the build lock, and one-line errors.

The builder here is a stand-in ``mmdebstrap`` on PATH that writes a tiny root (a dpkg
status file, /usr, /etc) and counts its runs; the real builder is exercised by
tests/integration/test_pinned_rootfs.py."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from intercode.errors import ConfigError, SandboxUnavailableError
from intercode.sandbox import rootfs

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
STATUS = """Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2+b7

Package: gone
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: python3
Status: install ok installed
Architecture: amd64
Version: {python}
Description: multi
 line: not a field
"""
FAKE = """#!/bin/sh
# a stand-in mmdebstrap: the last argument but the mirror is the target
echo run >> "$FAKE_COUNT"
sleep "${FAKE_SLEEP:-0}"
if [ -n "$FAKE_FAIL" ]; then echo "$FAKE_FAIL" >&2; exit 1; fi
for last; do :; done
mkdir -p "$last/usr/bin" "$last/etc" "$last/var/lib/dpkg"
cp "$FAKE_STATUS" "$last/var/lib/dpkg/status"
"""


@pytest.fixture()
def fake(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "mmdebstrap"
    script.write_text(FAKE)
    script.chmod(0o755)
    status = tmp_path / "status"
    status.write_text(STATUS.format(python="3.11.2-1+b1"))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_COUNT", str(tmp_path / "count"))
    monkeypatch.setenv("FAKE_STATUS", str(status))
    # where nobody (the sandbox's user when the host is root) can reach it, as /var/cache
    cache = Path(tempfile.mkdtemp(prefix="intercode-test-rootfs-"))
    os.chmod(cache, 0o755)
    monkeypatch.setenv("INTERCODE_ROOTFS_CACHE", str(cache / "cache"))
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    monkeypatch.delenv("INTERCODE_ROOTFS", raising=False)
    yield tmp_path
    shutil.rmtree(cache, ignore_errors=True)


def runs(tmp: Path) -> int:
    path = tmp / "count"
    return len(path.read_text().split()) if path.exists() else 0


def _lines(name: str) -> set[str]:
    return set((SCRIPTS / name).read_text().split())


def test_profiles_are_the_setup_lists_without_host_tools():
    assert set(rootfs.BASE_PACKAGES) == _lines("debian-packages.txt") - rootfs.HOST_ONLY
    assert set(rootfs.PROFILES["ctf"]) == (
        _lines("debian-packages.txt") | _lines("debian-ctf-packages.txt")) - rootfs.HOST_ONLY


def test_benchmarks_know_the_same_profiles():
    from intercode.benchmarks.spec import SANDBOX_PROFILES

    assert set(SANDBOX_PROFILES) == set(rootfs.PROFILES)


def test_package_lists_are_sorted_unions_and_checked():
    assert rootfs.packages("base", ["nodejs", "bash"]) == tuple(
        sorted({*rootfs.BASE_PACKAGES, "nodejs"}))
    with pytest.raises(ConfigError, match="unknown root file system profile 'huge'"):
        rootfs.packages("huge")
    for bad in ("Foo", "a;rm -rf /", "--mode=root", "", "x" * 200, "a b"):
        with pytest.raises(ConfigError, match="not a Debian package name"):
            rootfs.packages("base", [bad])


def test_a_benchmark_declaring_a_bad_package_is_refused():
    from intercode.benchmarks import Benchmark, Parsing, Prompting

    with pytest.raises(ConfigError, match="not a Debian package name"):
        Benchmark(name="x", env="m:C", datasets={"d": "m:f"}, default_dataset="d",
                  parsing=Parsing(), prompting=Prompting(language="x", setting="y"),
                  sandbox_packages=("bad name",))


def test_installed_versions_read_only_installed_packages(tmp_path):
    (tmp_path / "var/lib/dpkg").mkdir(parents=True)
    (tmp_path / "var/lib/dpkg/status").write_text(STATUS.format(python="3.11.2-1"))
    assert rootfs.installed_versions(tmp_path) == {"bash:amd64": "5.2.15-2+b7",
                                                   "python3:amd64": "3.11.2-1"}


def test_identity_depends_on_the_request_and_every_version():
    names = rootfs.packages("base")
    one = rootfs.identity(names, {"bash:amd64": "1"})
    assert one == rootfs.identity(names, {"bash:amd64": "1"})
    assert one != rootfs.identity(names, {"bash:amd64": "2"})
    assert one != rootfs.identity(rootfs.packages("base", ["nodejs"]), {"bash:amd64": "1"})


def test_build_writes_a_manifest_and_is_found_afterwards(fake):
    built = rootfs.build("base", ["nodejs"])
    assert runs(fake) == 1
    manifest = json.loads((built.path.parent / "manifest.json").read_text())
    assert manifest["identity"] == built.identity == built.path.parent.name
    assert manifest["versions"] == {"bash:amd64": "5.2.15-2+b7", "python3:amd64": "3.11.2-1+b1"}
    assert manifest["extra"] == ["nodejs"] and manifest["profile"] == "base"
    assert "nodejs" in manifest["requested"]
    assert rootfs.find("base", ["nodejs"]) == built
    assert rootfs.find("base") is None  # another request
    assert rootfs.build("base", ["nodejs"]) == built and runs(fake) == 1  # cached
    assert rootfs.built() == [built]
    # the sandbox's user (nobody, when the host is root) must reach it
    assert stat.S_IMODE(built.path.parent.stat().st_mode) == 0o755
    assert rootfs.describe(built.path) == {
        "kind": "pinned", "path": str(built.path), "identity": built.identity,
        "profile": "base", "extra": ["nodejs"], "suite": rootfs.SUITE}


def test_new_versions_make_a_new_identity_only_on_rebuild(fake):
    first = rootfs.build("base")
    (fake / "status").write_text(STATUS.format(python="3.11.9-1"))
    assert rootfs.build("base") == first  # pinned: never rebuilt behind the user's back
    second = rootfs.build("base", rebuild=True)
    assert second.identity != first.identity and runs(fake) == 2
    assert rootfs.find("base") == second
    assert first.path.is_dir()  # the old root stays (a run may be using it)


def test_a_damaged_manifest_or_pointer_is_not_a_root(fake):
    built = rootfs.build("base")
    manifest = built.path.parent / "manifest.json"
    manifest.write_text(json.dumps({**built.manifest, "identity": "0" * 64}))
    assert rootfs.find("base") is None
    manifest.write_text("{not json")
    assert rootfs.find("base") is None
    pointer = next((rootfs.cache_root() / "requests").iterdir())
    pointer.write_text(json.dumps({"identity": "../../etc"}))
    assert rootfs.find("base") is None
    assert rootfs.build("base").identity == built.identity and runs(fake) == 2


def _build_in_child(queue):
    queue.put(rootfs.build("base").identity)


def test_concurrent_builds_build_once(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SLEEP", "1")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    children = [ctx.Process(target=_build_in_child, args=(queue,)) for _ in range(3)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    identities = {queue.get(timeout=5) for _ in children}
    assert len(identities) == 1 and runs(fake) == 1


def test_a_crashed_build_leaves_nothing_that_looks_built(fake, monkeypatch):
    stale = rootfs.cache_root() / "building-crashed"
    (stale / "root/usr").mkdir(parents=True)
    monkeypatch.setenv("FAKE_FAIL", "E: Unable to locate package nosuchpkg")
    with pytest.raises(SandboxUnavailableError) as err:
        rootfs.build("base", ["nosuchpkg"])
    message = str(err.value)
    assert "\n" not in message
    assert f"unknown Debian package(s) in {rootfs.SUITE}: nosuchpkg" in message
    assert not list(rootfs.cache_root().glob("building-*"))  # its own and the stale one
    assert rootfs.find("base", ["nosuchpkg"]) is None


def test_mmdebstrap_missing_is_one_line_saying_how_to_install(fake, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailableError) as err:
        rootfs.build("base")
    assert "\n" not in str(err.value)
    assert "apt-get install mmdebstrap" in str(err.value)
    assert "INTERCODE_ROOTFS=host" in str(err.value)


@pytest.mark.parametrize(("output", "expected"), [
    ("W: x\nE: Unable to locate package frob\n", "unknown Debian package(s) in bookworm: frob"),
    ("E: Package 'frob' has no installation candidate", "unknown Debian package(s)"),
    ("Err:1 http://deb.debian.org bookworm InRelease\n  Temporary failure resolving "
     "'deb.debian.org'\nE: apt-get update failed", "cannot reach the Debian mirror"),
    ("newuidmap: write to uid_map failed: Operation not permitted", "build as root once"),
    ("something\nE: odd failure\n", "E: odd failure"),
])
def test_failures_are_explained_in_one_line(output, expected):
    line = rootfs.explain_failure(output)
    assert expected in line and "\n" not in line


def test_the_rootfs_setting_chooses_the_root(fake, monkeypatch):
    monkeypatch.setenv("INTERCODE_ROOTFS", "host")
    assert rootfs.default_root("ctf") == Path("/") and runs(fake) == 0
    monkeypatch.setenv("INTERCODE_ROOTFS", "/srv/my-root")
    assert rootfs.default_root("base") == Path("/srv/my-root")
    monkeypatch.setenv("INTERCODE_ROOTFS", "pinned")
    assert rootfs.default_root("base") == rootfs.find("base").path
    assert rootfs.describe(Path("/")) == {"kind": "host", "path": "/"}
    assert rootfs.describe(Path("/srv/my-root"))["kind"] == "directory"


def test_the_gold_cache_keys_a_pinned_root_by_its_identity(fake):
    from intercode.envs.gold_cache import rootfs_identity

    built = rootfs.build("base")
    assert rootfs_identity(built.path) == f"pinned:{built.identity}"
    assert rootfs_identity(fake).startswith("pinned:") is False


def test_a_root_nobody_cannot_reach_is_found():
    top = Path(tempfile.mkdtemp(prefix="intercode-test-reach-"))
    try:
        os.chmod(top, 0o755)
        inner = top / "closed" / "root"
        inner.mkdir(parents=True)
        os.chmod(top / "closed", 0o700)
        assert rootfs.unreachable_by(inner, 65534) == top / "closed"
        os.chmod(top / "closed", 0o755)
        assert rootfs.unreachable_by(inner, 65534) is None
    finally:
        shutil.rmtree(top)


def test_docker_image_without_an_engine_is_one_line(monkeypatch, fake):
    from intercode.sandbox.docker import images

    monkeypatch.setenv("DOCKER_HOST", f"unix://{fake}/no-such.sock")
    with pytest.raises(SandboxUnavailableError) as err:
        images.docker_image("base")
    assert "\n" not in str(err.value)
    assert runs(fake) == 0  # no build for an image that could not be imported


def test_image_tags_name_the_profile_and_identity(fake):
    from intercode.sandbox.docker import images

    assert images.image_tag(rootfs.build("ctf")) == \
        f"intercode/sandbox:ctf-{rootfs.find('ctf').identity[:12]}"
    assert images.image_tag(rootfs.build("base", ["nodejs"])).startswith(
        "intercode/sandbox:base-plus-")


def test_other_users_find_the_machines_roots(fake, monkeypatch):
    built = rootfs.build("base")  # in INTERCODE_ROOTFS_CACHE, standing for /var/cache
    monkeypatch.setattr(rootfs, "SYSTEM_CACHE", rootfs.cache_root())
    monkeypatch.delenv("INTERCODE_ROOTFS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(fake / "xdg"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert rootfs.cache_root() == fake / "xdg" / "intercode" / "rootfs"
    assert rootfs.find("base") == built and rootfs.built() == [built]
    assert rootfs.build("base") == built and runs(fake) == 1


@pytest.mark.parametrize("where", ["same device", "another device"])
def test_a_killed_builds_mounts_are_not_removed_through(fake, tmp_path, where):
    """A build as root that was killed leaves mmdebstrap's mounts in its folder (the
    host's /dev/shm bound there among them): the next build's clean-up of that folder
    unmounts them, and never deletes what they show."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    if where == "another device" and not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    outside = Path(tempfile.mkdtemp(dir=tmp_path if where == "same device" else "/dev/shm"))
    (outside / "keep").write_text("host")
    shm = rootfs.cache_root() / "building-killed" / "root" / "dev" / "shm"
    shm.mkdir(parents=True)
    if subprocess.run(["mount", "--bind", str(outside), str(shm)],
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        rootfs.build("base")
        assert (outside / "keep").read_text() == "host"
        assert not list(rootfs.cache_root().glob("building-*"))
    finally:
        subprocess.run(["umount", "--lazy", str(shm)], stderr=subprocess.DEVNULL)
        shutil.rmtree(outside, ignore_errors=True)


def test_a_link_in_place_of_a_build_folder_is_removed_not_followed(fake, tmp_path):
    """A ``building-*`` entry that is a link (to ``/``, say) is removed itself: the
    clean-up never unmounts, nor removes, what it points at."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    target = tmp_path / "elsewhere"
    (target / "mounted").mkdir(parents=True)
    source = Path(tempfile.mkdtemp(dir="/dev/shm"))  # (another device: ismount sees it)
    (source / "keep").write_text("host")
    if subprocess.run(["mount", "--bind", str(source), str(target / "mounted")],
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("cannot bind-mount here")
    link = rootfs.cache_root() / "building-link"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    try:
        rootfs.build("base")
        assert os.path.ismount(target / "mounted")
        assert (target / "mounted" / "keep").read_text() == "host"
        assert not link.is_symlink()
    finally:
        subprocess.run(["umount", "--lazy", str(target / "mounted")], stderr=subprocess.DEVNULL)
        shutil.rmtree(source, ignore_errors=True)
