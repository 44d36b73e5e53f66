"""SWE tasks on prebuilt instance images, laid out as SWE-bench's (``/testbed`` with its
history, a conda environment in ``/opt/miniconda3``), on both backends: the image runs on
Docker, and its export is the root file system on bubblewrap. No registry is reachable
here, so the images are built locally under the names a pattern gives."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import backends, need

from intercode.benchmarks.swe import apply_gold
from intercode.datasets.swe import SweTask, load
from intercode.envs.swe import SweEnv
from intercode.sandbox.filetree import DIR, FILE, LINK
from intercode.swe import repos
from intercode.swe.images import image_for

PATTERN = "intercode-test/sweb.eval.x86_64.{instance_id}"
MARKER = "#!/bin/sh\necho from-the-conda-env\n"


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    pytest.importorskip("swebench", reason="the swe extra is not installed")
    need("docker")
    from intercode.sandbox.docker.sandbox import default_image

    tasks = [t for t in load("swe-demo") if isinstance(t, SweTask)]
    context = tmp_path_factory.mktemp("image")
    tree = repos.testbed_tree(tasks[0].repo, tasks[0].base_commit)
    for entry in tree.entries:
        target = context / entry.path
        if entry.kind == DIR:
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind == FILE:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(entry.payload if isinstance(entry.payload, bytes) else b"")
            target.chmod(entry.mode)
        elif entry.kind == LINK:
            target.symlink_to(str(entry.payload))
    tool = context / "opt/miniconda3/envs/testbed/bin/which-env"
    tool.parent.mkdir(parents=True)
    tool.write_text(MARKER)
    tool.chmod(0o755)
    (context / "Dockerfile").write_text(
        f"FROM {default_image('base')}\nCOPY testbed /testbed\nCOPY opt /opt\n"
        "ENV PATH=/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
        "/sbin:/bin\n")
    names = [str(image_for(t, PATTERN)) for t in tasks]
    built = subprocess.run(["docker", "build", "-q", "-t", names[0], str(context)],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    for name in names[1:]:
        subprocess.run(["docker", "tag", names[0], name], check=True)
    yield names
    subprocess.run(["docker", "rmi", "-f", *names], capture_output=True, check=False)


@pytest.mark.parametrize("backend", backends())
def test_an_instance_image_runs_on_each_backend(images: list[str], backend: str) -> None:
    need(backend)
    env = SweEnv("swe-demo", backend=backend, image=PATTERN)
    try:
        env.reset(options={"task": 1})
        out = env.step("echo $PATH; which-env; touch /opt/miniconda3/x 2>&1; pwd; "
                       "git log --format=%H")[0]
        assert out.split("\n")[0].startswith("/opt/miniconda3/envs/testbed/bin:")
        assert "from-the-conda-env" in out and "Read-only file system" in out
        assert "/testbed" in out and env.task.base_commit in out  # type: ignore[union-attr]
        assert env.step("submit")[1] == 0.0
        env.reset(options={"task": 1})
        env.step("rm -rf textkit; echo junk > new.txt")
        env.reset(options={"task": 1})
        assert env.step("ls")[0].split() == ["README.md", "tests", "textkit"]
        env.step(apply_gold(env.task))  # type: ignore[arg-type]
        _, reward, _, _, info = env.step("submit")
        assert reward == 1.0, info
    finally:
        env.close()


def test_image_patterns_are_checked() -> None:
    task = next(t for t in load("swe-demo") if isinstance(t, SweTask))
    assert image_for(task, "swebench/sweb.eval.x86_64.{docker_id}") == \
        "swebench/sweb.eval.x86_64.textkit_1776_textkit-1"
    from intercode.errors import ConfigError

    for bad in ("x/{nope}", "Bad Name {instance_id}", "x/{instance_id}; rm -rf /"):
        with pytest.raises(ConfigError):
            image_for(task, bad)


def test_a_link_out_of_an_exported_root_is_refused(tmp_path: Path) -> None:
    from intercode.errors import SandboxUnavailableError
    from intercode.sandbox.layout import Layout
    from intercode.sandbox.limits import Limits

    root = tmp_path / "root"
    for name in ("usr", "etc"):
        (root / name).mkdir(parents=True)
    (root / "opt").symlink_to("/var")
    layout = Layout(rootfs=root, ro_paths=("opt/lib",))
    with pytest.raises(SandboxUnavailableError, match="symbolic link"):
        layout.mount_args(Limits(), {})
