"""The environment of a SWE task: ``/testbed`` and, when the task needs packages, a
virtual environment ``/opt/venv``, both one file tree that every reset restores.

Built here from PyPI, on the sandbox's pinned root (Debian 12, Python 3.11), in a
sandbox of the run's backend with the host's network (the agent's sandboxes have none):
``python3 -m venv /opt/venv``, the spec's ``pip_packages``, its requirements file (read
from the cached clone at the environment set-up commit, ``-r`` includes followed), then
its install command. What cannot be built this way is refused with the reason: an
``environment.yml`` (conda), system packages (``pre_install``). A Python other than 3.11
in the spec is noted (``python_used``) and the build goes on: whether the instance works
is for ``validate`` to say. A task that needs no package (``swe-demo``) gets no venv.

Built trees are cached as tar archives in ``$INTERCODE_CACHE/swe/envs`` with a manifest
(what was asked, what was used, the build log's end); ``intercode image build --swe``
builds ahead of a run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intercode.datasets.swe import SweTask
from intercode.errors import ConfigError, DatasetError
from intercode.fsutil import cache_dir, write_atomic
from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import GiB, Limits
from intercode.swe import specs
from intercode.swe.repos import TESTBED, repo_path, testbed_tree

__all__ = ["FORMAT", "PACKAGES", "VENV", "BuildError", "Built", "build_env", "env_layout_vars",
           "needs_env", "swe_layout"]

FORMAT = 1
VENV = "opt/venv"
BUILD_TIMEOUT = 3600.0
log = logging.getLogger(__name__)


class BuildError(DatasetError):
    """An instance whose environment cannot be built here (the message says why)."""


@dataclass(frozen=True)
class Built:
    """A task's environment: its tree and what the build recorded."""

    tree: FileTree
    manifest: dict[str, Any]


# what the benchmark's root adds to the base one: venv, for the instances' packages
PACKAGES = ("python3-venv",)


def swe_layout(base: Layout | None = None) -> Layout:
    """``base`` (default: the pinned root with :data:`PACKAGES`) with ``/opt/venv`` first
    on the ``PATH`` and the packages a Docker image adds."""
    import dataclasses

    from intercode.sandbox.rootfs import default_root

    base = base or Layout(rootfs=default_root("base", PACKAGES))
    return dataclasses.replace(base, extra_env=base.extra_env + env_layout_vars(),
                               image_packages=tuple(base.image_packages) + PACKAGES)


def env_layout_vars() -> tuple[tuple[str, str], ...]:
    """The shell variables that put ``/opt/venv`` first (harmless when there is none)."""
    from intercode.sandbox.layout import PATH

    return (("PATH", f"/{VENV}/bin:{PATH}"), ("VIRTUAL_ENV", f"/{VENV}"))


def needs_env(plan: specs.TestPlan) -> bool:
    """Whether the task needs packages installed (else ``/testbed`` alone will do)."""
    return bool(plan.pip_packages or plan.requirements or plan.install)


