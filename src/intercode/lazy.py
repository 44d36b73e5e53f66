"""Names a package exports, each imported on first use (PEP 562).

``import intercode`` (and so the command line) then loads only what is used: the
environments and datasets bring Gymnasium and numpy, which most commands never need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict[str, Any], where: Mapping[str, Iterable[str]]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for the names ``where`` lists by module
    (``{"intercode.envs.bash": ["BashEnv"]}``); ``namespace`` is the package's globals(),
    where each name is kept once imported."""
    home = {name: module for module, names in where.items() for name in names}
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value  # the next lookup is a plain one
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *home})

    return __getattr__, __dir__
