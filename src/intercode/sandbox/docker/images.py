"""Sandbox images without a registry: the pinned root file system, imported into Docker.

:func:`docker_image` is what the Docker backend asks for: the tag of a local image made
from the pinned root of a profile (:mod:`intercode.sandbox.rootfs`), ``docker import``\\ ed
from it once (no registry, no pull): ``intercode/sandbox:<profile>-<identity[:12]>``, with
labels naming its identity, profile and Debian suite. The tag is a function of the root's
identity, so a rebuilt root is a new image and an old image is never silently reused for
a new root.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any

from intercode.errors import SandboxUnavailableError
from intercode.sandbox import rootfs
from intercode.sandbox.layout import PATH

__all__ = ["LABEL", "docker_image", "docker_images", "docker_import", "require_engine"]

REPOSITORY = "intercode/sandbox"
LABEL = "org.intercode"
DOCKER_TIMEOUT = 600.0


def image_tag(root: rootfs.RootFs) -> str:
    """The Docker tag of a built root: ``intercode/sandbox:<profile>-<id12>``."""
    profile = root.profile or "custom"
    if root.manifest.get("extra"):
        profile += "-plus"
    return f"{REPOSITORY}:{profile}-{root.short}"


def _docker(*args: str, stdin: Any = subprocess.DEVNULL,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    if shutil.which("docker") is None:
        raise SandboxUnavailableError("the docker command is not installed (Debian: sudo "
                                      "apt-get install docker.io)")
    try:
        return subprocess.run(["docker", *args], stdin=stdin, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SandboxUnavailableError(f"docker {args[0]} did not answer in {timeout:.0f} s"
                                      ) from None


def require_engine() -> None:
    """:class:`SandboxUnavailableError` (one line) unless a Docker engine answers."""
    proc = _docker("version", "--format", "{{.Server.Version}}", timeout=30.0)
    if proc.returncode != 0 or not proc.stdout.strip():
        reason = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        raise SandboxUnavailableError(f"the Docker engine is not reachable ({reason}); start "
                                      "it (sudo systemctl start docker, or sudo dockerd &)")


def image_exists(tag: str) -> bool:
    """Whether the engine has an image ``tag``."""
    return _docker("image", "inspect", "--format", "{{.Id}}", tag).returncode == 0


def docker_import(root: rootfs.RootFs) -> str:
    """``docker import`` the root (if its tag is missing); its tag."""
    tag = image_tag(root)
    require_engine()
    base = rootfs.cache_root()
    rootfs.make_dirs(base)
    fd = os.open(base / "docker.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # concurrent runs import once
        if image_exists(tag):
            return tag
        labels = {f"{LABEL}.rootfs.identity": root.identity,
                  f"{LABEL}.rootfs.profile": root.profile,
                  f"{LABEL}.rootfs.suite": str(root.manifest.get("suite", "")),
                  f"{LABEL}.rootfs.extra": ",".join(root.manifest.get("extra", []))}
        changes = [f"LABEL {key}={json.dumps(value)}" for key, value in labels.items()]
        changes += [f"ENV PATH={PATH}", "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]']
        args = ["import", "--message", f"intercode pinned root {root.identity}"]
        for change in changes:
            args += ["--change", change]
        tar = subprocess.Popen(["tar", "-C", str(root.path), "--numeric-owner", "-c", "."],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        try:
            proc = _docker(*args, "-", tag, stdin=tar.stdout, timeout=DOCKER_TIMEOUT)
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar.wait()
        if proc.returncode != 0:
            reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise SandboxUnavailableError(f"docker import of {root.path} failed: {reason}")
        return tag
    finally:
        os.close(fd)


def docker_image(profile: str = "base", extra: Iterable[str] = ()) -> str:
    """The tag of a local Docker image of ``profile``'s pinned root (plus ``extra``
    packages), building the root and importing it first if missing.
    :class:`SandboxUnavailableError` when the engine is not reachable or the build fails."""
    require_engine()  # before a build of minutes that could not be used
    return docker_import(rootfs.build(profile, extra))


def docker_images() -> list[dict[str, str]]:
    """The ``intercode/sandbox`` images the engine has (tag, id, size, identity)."""
    proc = _docker("image", "ls", REPOSITORY, "--format", "{{json .}}")
    if proc.returncode != 0:
        return []
    found = []
    for line in proc.stdout.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        found.append({"tag": f"{item.get('Repository')}:{item.get('Tag')}",
                      "id": str(item.get("ID", "")), "size": str(item.get("Size", ""))})
    return found
