"""Every extra resolves against the package index, and the combinations the install guide
says cannot share an environment indeed cannot (docs/getting-started/install.md).

``pip install --dry-run`` resolves without installing. The extras' imports are proved
where they are installed: the main test environment (most of them) and the environments
of scripts/extra-test (the newest OpenEnv with TRL; verifiers).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                ["optional-dependencies"])
# (requirements, the package whose pins clash) that the install guide lists as impossible
IMPOSSIBLE = [
    ([".[mcp]", "openenv>=0.5"], "OpenEnv from 0.5 needs fastmcp 3, which needs mcp < 2"),
    ([".[verifiers,mcp]"], "verifiers pins mcp==2.0.0"),
    # with OpenEnv from 0.5 (the row above proves it needs mcp < 2; resolving the pair
    # itself backtracks for a minute before it gives up)
    ([".[verifiers]", "mcp<2"], "verifiers pins mcp==2.0.0"),
]


def resolve(*requirements: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                           "--ignore-installed", "--disable-pip-version-check",
                           *requirements], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


# the extras that share one environment (the main test environment holds them), and the
# two that each need their own: if a group resolves, so does each of its extras
GROUPS = {
    "together": [e for e in EXTRAS if e not in ("openenv", "verifiers")],
    "openenv": ["openenv", "trl"],
    "verifiers": ["verifiers"],
}


def test_the_extras_are_the_documented_ones():
    assert {"mcp", "openenv", "serve", "trl", "verifiers", "inspect", "swe"} <= set(EXTRAS)
    assert {e for group in GROUPS.values() for e in group} == set(EXTRAS)


@pytest.mark.parametrize("group", GROUPS)
def test_each_extra_resolves(group):
    done = resolve(f".[{','.join(GROUPS[group])}]")
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize(("requirements", "why"), IMPOSSIBLE,
                         ids=[" ".join(r) for r, _ in IMPOSSIBLE])
def test_the_combinations_said_impossible_are(requirements, why):
    done = resolve(*requirements)
    assert done.returncode != 0 and "ResolutionImpossible" in done.stderr, (why, done.stdout)
