"""The documentation: the site builds without a warning, the environment-variable page names
every variable the code reads, the command-line reference covers every command and option,
and the README stays short."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = re.compile(r"INTERCODE_[A-Z][A-Z0-9_]*")


def test_the_site_builds_strict_without_warnings(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not warnings, proc.stderr[-4000:]
    reference = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "intercode serve openenv" in reference and "--resume" in reference


def test_every_environment_variable_of_the_code_is_documented():
    used = {name for path in (ROOT / "src").rglob("*.py")
            for name in VARIABLE.findall(path.read_text(encoding="utf-8"))}
    assert len(used) >= 10  # the scan found the code's variables
    page = (ROOT / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    missing = sorted(name for name in used if name not in page)
    assert not missing, f"add these to docs/reference/environment.md: {missing}"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _walk(parser: argparse.ArgumentParser, name: str):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _walk(sub, f"{name} {sub_name}")


def test_the_cli_reference_has_every_command_and_option():
    from intercode.cli import build_parser

    text = _hook().render(build_parser())
    commands = list(_walk(build_parser(), "intercode"))
    assert len(commands) > 10
    for name, parser in commands:
        assert f"`{name}`" in text, name
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in text, (name, option)


def test_the_readme_has_at_most_200_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details to docs/"