def build_env(task: SweTask, backend: str, layout: Layout,
              mirror: str | None = None, rebuild: bool = False) -> Built:
    """The task's environment tree (cached; built on first use)."""
    plan = specs.plan(task)
    if not plan.python_repo:
        raise BuildError(f"{task.task_id}: {task.repo} is not a Python repository; its "
                         "environment cannot be built here (give --image a prebuilt image)")
    if plan.requirements.endswith(".yml") or plan.requirements.endswith(".yaml"):
        raise BuildError(f"{task.task_id}: its environment is a conda environment.yml; "
                         "it cannot be built from PyPI here (give --image a prebuilt image)")
    testbed = testbed_tree(task.repo, task.base_commit, mirror)
    if not needs_env(plan):
        return Built(testbed, {"instance_id": task.task_id, "venv": False})
    version = scm_version(task, mirror)
    key = hashlib.sha256(json.dumps(
        [FORMAT, testbed.id, plan.pip_packages, plan.requirements, plan.install, version,
         backend, str(layout.rootfs), layout.image_packages], default=str).encode()
    ).hexdigest()[:24]
    folder = cache_dir() / "swe" / "envs"
    archive, manifest_file = folder / f"{key}.tar", folder / f"{key}.json"
    if archive.is_file() and manifest_file.is_file() and not rebuild:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        return Built(FileTree.from_tar(archive.read_bytes(), str(archive)), manifest)
    requirements = _requirements(task, plan, mirror)
    log.warning("building the environment of %s (once; cached in %s)", task.task_id, folder)
    tree, log_tail = _build(testbed, plan, requirements, backend, layout, version)
    manifest = {"format": FORMAT, "instance_id": task.task_id, "repo": task.repo,
                "version": task.version, "venv": True, "python_wanted": plan.python,
                "python_used": specs.DEFAULT_PYTHON, "pip_packages": list(plan.pip_packages),
                "requirements": plan.requirements, "install": plan.install,
                "pre_install_skipped": list(plan.pre_install), "backend": backend,
                "scm_version": version,
                "files": len(tree.entries), "log_tail": log_tail}
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(archive, tree.to_tar())
    write_atomic(manifest_file, json.dumps(manifest, indent=1).encode())
    return Built(tree, manifest)


def _requirements(task: SweTask, plan: specs.TestPlan, mirror: str | None) -> str:
    """The spec's requirements file, read from the clone (``-r`` includes inlined)."""
    if plan.requirements != "requirements.txt":
        return " ".join(plan.requirements.split()) if plan.requirements else ""
    import subprocess

    from intercode.swe.repos import clean_git_env

    commit = task.environment_setup_commit or task.base_commit
    source = repo_path(task.repo, commit, mirror)
    paths = specs.requirements_paths(task.repo)

    def show(path: str) -> str | None:
        done = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=source,
                              env=clean_git_env(), capture_output=True, check=False)
        return done.stdout.decode(errors="replace") if done.returncode == 0 else None

    def inline(path: str, depth: int = 0) -> str:
        text = show(path)
        if text is None or depth > 5:
            return ""
        out = []
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        for line in text.splitlines():
            if line.strip().startswith("-r "):
                out.append(inline(folder + line.strip()[3:].strip(), depth + 1))
            elif line.strip() and not line.strip().startswith(("#", "-e ", "-c ")):
                out.append(line)
        return "\n".join(out)

    for path in paths:
        found = inline(path)
        if found:
            return "REQUIREMENTS\n" + found
    raise BuildError(f"{task.task_id}: none of its requirements files ({', '.join(paths)}) "
                     f"exists at {commit[:12]}")


def scm_version(task: SweTask, mirror: str | None) -> str:
    """The version a VCS-versioned package (setuptools-scm) would compute at the base
    commit with the repository's full history and tags, as SWE-bench's images have them
    (``/testbed`` holds one commit and no tag: without this, such a package installs as
    0.1.dev1 and its tests may refuse to run). Empty when the history has no tag."""
    import re
    import subprocess

    from intercode.swe.repos import clean_git_env

    source = repo_path(task.repo, task.base_commit, mirror)
    done = subprocess.run(["git", "describe", "--tags", "--long", task.base_commit],
                          cwd=source, env=clean_git_env(), capture_output=True, check=False,
                          timeout=120)
    found = re.match(r"^v?(.+)-(\d+)-g[0-9a-f]+$", done.stdout.decode(errors="replace").strip())
    if done.returncode != 0 or found is None:
        return ""
    tag, distance = found.group(1), int(found.group(2))
    if not re.match(r"^[0-9][0-9A-Za-z.+-]*$", tag):
        return ""
    if distance == 0:
        return tag
    if re.search(r"\.?dev\d*$", tag):
        return re.sub(r"dev\d*$", f"dev{distance}", tag)
    parts = tag.split(".")
    if parts[-1].isdigit():
        parts[-1] = str(int(parts[-1]) + 1)
    return ".".join(parts) + f".dev{distance}"


