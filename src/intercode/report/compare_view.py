"""``intercode compare`` in the terminal: a comparison (``compare.compare_runs``) as
tables, coloured on a terminal and plain text otherwise."""

from __future__ import annotations

import io
import math
import sys
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["print_comparison"]

SHOWN_TASKS = 20  # task ids listed for the wins and for the losses


def print_comparison(result: dict[str, Any], out: TextIO | None = None) -> None:
    """Print a comparison: who A and B are, the headline, by category, the tasks won
    and lost, and the notes."""
    out = out or sys.stdout
    if out.isatty():
        _render(result, Console(file=out, highlight=False, soft_wrap=True))
        return
    plain = io.StringIO()  # plain text: no colours, no trailing blanks
    _render(result, Console(file=plain, highlight=False, soft_wrap=True, width=120,
                            color_system=None))
    out.write("".join(line.rstrip() + "\n" for line in plain.getvalue().splitlines()))


def _render(result: dict[str, Any], console: Console) -> None:
    overall = result["overall"]
    level = f"{100 * result['settings']['confidence']:g}%"
    console.print(Text(f"{result['env']} / {result['dataset']}: {overall['n']} paired tasks",
                       style="bold"))
    for which in ("a", "b"):
        side = result[which]
        console.print(Text.assemble((f"  {which.upper()}  ", "bold"), side["label"],
                                    f"  {side['agent']}", (f"  {side['path']}", "dim")))
    console.print()
    console.print(_headline(overall, level))
    console.print(_outcomes_line(overall))
    if result["by_category"]:
        console.print(_by_category(result, level))
    console.print()
    for name, tasks in (("wins  ", result["wins"]), ("losses", result["losses"])):
        shown = ", ".join(str(t) for t in tasks[:SHOWN_TASKS])
        more = f", ... ({len(tasks) - SHOWN_TASKS} more)" if len(tasks) > SHOWN_TASKS else ""
        console.print(Text.assemble((name, "bold"), f"  tasks {shown}{more}" if tasks
                                    else "  none"))
    for note in result["notes"]:
        console.print(Text(f"note: {note}", style="dim"))


def _headline(group: dict[str, Any], level: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name in ("", "A", "B", "B - A", f"{level} CI", "McNemar p"):
        table.add_column(name, justify="left" if not name else "right")
    table.add_row("success", _solved(group["a"]), _solved(group["b"]),
                  _points(group["difference"]), _interval(group["difference_ci"], _points),
                  _p(group))
    table.add_row("mean reward", f"{group['a']['mean_reward']:.3f}",
                  f"{group['b']['mean_reward']:.3f}", _signed(group["reward_difference"]),
                  _interval(group["reward_difference_ci"], _signed), "")
    return table


def _outcomes_line(group: dict[str, Any]) -> Text:
    ties = group["ties"]
    return Text(f"wins {group['wins']} (B solved, A did not), losses {group['losses']} "
                f"(A solved, B did not), ties {ties['both'] + ties['neither']} "
                f"({ties['both']} both solved, {ties['neither']} neither)")


def _by_category(result: dict[str, Any], level: str) -> Table:
    table = Table(title="\nby category", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False)
    for name in ("category", "n", "A", "B", "B - A", f"{level} CI", "McNemar p", "wins",
                 "losses", "ties"):
        table.add_column(name, justify="left" if name == "category" else "right")
    groups = [*result["by_category"].items(), ("all", result["overall"])]
    for name, group in groups:
        table.add_row(name, str(group["n"]), _percent(group["a"]["success_rate"]),
                      _percent(group["b"]["success_rate"]), _points(group["difference"]),
                      _interval(group["difference_ci"], _points), _p(group),
                      str(group["wins"]), str(group["losses"]),
                      str(group["ties"]["both"] + group["ties"]["neither"]),
                      end_section=name == groups[-2][0])
    return table


def _solved(side: dict[str, Any]) -> str:
    return f"{side['success']} ({_percent(side['success_rate'])})"


def _percent(rate: float) -> str:
    return f"{100 * rate:.1f}%"


def _points(diff: float) -> Text:
    """A difference of rates in percentage points, green up, red down."""
    style = "green" if diff > 0 else "red" if diff < 0 else ""
    return Text(f"{100 * diff:+.1f} pts", style=style)


def _signed(diff: float) -> Text:
    style = "green" if diff > 0 else "red" if diff < 0 else ""
    return Text(f"{diff:+.3f}", style=style)


def _interval(ci: list[float], fmt: Any) -> str:
    low, high = (fmt(x).plain.replace(" pts", "") for x in ci)
    return f"[{low}, {high}]"


def _p(group: dict[str, Any]) -> Text:
    """The p-value, bold below 0.05; from its logarithm where it underflows a float."""
    p, log10 = group["mcnemar_p"], group["mcnemar_log10_p"]
    if p >= 0.001:
        text = f"{p:.3f}"
    else:
        exponent = math.floor(log10)
        text = f"{10 ** (log10 - exponent):.1f}e{exponent}"
    return Text(text, style="bold" if p < 0.05 else "dim")
