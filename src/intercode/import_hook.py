"""Run a function right after a module is first imported (a post-import hook).

``import intercode`` must register the environments with Gymnasium (``gym.make(
"intercode/bash-v0")``) without importing Gymnasium and numpy itself: the command line
needs neither for most of its commands. :func:`when_imported` calls the registration at
once if Gymnasium is already loaded, else right after Gymnasium's own import finishes.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["when_imported"]

_lock = threading.Lock()


class _Watcher:  # a sys.meta_path finder (importlib.abc costs 10 ms to import)
    """Finds ``name`` with the other finders and has its loader call ``callback`` after
    executing it; it leaves ``sys.meta_path`` on its first use."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        with _lock:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        loader: Any = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec  # not found (the import fails as it would have), or an odd loader
        original = loader.exec_module
        callback = self.callback

        def exec_module(module: ModuleType) -> None:
            try:
                original(module)
            finally:
                try:
                    del loader.exec_module  # the loader object is this module's alone
                except AttributeError:
                    pass
            _call(callback)

        loader.exec_module = exec_module
        return spec


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception as exc:  # the host's import must not fail because of intercode
        warnings.warn(f"intercode: {getattr(callback, '__name__', callback)} failed after "
                      f"the import it waited for: {type(exc).__name__}: {exc}", stacklevel=2)


def when_imported(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` now if module ``name`` is loaded, else right after its import."""
    if name in sys.modules:
        callback()
        return
    with _lock:
        sys.meta_path.insert(0, _Watcher(name, callback))
