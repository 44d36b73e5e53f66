"""The verifiers integration imports verifiers only when an environment is made: the
package imports without it, and a missing verifiers is one line (runs in every venv)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercode.errors import ConfigError


def test_the_package_imports_without_verifiers():
    code = ("import sys; sys.modules['verifiers'] = None\n"
            "import intercode.integrations.verifiers as m\n"
            "import intercode.integrations.verifiers.pool, intercode.integrations.verifiers.episode\n"
            "print(sorted(m.__all__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "load_environment" in done.stdout


def test_a_missing_verifiers_is_one_line(monkeypatch):
    from intercode.integrations.verifiers import load_environment

    monkeypatch.setitem(sys.modules, "verifiers", None)
    monkeypatch.delitem(sys.modules, "verifiers.v1", raising=False)
    with pytest.raises(ConfigError, match=r"intercode\[verifiers\]") as info:
        load_environment("bash", "bash-demo")
    assert "\n" not in str(info.value)
