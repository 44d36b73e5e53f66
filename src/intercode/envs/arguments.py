"""Checks of the environments' constructor arguments: a wrong type is a one-line
:class:`~intercode.errors.ConfigError` at construction, never a failure deep inside a
later ``reset`` (``sandbox="docker"`` where a factory belongs, a dict for ``limits``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from intercode.datasets import Dataset
from intercode.errors import ConfigError

__all__ = ["count", "dataset", "factory", "flag", "keywords", "optional"]

T = TypeVar("T")


def optional(name: str, value: T | None, kind: type[T]) -> T | None:
    """``value`` if it is None or a ``kind``, else a :class:`ConfigError`."""
    if value is not None and not isinstance(value, kind):
        raise ConfigError(f"{name} must be a {kind.__qualname__} ({kind.__module__}) or "
                          f"None, not {_show(value)}")
    return value


def flag(name: str, value: bool) -> bool:
    """``value`` if it is a bool (``"no"`` would be true)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, not {_show(value)}")
    return value


def count(name: str, value: int | None, minimum: int = 1) -> int | None:
    """``value`` if it is None or a whole number of at least ``minimum``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < minimum):
        raise ConfigError(f"{name} must be a whole number >= {minimum} or None, "
                          f"not {_show(value)}")
    return value


def factory(value: Any) -> Any:
    """``sandbox``: None or a callable that makes a sandbox from the limits. A backend's
    name there is the common mistake; the message says to pass it as ``backend``."""
    if value is None or callable(value):
        return value
    if isinstance(value, str):
        raise ConfigError(f"sandbox= takes a factory (a callable making a Sandbox from "
                          f"Limits); to choose the sandbox backend pass backend={value!r}")
    raise ConfigError(f"sandbox must be a callable making a Sandbox from Limits, or None, "
                      f"not {_show(value)}")


def keywords(name: str, cls: type, given: Mapping[str, Any],
             also: Callable[..., Any] | None = None) -> None:
    """The keywords of ``intercode.make(name, ...)``: each one the class's constructor
    (or ``also``, Gymnasium's ``make``) takes; ``sandbox="docker"`` says to pass
    ``backend``."""
    accepted = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return
    known = {k for k, p in accepted.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    known.discard("self")
    if also is not None:
        known |= set(inspect.signature(also).parameters) - {"id", "kwargs"}
    unknown = sorted(set(given) - known)
    if not unknown:
        return
    hint = ""
    if "sandbox" in unknown and isinstance(given["sandbox"], str):
        backend = "sandbox_backend" if "sandbox_backend" in accepted else "backend"
        hint = f" (the sandbox backend is chosen with {backend}={given['sandbox']!r})"
    takes = ", ".join(sorted(k for k in accepted if k != "self"))
    raise ConfigError(f"the {name} environment takes no keyword {', '.join(unknown)}{hint}; "
                      f"it takes {takes}")


def dataset(value: Any) -> None:
    """A dataset argument: a name or a loaded :class:`~intercode.datasets.Dataset`."""
    if not isinstance(value, str | Dataset):
        raise ConfigError(f"dataset must be a dataset's name or an intercode Dataset, "
                          f"not {_show(value)}")


def _show(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"
