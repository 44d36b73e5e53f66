"""The Inspect integration is optional: the core never imports inspect_ai; without it,
one line says what to install; with it, Inspect finds the tasks by their names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercode.errors import ConfigError


def test_the_core_does_not_import_inspect_ai():
    code = ("import sys, intercode, intercode.cli, intercode.runner.run, intercode.integrations.inspectai, "
            "intercode.integrations.inspectai.episode; "
            "assert 'inspect_ai' not in sys.modules, 'inspect_ai imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_missing_inspect_ai_is_one_line(monkeypatch):
    import intercode.integrations.inspectai as ii

    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    with pytest.raises(ConfigError) as err:
        ii.require("intercode/sql")
    assert str(err.value) == ("intercode/sql needs inspect-ai: "
                              "pip install 'intercode[inspect]'")
    with pytest.raises(ConfigError, match="needs inspect-ai"):
        ii.intercode_task  # noqa: B018


def test_inspect_finds_the_tasks_through_the_entry_point():
    pytest.importorskip("inspect_ai")
    from inspect_ai._util.registry import registry_lookup

    for name in ("bash", "sql", "python", "ctf", "swe"):
        assert registry_lookup("task", f"intercode/{name}") is not None, name


def test_export_without_inspect_ai_is_one_line(monkeypatch, tmp_path, capsys):
    from intercode.cli import main

    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    assert main(["export", "inspect", str(tmp_path), "-o", str(tmp_path / "x.eval")]) == 2
    err = capsys.readouterr().err
    assert err == ("intercode: error: intercode export inspect needs inspect-ai: "
                   "pip install 'intercode[inspect]'\n")
