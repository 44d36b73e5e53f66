"""Prebuilt instance images (SWE-bench's ``swebench/sweb.eval.x86_64.<id>``), on both backends.

An image is named per instance (its ``image`` field) or by a pattern (``--image
'swebench/sweb.eval.x86_64.{instance_id}'``; ``{instance_id}``, and ``{docker_id}``: the
id as SWE-bench's image names spell it, ``__`` written ``_1776_``). It is pulled through
the Docker engine when it is not there (a registry must be reachable), then exported
once into the root file system cache (``images/<image id>/root`` beside the built roots,
see :func:`intercode.sandbox.rootfs.cache_root`):

* ``/testbed`` of the image becomes the episode's tree (restored at every reset, as
  everywhere), with the image's git history;
* the rest of the image is the sandbox's root file system: on bubblewrap the export is
  mounted (``/usr``, ``/etc``, the top-level links, and ``/opt/miniconda3`` read-only), so
  SWE-bench's images get bubblewrap's resets; on Docker the image itself runs, with its
  ``/opt/miniconda3`` shown read-only in the sandbox's root;
* the image's ``PATH`` (its configuration) with the conda environment ``testbed``
  first, as SWE-bench's eval script activates it.

The image must have ``/usr/bin/python3`` and bash (the sandbox's supervisor runs on it;
SWE-bench's images do).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from intercode.datasets.swe import IMAGE, SweTask
from intercode.errors import ConfigError, SandboxUnavailableError
from intercode.fsutil import write_atomic
from intercode.sandbox import rootfs
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import PATH, Layout
from intercode.swe.repos import TESTBED, tree_of_folder

__all__ = ["ExportedImage", "export_image", "image_for", "image_layout"]

DOCKER_TIMEOUT = 3600.0
CONDA = "opt/miniconda3"
CONDA_ENV = f"{CONDA}/envs/testbed/bin"


@dataclass(frozen=True)
class ExportedImage:
    """An image exported once: its name, id, root folder and configured ``PATH``."""

    name: str
    image_id: str
    root: Path
    path_var: str

    def testbed(self) -> FileTree:
        """The image's ``/testbed`` as the episode's tree (cached as a tar archive)."""
        archive = self.root.parent / "testbed.tar"
        if archive.is_file():
            return FileTree.from_tar(archive.read_bytes(), str(archive))
        if not (self.root / TESTBED).is_dir():
            raise ConfigError(f"the image {self.name} has no /{TESTBED}")
        tree = tree_of_folder(self.root, TESTBED)
        write_atomic(archive, tree.to_tar())
        return tree


def image_for(task: SweTask, pattern: str | None) -> str | None:
    """The image of ``task``: its own ``image`` field, else ``pattern`` filled in."""
    if task.image:
        return task.image
    if not pattern:
        return None
    try:
        name = pattern.format(instance_id=task.task_id,
                              docker_id=task.task_id.replace("__", "_1776_"))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"--image {pattern!r}: only {{instance_id}} and {{docker_id}} can "
                          f"be filled in ({exc})") from None
    name = name.lower()
    if not IMAGE.match(name):
        raise ConfigError(f"--image {pattern!r} gives an invalid image name {name!r}")
    return name


def _docker(*args: str, timeout: float = DOCKER_TIMEOUT) -> str:
    try:
        done = subprocess.run(["docker", *args], capture_output=True, timeout=timeout,
                              check=False)
    except FileNotFoundError:
        raise SandboxUnavailableError("an image needs the docker command and a Docker engine "
                                      "(sudo apt-get install docker.io)") from None
    except subprocess.TimeoutExpired:
        raise SandboxUnavailableError(f"docker {args[0]} took longer than {timeout:.0f} s") \
            from None
    if done.returncode != 0:
        said = " ".join(done.stderr.decode(errors="replace").split())[:400]
        raise SandboxUnavailableError(f"docker {args[0]} failed: {said}")
    return done.stdout.decode(errors="replace")


def export_image(name: str) -> ExportedImage:
    """``name`` exported into the cache (pulled first if the engine lacks it)."""
    try:
        info = json.loads(_docker("image", "inspect", name, timeout=120))
    except SandboxUnavailableError as exc:
        if "No such image" not in str(exc) and "No such object" not in str(exc):
            raise
        _docker("pull", "--quiet", name)
        info = json.loads(_docker("image", "inspect", name, timeout=120))
    image_id = str(info[0]["Id"])
    env = dict(item.split("=", 1) for item in info[0].get("Config", {}).get("Env") or []
               if "=" in item)
    # with the built roots (sandbox.rootfs.cache_root): a place the sandbox's user reaches
    folder = rootfs.cache_root() / "images" / hashlib.sha256(image_id.encode()).hexdigest()[:24]
    root = folder / "root"
    if not (folder / "manifest.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".export.", dir=folder.parent))
        partial.chmod(0o755)  # (mkdtemp's 0700 would hide the root from the sandbox's user)
        try:
            _extract(name, partial / "root")
            manifest = {"image": name, "id": image_id, "path": env.get("PATH", PATH)}
            (partial / "manifest.json").write_text(json.dumps(manifest, indent=1))
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(partial, folder)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    return ExportedImage(name, image_id, root, str(manifest.get("path") or PATH))


def _extract(name: str, target: Path) -> None:
    """The image's file system, from a container made (never started) to export it."""
    container = _docker("create", name, "true", timeout=300).strip()
    if not re.match(r"^[0-9a-f]{12,64}$", container):
        raise SandboxUnavailableError(f"docker create gave no container id: {container[:80]}")
    try:
        proc = subprocess.Popen(["docker", "export", container], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        target.mkdir(parents=True)
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                if member.isdev() or member.isfifo():
                    continue  # the sandbox brings its own /dev
                tar.extract(member, target, filter="tar")
        if proc.wait(timeout=DOCKER_TIMEOUT) != 0:
            raise SandboxUnavailableError(f"docker export of {name} failed")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)


def image_layout(image: ExportedImage, backend: str, base: Layout) -> Layout:
    """The layout of a sandbox on ``image``: its root (bubblewrap) or the image itself
    (Docker), its conda directory read-only, its ``PATH`` with the ``testbed`` env first."""
    import dataclasses

    path = image.path_var
    if (image.root / CONDA_ENV).is_dir():
        path = f"/{CONDA_ENV}:{path}"
    ro = (CONDA,) if (image.root / CONDA).is_dir() else ()
    extra = tuple((k, v) for k, v in base.extra_env if k not in ("PATH", "VIRTUAL_ENV"))
    changes: dict[str, object] = {"extra_env": (*extra, ("PATH", path)), "ro_paths": ro}
    if backend == "docker":
        changes["image"] = image.name
    else:
        changes["rootfs"] = image.root
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
