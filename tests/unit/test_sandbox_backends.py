"""The sandbox backends share the neutral sandbox modules and nothing of each other.

Each backend is one package under ``intercode/sandbox/`` (``bwrap/``, ``docker/``): it
may import the neutral modules (``intercode.sandbox.supervisor``, ``channel``,
``layout`` ...) and its own package, never another backend's. The sandbox layer imports
nothing above it, and its modules import each other without cycles.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SANDBOX = Path(__file__).resolve().parents[2] / "src" / "intercode" / "sandbox"
BACKENDS = ("bwrap", "docker")
# what the sandbox layer may import of intercode besides itself (the layer below it, as
# pyproject's [tool.importlinter] lists it)
BELOW = ("intercode.errors", "intercode.lazy", "intercode.safeio", "intercode.fsutil",
         "intercode.terminal", "intercode.console", "intercode.plugins", "intercode.import_hook")


def _module_name(path: Path) -> str:
    if not path.is_relative_to(SANDBOX):
        return path.stem
    parts = path.relative_to(SANDBOX.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The intercode modules ``path`` imports (at the top or inside a function), each
    name of a ``from package import name`` counted as ``package.name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("intercode")}


def host_modules() -> list[Path]:
    """The sandbox layer's host-side modules (the in-sandbox inbox excluded)."""
    return sorted(p for p in SANDBOX.rglob("*.py") if "inbox" not in p.relative_to(SANDBOX).parts)


def _backend_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) > 2 and parts[:2] == ["intercode", "sandbox"] and parts[2] in BACKENDS:
        return parts[2]
    return None


def test_the_backends_are_packages():
    for backend in BACKENDS:
        assert (SANDBOX / backend / "__init__.py").is_file(), backend
        assert not (SANDBOX / f"{backend}.py").exists(), backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_imports_no_other_backend(backend):
    wrong = []
    for path in sorted((SANDBOX / backend).rglob("*.py")):
        for name in imports_of(path):
            other = _backend_of(name)
            if other is not None and other != backend:
                wrong.append(f"{path.relative_to(SANDBOX)} imports {name}")
    assert not wrong, wrong


def test_the_neutral_modules_import_no_backend():
    neutral = [p for p in host_modules() if p.relative_to(SANDBOX).parts[0] not in BACKENDS]
    wrong = [f"{path.relative_to(SANDBOX)} imports {name}" for path in neutral
             for name in imports_of(path) if _backend_of(name) is not None]
    assert not wrong, wrong


def test_the_sandbox_layer_imports_nothing_above_it():
    wrong = [f"{path.relative_to(SANDBOX)} imports {name}" for path in host_modules()
             for name in imports_of(path)
             if not name.startswith("intercode.sandbox")
             and not any(name == ok or name.startswith(ok + ".") for ok in BELOW)]
    assert not wrong, wrong


def test_no_import_cycles_inside_the_sandbox_layer():
    modules = {_module_name(p): p for p in host_modules()}
    graph = {name: {dep for dep in imports_of(path) if dep in modules and dep != name}
             for name, path in modules.items()}
    # a package's __init__ importing its own submodules is how it exports them
    for name in graph:
        if modules[name].name == "__init__.py":
            graph[name] = {dep for dep in graph[name] if not dep.startswith(name + ".")}
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(name: str, path: list[str]) -> None:
        seen[name] = 1
        for dep in sorted(graph[name]):
            if seen.get(dep) == 1:
                pytest.fail("import cycle: " + " -> ".join([*path[path.index(dep):], dep]))
            if dep not in seen:
                visit(dep, [*path, dep])
        seen[name] = 2

    for name in sorted(graph):
        if name not in seen:
            visit(name, [name])


def test_the_checks_see_a_backend_importing_another(tmp_path):
    """The import reader counts every spelling of an import of another backend."""
    probe = tmp_path / "probe.py"
    probe.write_text("from intercode.sandbox.bwrap import sandbox\n"
                     "def f():\n    import intercode.sandbox.docker.engine\n"
                     "from intercode.sandbox import bwrap\n")
    names = imports_of(probe)
    assert {"intercode.sandbox.bwrap.sandbox", "intercode.sandbox.docker.engine",
            "intercode.sandbox.bwrap"} <= names
    assert {_backend_of(n) for n in names} >= {"bwrap", "docker"}
