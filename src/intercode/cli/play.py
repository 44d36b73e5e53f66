"""``intercode play``: be the agent of one task at this terminal."""

from __future__ import annotations

import argparse
from typing import Any

from intercode.benchmarks import get
from intercode.cli.argtypes import integer
from intercode.cli.options import add_env_options, limits

__all__ = ["add_play", "cmd_play"]


def add_play(sub: Any) -> None:
    """The ``play`` sub-command's parser."""
    pl = sub.add_parser("play", help="be the agent: type commands, then submit")
    add_env_options(pl)
    pl.add_argument("--task", type=integer(0), default=None, help="task index (default: random)")


def cmd_play(args: argparse.Namespace) -> int:
    """``intercode play``."""
    from intercode.play import play

    benchmark = get(args.env)
    dataset = args.dataset or benchmark.play_dataset or benchmark.default_dataset
    return play(args.env, dataset, args.task, limits(args), backend=args.backend,
                mysql_url=args.mysql_url, network=args.network)
