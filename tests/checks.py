"""The lint and type checks as the tests run them: ``scripts/check`` with this interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check_command(what: str) -> list[str]:
    """``scripts/check WHAT`` (``ruff`` or ``mypy``) run with the tests' Python."""
    return ["env", f"PYTHON={sys.executable}", str(ROOT / "scripts" / "check"), what]
