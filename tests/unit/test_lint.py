"""The code stays ruff-clean and mypy-clean (both are test dependencies): the full suite
runs ``scripts/check``, the developer's command for the same checks."""

from __future__ import annotations

import subprocess

from checks import ROOT, check_command


def test_ruff_is_clean():
    proc = subprocess.run(check_command("ruff"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean(request):
    # the configuration is pyproject's [tool.mypy]: strict on the host code, not the inbox;
    # started with the session when other tests run too (tests/conftest.py)
    started = getattr(request.config, "_intercode_mypy", None)
    if started is None:
        proc = subprocess.run(check_command("mypy"), cwd=ROOT, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return
    background, out = started
    code = background.wait(timeout=600)
    out.seek(0)
    assert code == 0, out.read().decode(errors="replace")
