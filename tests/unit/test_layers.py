"""The layers hold: no module imports a higher layer, and no import cycles.

The layer order and the in-sandbox boundary are import-linter contracts in pyproject.toml
(``[tool.importlinter]``; ``lint-imports`` checks them by hand, ``scripts/check`` too); the
cycle check is here. Typing-only imports (under ``TYPE_CHECKING``) are not counted: they
name types, not code that runs. The code that runs inside the sandbox
(``intercode.sandbox.inbox``) is left out of the cycle check: it is one program, shipped
whole into the sandbox, and imports nothing of the host (its own contract).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="import-linter is in the test extra")
importlinter = pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]
INBOX = "intercode.sandbox.inbox"


@pytest.fixture(scope="module")
def graph() -> object:
    return grimp.build_graph("intercode", exclude_type_checking_imports=True, cache_dir=None)


def test_the_layer_contracts_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlinter.cli import lint_imports

    monkeypatch.chdir(ROOT)
    # import-linter configures logging as it starts, which disables every logger that
    # exists then: put them back, or a later test of this process sees no warning logged
    loggers = [lg for lg in logging.root.manager.loggerDict.values()
               if isinstance(lg, logging.Logger) and not lg.disabled]
    try:
        # the report (each import that breaks a contract, with its line) goes to the
        # captured output pytest shows with the failure
        assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_logo=True,
                            cache_dir=None) == 0, "an import breaks a layer contract (see above)"
    finally:
        for logger in loggers:
            logger.disabled = False


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def host_edges(graph: object) -> dict[str, set[str]]:
    def outside(name: str) -> bool:
        return not (name == INBOX or name.startswith(INBOX + "."))

    return {module: {t for t in graph.find_modules_directly_imported_by(module)  # type: ignore[attr-defined]
                     if outside(t)}
            for module in graph.modules if outside(module)}  # type: ignore[attr-defined]


def test_no_module_is_part_of_an_import_cycle(graph: object) -> None:
    found = cycles(host_edges(graph))
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
