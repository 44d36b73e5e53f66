"""Python inside CTF sandboxes: ``Crypto`` where the root file system only has ``Cryptodome``.

Upstream's CTF image installed pycryptodome with pip, so task scripts (and agents)
write ``from Crypto.Util.number import ...``. Debian and Ubuntu package the same
library as ``Cryptodome`` (``python3-pycryptodome``). When the sandbox's Python has
``Cryptodome`` but no ``Crypto``, a small package placed on ``PYTHONPATH`` makes every
``Crypto.X`` the very module ``Cryptodome.X`` (one copy, not a second import).
"""

from __future__ import annotations

from pathlib import Path

from intercode.sandbox.filetree import DIR, FILE, Entry
from intercode.sandbox.layout import EPOCH_NS

__all__ = ["ALIAS_DIR", "alias_entries", "needs_crypto_alias"]

ALIAS_DIR = "opt/intercode/python"

ALIAS_SOURCE = '''"""``Crypto`` is ``Cryptodome`` here (Debian packages pycryptodome so)."""
import importlib
import importlib.abc
import importlib.util
import sys

_REAL = "Cryptodome"
_ALIAS = __name__


class _Loader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real
        self.spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.real)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if not name.startswith(_ALIAS + "."):
            return None
        real = _REAL + name[len(_ALIAS):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(name, _Loader(real))


sys.meta_path.insert(0, _Finder())
sys.modules[_ALIAS] = importlib.import_module(_REAL)
'''

# where the sandbox's Python finds packages (/usr/local is hidden in sandboxes)
_PYTHON_DIRS = ("usr/lib/python3/dist-packages", "usr/lib/python3*/site-packages",
                "usr/lib/python3*/dist-packages")


def _has_package(rootfs: Path, name: str) -> bool:
    for pattern in _PYTHON_DIRS:
        for folder in rootfs.glob(pattern):
            if (folder / name / "__init__.py").is_file():
                return True
    return False


def needs_crypto_alias(rootfs: Path) -> bool:
    """Whether the root file system's Python has ``Cryptodome`` but no ``Crypto``."""
    return _has_package(rootfs, "Cryptodome") and not _has_package(rootfs, "Crypto")


def alias_entries() -> list[Entry]:
    """The ``Crypto`` alias package, as file-tree entries under ``/opt/intercode/python``."""
    entries = []
    parts = ALIAS_DIR.split("/")
    for i in range(1, len(parts) + 1):
        entries.append(Entry("/".join(parts[:i]), DIR, 0o755, EPOCH_NS))
    entries.append(Entry(f"{ALIAS_DIR}/Crypto", DIR, 0o755, EPOCH_NS))
    entries.append(Entry(f"{ALIAS_DIR}/Crypto/__init__.py", FILE, 0o644, EPOCH_NS,
                         ALIAS_SOURCE.encode()))
    return entries
