"""``intercode validate``: check that every gold solution of a dataset scores 1.0."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from intercode.cli.argtypes import integer
from intercode.cli.options import MAX_WORKERS, add_env_options, dataset, settings

__all__ = ["add_validate", "cmd_validate"]


def add_validate(sub: Any) -> None:
    """The ``validate`` sub-command's parser."""
    va = sub.add_parser("validate", help="check that every gold solution scores 1.0")
    add_env_options(va)
    va.add_argument("--workers", type=integer(1, MAX_WORKERS), default=2)
    va.add_argument("--output", default=None, help="also keep the run folder here")
    va.add_argument("--json", action="store_true", help="print the report as JSON")
    va.add_argument("--baseline", action="store_true",
                    help="also show what doing nothing (submitting at once) earns per task and "
                         "on the dataset, under the paper's reward")


def cmd_validate(args: argparse.Namespace) -> int:
    """``intercode validate``."""
    from intercode.validate import format_report, validate

    report = validate(args.env, dataset(args), workers=args.workers,
                      output=Path(args.output) if args.output is not None else None,
                      settings=settings(args), baseline=args.baseline)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0 if not report["unexpected"] else 1
