"""The pinned root file system is the sandbox's default root: built by
the real mmdebstrap (once per machine; scripts/test builds it before the suite), mounted
instead of the host's /usr and /etc, recorded in config.json and keyed into the gold
cache; a bad package name is one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from intercode.envs.bash import BashEnv
from intercode.errors import ConfigError, SandboxUnavailableError
from intercode.runner.run import RunConfig, execute
from intercode.sandbox import rootfs
from intercode.sandbox.layout import Layout

pytestmark = pytest.mark.skipif(shutil.which("mmdebstrap") is None and rootfs.find() is None,
                                reason="needs mmdebstrap or a built root (scripts/setup)")


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    monkeypatch.delenv("INTERCODE_ROOTFS", raising=False)


def test_the_default_root_is_the_pinned_one_not_the_hosts():
    built = rootfs.build("base")
    assert Layout().rootfs == built.path
    env = BashEnv(dataset="nl2bash-fs1")
    try:
        assert env.layout.rootfs == built.path
        env.reset(options={"task": 0})
        # the host has bubblewrap (it runs this); the minimal root has not
        obs, *_ = env.step("command -v bwrap || echo no-bwrap; cat /etc/debian_version")
        lines = obs.split()
        assert lines[0] == "no-bwrap" and lines[1].startswith("12.")
        obs, *_ = env.step("python3 -c 'import sqlite3, json; print(sqlite3.sqlite_version)'")
        assert obs.strip().startswith("3.")
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
    finally:
        env.close()


def test_config_json_records_the_roots_identity(tmp_path):
    built = rootfs.build("base")
    out = tmp_path / "run"
    execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", output=out, tasks=(0,),
                      workers=1), progress=False)
    config = json.loads((out / "config.json").read_text())
    assert config["rootfs"] == {"kind": "pinned", "path": str(built.path),
                                "identity": built.identity, "profile": "base", "extra": [],
                                "suite": rootfs.SUITE}


def test_a_run_resumes_only_on_its_own_root(tmp_path, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setenv("INTERCODE_ROOTFS", "host")
    execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", output=out, tasks=(0, 1),
                      workers=1), progress=False)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n")  # as if stopped after one task
    monkeypatch.delenv("INTERCODE_ROOTFS")
    resumed = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=out,
                        tasks=(0, 1), workers=1, resume=True)
    with pytest.raises(ConfigError, match=r"the run used the host's root, now the pinned "
                                          r"root .*resume with --rootfs host"):
        execute(resumed, progress=False)
    monkeypatch.setenv("INTERCODE_ROOTFS", "host")
    assert execute(resumed, progress=False)["ok"] == 2


def test_the_host_root_is_opt_in(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "intercode", "eval", "bash", "--dataset", "bash-demo",
         "--agent", "gold", "--tasks", "0", "--workers", "1", "--no-progress",
         "--rootfs", "host", "--output", str(out)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "config.json").read_text())["rootfs"] == {"kind": "host",
                                                                      "path": "/"}
    bad = subprocess.run([sys.executable, "-m", "intercode", "eval", "bash", "--rootfs",
                          str(tmp_path), "--output", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "not a root file system" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


@pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="needs mmdebstrap")
def test_a_bad_package_name_is_one_line_from_the_real_builder(monkeypatch):
    cache = Path(tempfile.mkdtemp(prefix="intercode-test-rootfs-"))
    try:
        monkeypatch.setenv("INTERCODE_ROOTFS_CACHE", str(cache))
        with pytest.raises(SandboxUnavailableError) as err:
            rootfs.build("base", ["intercode-no-such-package"])
        message = str(err.value)
        assert "\n" not in message
        assert "unknown Debian package(s) in bookworm: intercode-no-such-package" in message
        assert not list(cache.glob("building-*"))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_the_ctf_environment_mounts_the_ctf_root():
    from intercode.envs.ctf import CtfEnv

    env = CtfEnv()
    try:
        assert env.layout.rootfs == rootfs.build("ctf").path
    finally:
        env.close()


def test_image_build_is_cached_and_listed():
    env = {**os.environ}
    built = rootfs.build("base")
    proc = subprocess.run([sys.executable, "-m", "intercode", "image", "build"],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0 and proc.stdout.split()[:2] == ["rootfs", built.short]
    assert "building" not in proc.stderr  # cached: not built again
    listed = subprocess.run([sys.executable, "-m", "intercode", "image", "list"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert f"rootfs {built.short}  base" in listed.stdout
