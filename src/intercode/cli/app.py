"""The ``intercode`` command: its parser, made of the sub-commands' own, and ``main``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# only what building the parser needs: each command imports its own dependencies (the
# environments bring Gymnasium and numpy; `intercode --help` must not pay for them)
from intercode.cli import agent_options, options
from intercode.cli.argtypes import Parser
from intercode.cli.datasets import add_datasets, cmd_datasets
from intercode.cli.doctor import add_doctor, cmd_doctor
from intercode.cli.evaluate import add_eval, cmd_eval
from intercode.cli.image import add_image, cmd_image
from intercode.cli.play import add_play, cmd_play
from intercode.cli.runs import (
    add_compare,
    add_export,
    add_report,
    add_show,
    cmd_compare,
    cmd_export,
    cmd_report,
    cmd_show,
)
from intercode.cli.serve import add_serve, cmd_serve
from intercode.cli.validate import add_validate, cmd_validate
from intercode.errors import ConfigError, IntercodeError

__all__ = ["build_parser", "main"]

# what `intercode --help` opens with: for users (the module docstrings are for developers)
DESCRIPTION = (
    "intercode runs interactive coding tasks for language-model agents: Bash, SQL (SQLite "
    "or MariaDB), Python (MBPP) and capture-the-flag, each in a sandbox and scored "
    "against the task's reference solution. `eval` runs an agent on a dataset, `play` lets "
    "you be the agent, `validate` checks that the gold solutions score 1.0, `report`, "
    "`compare` and `show` read runs, `serve` hands the environments to agents and "
    "trainers (MCP, OpenEnv), and `doctor` checks that this machine can run the "
    "sandboxes. Without a command, `eval` runs.")

# the sub-commands, in the order `intercode --help` lists them: (name, add its parser, run it)
AddParser = Callable[[Any], None]  # given the sub-parsers action
Run = Callable[[argparse.Namespace], int]
COMMANDS: tuple[tuple[str, AddParser, Run], ...] = (
    ("eval", add_eval, cmd_eval),
    ("validate", add_validate, cmd_validate),
    ("play", add_play, cmd_play),
    ("report", add_report, cmd_report),
    ("compare", add_compare, cmd_compare),
    ("show", add_show, cmd_show),
    ("serve", add_serve, cmd_serve),
    ("export", add_export, cmd_export),
    ("doctor", add_doctor, cmd_doctor),
    ("image", add_image, cmd_image),
    ("datasets", add_datasets, cmd_datasets),
)
RUNS = {name: run for name, _, run in COMMANDS}
# the commands that start an environment: the shared options are checked before they run
ENV_COMMANDS = ("eval", "validate", "play", "serve")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = Parser(prog="intercode", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command")
    for _, add, _ in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    # `intercode ... | head` ends quietly; restored after, for callers in the same process
    previous = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGPIPE, previous)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    command = args.command or "eval"
    if args.command is None:
        args = parser.parse_args(["eval", *(argv or [])])
    try:
        if command in ENV_COMMANDS:
            if command == "serve":  # ENV or --env ENV
                options.chosen_env(args)
            _choose_rootfs(args.rootfs)
            options.refuse_inapplicable(args)
            agent_options.refuse_inapplicable(args)
            _check_output(args)
            args.backend = args.backend or "sqlite"
            args.network = "host" if args.host_network else bool(args.network)
            if args.network:
                from intercode.sandbox import require_network

                # slirp4netns missing: one line, not per task
                require_network(args.network, args.sandbox)
        return RUNS[command](args)
    except IntercodeError as exc:
        print(f"intercode: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the machine, not a bug: one line (the traceback with -v)
        logging.getLogger("intercode").debug("traceback", exc_info=True)
        print(f"intercode: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nintercode: interrupted; finished episodes are saved", file=sys.stderr)
        return 130


def _choose_rootfs(choice: str | None) -> None:
    """``--rootfs``: what ``INTERCODE_ROOTFS`` says for this process and its workers."""
    if choice is None:
        return
    if choice not in ("pinned", "host", "/"):
        root = Path(choice).expanduser()
        if not (root / "usr").is_dir() or not (root / "etc").is_dir():
            raise ConfigError(f"--rootfs {choice}: not a root file system (no usr/ and etc/); "
                              "use pinned, host or a prepared root directory")
        choice = str(root.resolve())
    os.environ["INTERCODE_ROOTFS"] = choice


def _check_output(args: argparse.Namespace) -> None:
    output = getattr(args, "output", None)
    if output is not None and not output.strip():
        raise ConfigError("--output must not be empty (name a run folder)")
