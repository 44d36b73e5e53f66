"""What the gold cache's tests share (their fixture, ``gold_cache_dir``, is in conftest)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from intercode.envs import gold_cache


def entries(root: Path) -> list[Path]:
    """The entries of a gold cache folder (``gold_cache_dir``), sorted."""
    return sorted(root.rglob("*.json")) if root.is_dir() else []


def resealed(body: dict[str, Any]) -> str:
    """The checksum an entry with this body would carry (a forger knows the format)."""
    return hashlib.sha256(gold_cache._canonical([body["payload"], body["confirmed"]])
                          ).hexdigest()
