"""The public surface: the top-level names are pinned, and every package says what it
exports (``__all__``) with names that resolve.

A name added to or removed from ``intercode`` is a change users see: this list changes
with it, on purpose, and so does the changelog.
"""

from __future__ import annotations

import importlib
import pkgutil

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
