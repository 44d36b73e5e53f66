"""The installed plugins' entry points are read only for a name that is not built in: a
run of a built-in benchmark on a built-in backend never pays the scan at start-up."""

from __future__ import annotations

import pytest

import intercode.plugins
from intercode import sandbox
from intercode.benchmarks import registry


def test_built_in_names_need_no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def scan(group: str) -> tuple[()]:
        calls.append(group)
        return ()

    monkeypatch.setattr(intercode.plugins, "entry_points_of", scan)
    monkeypatch.setattr(sandbox, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "_loaded", False)
    assert sandbox.require_backend("bwrap") == "bwrap"
    assert registry.known("bash") and registry.known("sql")
    assert calls == []
    assert not registry.known("no-such-benchmark")  # an unknown name: the plugins are read
    with pytest.raises(Exception, match="unknown sandbox backend 'no-such'"):
        sandbox.require_backend("no-such")
    assert calls == [registry.GROUP, sandbox.GROUP]
