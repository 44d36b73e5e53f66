"""The sdist and the wheel: built from the checkout, checked by twine, complete, and the
wheel works installed (its data files found where the package is, not in the checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import intercode

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
TOOL_CACHES = {".hypothesis", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    before = {p.name for p in ROOT.iterdir()}
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    after = {p.name for p in ROOT.iterdir()}
    # no build/ or egg-info left in the checkout (the tools' caches may appear meanwhile:
    # tests running alongside in a parallel run make them)
    assert after - TOOL_CACHES == before - TOOL_CACHES
    return out


def test_twine_accepts_both(dist):
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_wheel_holds_the_package_and_its_data(dist):
    (wheel,) = dist.glob("*.whl")
    assert wheel.name.startswith(f"intercode-{intercode.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    for needed in ("intercode/py.typed", "intercode/report/assets/report.js",
                   "intercode/report/assets/report.html", "intercode/datasets/data/ctf_assets.json",
                   "intercode/datasets/data/setup_demo.sh", "intercode/sandbox/inbox/shell.py"):
        assert needed in names, needed
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    assert f"Version: {intercode.__version__}" in text and "License-Expression: MIT" in text


def test_the_sdist_holds_tests_scripts_benchmarks_and_docs(dist):
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = f"intercode-{intercode.__version__}"
    for needed in ("LICENSE", "README.md", "pyproject.toml", "tests/conftest.py", "scripts/setup",
                   "perf/bench_bash.py", "docs/security.md", ".ci/run",
                   "src/intercode/report/assets/report.css"):
        assert f"{top}/{needed}" in names, needed
    assert not any("__pycache__" in n or "/.venv/" in n for n in names)


def test_the_installed_wheel_works_from_where_it_is_installed(dist, tmp_path):
    (wheel,) = dist.glob("*.whl")
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                           "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(json.dumps(
        {"env": "sql", "dataset": "spider-dev", "task": 0, "query": "q", "agent": "gold",
         "status": "ok", "reward": 1.0, "success": True, "turns": []}) + "\n")
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = ("import intercode, sys; from intercode.cli import main; "
            "print(intercode.__file__); sys.exit(main(['report', sys.argv[1], '-o', sys.argv[2]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(run), str(tmp_path / "r.html")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith(str(target))  # the wheel, not the checkout
    assert "report-data" in (tmp_path / "r.html").read_text()
