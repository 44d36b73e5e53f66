"""The git revision ``config.json`` records: intercode's own clone's, never another's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from intercode.runner.run import git_revision

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

PYPROJECT = '[project]\nname = "{name}"\nversion = "0"\n'


def _repo(root: Path, name: str) -> str:
    """A repository at ``root`` with one commit, whose pyproject names ``name``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name))
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "pyproject.toml"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def _package(at: Path) -> Path:
    at.mkdir(parents=True)
    (at / "__init__.py").write_text("")
    return at


def test_a_clone_of_intercode_gives_its_revision(tmp_path: Path) -> None:
    head = _repo(tmp_path / "intercode", "intercode")
    assert git_revision(_package(tmp_path / "intercode" / "src" / "intercode")) == head


@pytest.mark.parametrize("where", [
    ".venv/lib/python3.11/site-packages/intercode",  # installed in a project's environment
    "src/intercode",  # a copy in another project's own sources
])
def test_another_projects_repository_is_not_intercodes(tmp_path: Path, where: str) -> None:
    _repo(tmp_path / "project", "someone-elses")
    assert git_revision(_package(tmp_path / "project" / where)) is None


def test_an_installed_package_outside_any_repository_has_none(tmp_path: Path) -> None:
    assert git_revision(_package(tmp_path / "site-packages" / "intercode")) is None


def test_this_checkout_still_has_its_revision() -> None:
    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        pytest.skip("not run from a clone")
    head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert git_revision() == head
