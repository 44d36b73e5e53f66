"""Workers run one version of intercode, or say that its files changed.

A fork server imports the modules every worker needs once (see ``preload``); a worker
imports the others when it first needs them, from the files as they are then. An
upgrade (or an edit of a checkout) in the middle of a long run would make such a
worker mix two versions: new modules calling what the old ones lack, an
``AttributeError`` in every episode. :func:`freeze` notes each of the package's files
(inode, time, size) when the server starts; an import of one of them that changed
since, or of one that was not there, raises :class:`CodeChanged`, whose message says to
start the run again (in a new process).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

__all__ = ["CodeChanged", "freeze"]

Stamp = tuple[int, int, int]


class CodeChanged(ImportError):
    """A module's file changed after the run started."""


def _stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class _Guard:  # a sys.meta_path finder (importlib.abc costs 10 ms to import)
    def __init__(self, prefix: str, root: Path) -> None:
        self.prefix = prefix
        self.root = str(root)
        self.stamps: dict[str, Stamp | None] = {}
        for folder, _, files in os.walk(root):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    self.stamps[path] = _stamp(path)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != self.prefix and not fullname.startswith(self.prefix + "."):
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        origin = None if spec is None else spec.origin
        if origin is not None and origin.startswith(self.root) and origin.endswith(".py") \
                and (origin not in self.stamps or _stamp(origin) != self.stamps[origin]):
            raise CodeChanged(f"{fullname}: the files of {self.prefix} changed after this "
                              "run started (an upgrade or an edit); start the run again, in a "
                              "new process, to use the new version")
        return spec


def freeze(prefix: str = "intercode", root: Path | None = None) -> None:
    """Note the files of package ``prefix`` (at ``root``: the package's folder, by
    default) and refuse, from now on, to import any of them that changed (idempotent)."""
    if any(isinstance(f, _Guard) and f.prefix == prefix for f in sys.meta_path):
        return
    if root is None:
        module = sys.modules[prefix]
        root = Path(next(iter(module.__path__)))
    sys.meta_path.insert(0, _Guard(prefix, root))
