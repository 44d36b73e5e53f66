"""The public surface: the top-level names are pinned, and every package says what it
exports (``__all__``) with names that resolve.

A name added to or removed from ``intercode`` is a change users see: this list changes
with it, on purpose, and so does the changelog.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import intercode

TOP_LEVEL = [
    "BashEnv", "BashTask", "ConfigError", "CtfEnv", "CtfTask", "Dataset", "DatasetError",
    "EnvStateError", "IntercodeEnv", "IntercodeError", "Limits", "ObservationSpaceError",
    "PythonEnv", "PythonTask", "RewardError", "SandboxError", "SandboxUnavailableError",
    "Snapshot", "SnapshotError", "SnapshotUnsupported", "SqlEnv", "SqlLimits", "SqlTask", "Task",
    "TaskUnavailable", "__version__", "dataset_names", "load_dataset", "make",
]
# packages whose names need an optional extra to resolve
EXTRAS = {"intercode.integrations.inspectai": "inspect_ai",
          "intercode.integrations.raycluster": "ray",
          "intercode.integrations.serve": "mcp"}


def packages() -> list[str]:
    found = ["intercode"]
    for info in pkgutil.walk_packages(intercode.__path__, "intercode."):
        if info.ispkg and ".inbox" not in info.name and not info.name.endswith(".data"):
            found.append(info.name)
    return found


def test_the_top_level_names_are_the_pinned_ones() -> None:
    assert sorted(intercode.__all__) == sorted(TOP_LEVEL)
    assert sorted(set(intercode.__all__)) == sorted(intercode.__all__), "a name listed twice"


@pytest.mark.parametrize("name", packages())
def test_every_package_lists_its_exports_and_they_resolve(name: str) -> None:
    module = importlib.import_module(name)
    exports = getattr(module, "__all__", None)
    assert isinstance(exports, list), f"{name} has no __all__"
    if name in EXTRAS:
        pytest.importorskip(EXTRAS[name])
    missing = [n for n in exports if getattr(module, n, None) is None]
    assert missing == [], f"{name}.__all__ names what it does not have: {missing}"


# -- each module's surface -----------------------------------------------------------------
# Every host module lists in ``__all__`` the names the rest of the package may use; a name
# not listed is the module's own (tests may still reach it). The code that runs inside the
# sandbox (sandbox/inbox) is one program shipped whole and is left out.

SRC = Path(__file__).resolve().parents[2] / "src"
REFERENCE = re.compile(r"\b(intercode(?:\.\w+)+):(\w+)\b")


def host_modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if ".inbox" not in name and name != "intercode.__main__":
            found[name] = path
    return found


def declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "__all__":
                value = ast.literal_eval(node.value) if node.value is not None else []
                return list(value)
    return None


def uses(path: Path, modules: dict[str, Path], own: str) -> list[tuple[str, str, int]]:
    """(module, name, line) of each name this file takes from another intercode module:
    ``from m import name``, ``m.name`` through a module imported by name, and
    ``"m:name"`` references (lazy entry points, backends)."""
    text = path.read_text()
    tree = ast.parse(text)
    aliases: dict[str, str] = {}
    found: list[tuple[str, str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.startswith("intercode") and node.module != own:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                else:
                    found.append((node.module, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    aliases[alias.asname] = alias.name
    # a name the file also assigns (a local variable) is not the module
    assigned = {node.id for node in ast.walk(tree)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id not in assigned and aliases.get(node.value.id, own) != own:
            found.append((aliases[node.value.id], node.attr, node.lineno))
    for number, line in enumerate(text.splitlines(), 1):
        for module, name in REFERENCE.findall(line):
            if module in modules and module != own:
                found.append((module, name, number))
    return found


def test_every_module_lists_its_surface() -> None:
    missing = [name for name, path in host_modules().items() if declared_all(path) is None]
    assert missing == [], f"modules without __all__: {missing}"


def test_no_module_uses_a_name_another_module_keeps_to_itself() -> None:
    modules = host_modules()
    surfaces = {name: set(declared_all(path) or ()) for name, path in modules.items()}
    wrong = []
    for own, path in modules.items():
        for module, name, line in uses(path, modules, own):
            if module in surfaces and name not in surfaces[module] \
                    and f"{module}.{name}" not in modules and not name.startswith("__"):
                wrong.append(f"{path.relative_to(SRC)}:{line} uses {module}.{name}")
    assert wrong == [], "names outside their module's __all__: " + "; ".join(wrong)


def test_the_surface_check_sees_each_kind_of_use(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("from intercode.sandbox.limits import Limits, GiB\n"
                      "from intercode.sandbox import limits as lim\n"
                      "lim.MiB\n"
                      "BACKEND = 'intercode.sandbox.limits:Limits'\n")
    modules = host_modules()
    found = {(m, n) for m, n, _ in uses(source, modules, "x")}
    assert found == {("intercode.sandbox.limits", "Limits"), ("intercode.sandbox.limits", "GiB"),
                     ("intercode.sandbox.limits", "MiB")}
