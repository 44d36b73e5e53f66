"""``intercode doctor``: check that this machine can run the sandboxes."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_doctor", "cmd_doctor"]


def add_doctor(sub: Any) -> None:
    """The ``doctor`` sub-command's parser."""
    sub.add_parser("doctor", help="check that this machine can run the sandboxes")


def cmd_doctor(args: argparse.Namespace) -> int:
    """``intercode doctor``."""
    from intercode.doctor import run_doctor

    return run_doctor()
