"""``intercode datasets``: list the datasets of every environment (or of one)."""

from __future__ import annotations

import argparse
from typing import Any

from intercode.benchmarks import benchmarks, get

__all__ = ["add_datasets", "cmd_datasets"]


def add_datasets(sub: Any) -> None:
    """The ``datasets`` sub-command's parser."""
    ds = sub.add_parser("datasets", help="list the datasets")
    ds.add_argument("env", nargs="?", default=None)


def cmd_datasets(args: argparse.Namespace) -> int:
    """``intercode datasets``."""
    if args.env is not None:
        get(args.env)  # an unknown environment: one line
    rows = [(name, benchmark.name) for benchmark in benchmarks()
            if args.env is None or benchmark.name == args.env for name in benchmark.datasets]
    width = max([16, *(len(name) for name, _ in rows)])
    for name, env in rows:
        print(f"{name:{width}s} {env}")
    return 0
