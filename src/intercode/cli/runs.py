"""The commands that read finished runs: ``report``, ``compare``, ``show``, ``export``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from intercode.cli.argtypes import integer

__all__ = ["add_compare", "add_export", "add_report", "add_show", "cmd_compare", "cmd_export",
           "cmd_report", "cmd_show"]


def add_report(sub: Any) -> None:
    """The ``report`` sub-command's parser."""
    rp = sub.add_parser("report", help="an HTML report of one run or several (self-contained)")
    rp.add_argument("runs", nargs="+", metavar="RUN",
                    help="a run folder, its results.jsonl, or an InterCode results .json file")
    rp.add_argument("-o", "--output", default=None,
                    help="the .html file (default: RUN/report.html for one run folder, "
                         "else ./report.html)")


def add_compare(sub: Any) -> None:
    """The ``compare`` sub-command's parser."""
    cp = sub.add_parser("compare", help="compare two runs of the same tasks, task by task")
    cp.add_argument("run_a", metavar="RUN_A",
                    help="a run folder, its results.jsonl, or an InterCode result file")
    cp.add_argument("run_b", metavar="RUN_B", help="the run compared with RUN_A (B - A)")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.add_argument("--resamples", type=integer(1, 1_000_000), default=10000,
                    help="bootstrap resamples of the tasks (10000)")
    cp.add_argument("--seed", type=integer(0), default=0, help="bootstrap seed (0)")


def add_show(sub: Any) -> None:
    """The ``show`` sub-command's parser."""
    sh = sub.add_parser("show", help="a run's summary, or one episode's transcript")
    sh.add_argument("run", help="a run folder, its results.jsonl, or an InterCode results "
                                "file (.json)")
    sh.add_argument("--task", type=integer(0), default=None,
                    help="show this task's episode: what the model saw, its replies, the "
                         "actions and observations")
    sh.add_argument("--json", action="store_true",
                    help="print the summary (or the episode's record) as JSON")


def add_export(sub: Any) -> None:
    """The ``export`` sub-command's parser."""
    ex = sub.add_parser("export", help="write a run in another tool's format")
    ex.add_argument("format", choices=["inspect"],
                    help="inspect: an Inspect AI log (.eval), for inspect view")
    ex.add_argument("run", help="a run folder, its results.jsonl, or an InterCode results "
                                "file (.json)")
    ex.add_argument("-o", "--output", required=True, help="the log file (FILE.eval)")


def cmd_report(args: argparse.Namespace) -> int:
    """``intercode report``."""
    from intercode.report.build import write_report

    path = write_report(args.runs, args.output)
    print(f"report     {path}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``intercode compare``."""
    from intercode.report.compare import compare_runs
    from intercode.report.compare_view import print_comparison
    from intercode.report.runs import load_run

    result = compare_runs(load_run(args.run_a), load_run(args.run_b),
                          resamples=args.resamples, seed=args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_comparison(result)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """``intercode show``."""
    from intercode.report.show import show

    show(args.run, task=args.task, as_json=args.json)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """An intercode run as an Inspect log."""
    from intercode.integrations.inspectai import require

    require("intercode export inspect")
    from intercode.integrations.inspectai.export import export_run

    path = export_run(args.run, args.output)
    print(f"wrote {path}")
    return 0