def _build(testbed: FileTree, plan: specs.TestPlan, requirements: str, backend: str,
           layout: Layout, version: str = "") -> tuple[FileTree, str]:
    import dataclasses

    limits = Limits(timeout=BUILD_TIMEOUT, storage=8 * GiB, memory=8 * GiB,
                    address_space=64 * GiB, file_size=4 * GiB, processes=512,
                    files=1_000_000, output=256 << 10, output_hard=64 << 20)
    box = create_sandbox(backend, limits, dataclasses.replace(layout, network="host"))
    steps = [f"python3 -m venv /{VENV}", f". /{VENV}/bin/activate",
             "pip install --no-input --quiet --upgrade 'pip<25' 'setuptools<75' wheel"]
    if plan.pip_packages:
        steps.append("pip install --no-input --quiet " + " ".join(
            shlex.quote(p) for p in plan.pip_packages))
    stdin = b""
    if requirements.startswith("REQUIREMENTS\n"):
        stdin = requirements.removeprefix("REQUIREMENTS\n").encode()
        steps.append("cat > /tmp/requirements.txt && pip install --no-input --quiet "
                     "-r /tmp/requirements.txt")
    elif requirements:
        steps.append("pip install --no-input --quiet " + requirements)
    if plan.install:
        pretend = (f"export SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(version)}; "
                   if version else "")
        steps.append(f"cd /{TESTBED} && {pretend}{plan.install}")
    ca = _host_ca()
    script = "set -eu\n" + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in _pip_env(ca))
    script += "\n".join(steps) + "\n"
    try:
        box.start()
        box.load(testbed)
        if ca is not None:
            box.exec(["/bin/bash", "-c", f"cat > {CA_FILE}"], stdin=ca, cwd="/")
        result = box.exec(["/bin/bash", "-c", script], timeout=BUILD_TIMEOUT, cwd=f"/{TESTBED}",
                          stdin=stdin)
        tail = result.output[-4000:]
        if result.exit_code != 0:
            raise BuildError(f"the environment build failed (exit {result.exit_code}): "
                             + " ".join(tail.strip().splitlines()[-3:])[:500])
        captured = box.capture()
    finally:
        box.close()
    keep = (TESTBED, VENV)
    entries = [e for e in captured.entries
               if any(e.path == k or e.path.startswith(k + "/") for k in keep)
               or e.path in ("opt",)]
    if not any(e.path == VENV for e in entries):
        raise ConfigError("the environment build made no /opt/venv")
    return FileTree.of(entries), tail


CA_FILE = "/tmp/intercode-build-ca.pem"
# the host's pip settings a build inherits (a local path or file:// index is not visible
# inside the sandbox and is left out)
PIP_VARS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT",
            "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def _host_ca() -> bytes | None:
    """The CA bundle the host's pip trusts (``PIP_CERT``, ``SSL_CERT_FILE``,
    ``REQUESTS_CA_BUNDLE``), for a build behind a TLS-inspecting proxy; else none."""
    import os

    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            data = Path(value).read_bytes()
            if len(data) < 16 << 20:
                return data
    return None


def _pip_env(ca: bytes | None) -> list[tuple[str, str]]:
    """The host's pip settings for the build sandbox: index URLs only over http(s) (a
    local path or ``file:`` index is not visible there), the others as they are."""
    import os

    found = []
    for name in PIP_VARS:
        words = os.environ.get(name, "").split()
        if name.endswith("_URL"):
            words = [w for w in words if w.startswith(("http://", "https://"))]
        if words:
            found.append((name, " ".join(words)))
    if ca is not None:
        found += [("PIP_CERT", CA_FILE), ("SSL_CERT_FILE", CA_FILE)]
    return found
