"""docker_image(profile): the pinned root imported into a real Docker engine, no registry.
Skipped without a reachable engine unless INTERCODE_REQUIRE_DOCKER is set (then it fails)."""

from __future__ import annotations

import os
import subprocess

import pytest

from intercode.errors import SandboxUnavailableError
from intercode.sandbox import rootfs
from intercode.sandbox.docker import images


def _engine() -> None:
    try:
        images.require_engine()
    except SandboxUnavailableError as exc:
        if os.environ.get("INTERCODE_REQUIRE_DOCKER"):
            pytest.fail(f"INTERCODE_REQUIRE_DOCKER is set but {exc}")
        pytest.skip(str(exc))


def test_docker_image_is_the_pinned_root_tagged_by_its_identity(monkeypatch):
    monkeypatch.delenv("INTERCODE_ROOTFS", raising=False)
    _engine()
    root = rootfs.build("base")
    tag = images.docker_image("base")
    assert tag == f"intercode/sandbox:base-{root.identity[:12]}"
    inspect = subprocess.run(
        ["docker", "image", "inspect", "--format",
         '{{index .Config.Labels "org.intercode.rootfs.identity"}} {{.Id}}', tag],
        capture_output=True, text=True, check=True)
    identity, image_id = inspect.stdout.split()
    assert identity == root.identity
    assert images.docker_image("base") == tag  # present: not imported again
    again = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", tag],
                           capture_output=True, text=True, check=True)
    assert again.stdout.strip() == image_id
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "sh", "-c",
                          "cat /etc/debian_version; command -v bwrap || echo no-bwrap"],
                         capture_output=True, text=True, timeout=120, check=True)
    lines = run.stdout.split()
    assert lines[0].startswith("12.") and lines[1] == "no-bwrap"
    assert any(i["tag"] == tag for i in images.docker_images())
