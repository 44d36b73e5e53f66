"""intercode inside Inspect AI: tasks, a scorer and a sandbox provider.

``inspect eval intercode/sql --model ...`` finds the tasks through Inspect's entry point
(``intercode.integrations.inspectai._registry``). Only the modules that need it import
``inspect_ai``;
this package itself does not, and :func:`require` turns a missing install into one line.
"""

from __future__ import annotations

from intercode.errors import ConfigError

INSTALL_HINT = "pip install 'intercode[inspect]'"


def require(what: str = "this") -> None:
    """Raise a one-line :class:`ConfigError` if inspect-ai is not installed."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what} needs inspect-ai: {INSTALL_HINT}") from None


_EXPORTS = {"intercode_task": "intercode.integrations.inspectai.tasks",
            "intercode_scorer": "intercode.integrations.inspectai.scorer",
            "try_again": "intercode.integrations.inspectai.solvers",
            "react_agent": "intercode.integrations.inspectai.solvers"}

__all__ = ["INSTALL_HINT", "intercode_scorer", "intercode_task", "react_agent", "require",
           "try_again"]


def __getattr__(name: str) -> object:
    """The Inspect objects, imported on first use (one line if inspect-ai is missing)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'intercode.integrations.inspectai' has no attribute {name!r}")
    require(f"intercode.integrations.inspectai.{name}")
    from importlib import import_module

    return getattr(import_module(module), name)
