"""A run's summary (:func:`intercode.runner.summary.summarize`) as rich tables: the
headline, then success by category.

On a terminal the tables have colours; elsewhere (a log, a pipe, a test) the same
tables are plain text of a fixed width without trailing blanks, stable to grep.
"""

from __future__ import annotations

from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from intercode.console import emit, literal, plain_text

__all__ = ["format_summary", "num", "pairs_table", "print_summary", "render_summary"]

LABEL_WIDTH = len("skipped tasks")  # the longest label


def pct(x: float | None) -> str:
    """``12.5%``, or ``n/a``."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x: float | None) -> str:
    """``0.125``, or ``n/a``."""
    return "n/a" if x is None else f"{x:.3f}"


def headline_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline as (label, value) rows."""
    scored = summary.get("scored", summary["requested"])
    counts = [f"{summary['ok']} ok", f"{summary['errors']} errors"]
    if summary.get("skipped"):
        counts.append(f"{summary['skipped']} skipped")
    if summary.get("missing"):
        counts.append(f"{summary['missing']} missing")
    rows = [
        ("episodes", f"{summary['finished']}/{summary['requested']} finished: "
                     + ", ".join(counts)),
        ("success", f"{summary['success']}/{scored} = {pct(summary['success_rate'])} of the "
                    "tasks (errors and missing count as failures)"),
        ("success ok", f"{pct(summary.get('success_rate_ok'))} of the {summary['ok']} ok "
                       "episodes"),
        ("reward", f"mean {num(summary['mean_reward'])} over the tasks; "
                   f"{num(summary.get('mean_reward_ok'))} over the ok episodes"),
    ]
    if summary.get("mean_turns") is not None:
        rows.append(("turns", f"mean {summary['mean_turns']:.2f}"))
    llm = summary.get("llm")
    if llm:
        mean = llm.get("mean_latency_s")
        per_call = f" ({mean:.2f} s a call)" if mean is not None else ""
        reasoning = llm.get("reasoning_tokens")
        of_which = (f" ({reasoning:,} of them reasoning)"
                    if isinstance(reasoning, int) and not isinstance(reasoning, bool) else "")
        rows.append(("model", f"{llm['calls']:,} calls, {llm['prompt_tokens']:,} prompt + "
                              f"{llm['completion_tokens']:,} completion tokens{of_which}, "
                              f"{llm['latency_s']:.1f} s waiting{per_call}"))
    if summary.get("known_issues"):
        known = summary["known_issues"]
        rows.append(("known issues", f"{known} task{'s' if known != 1 else ''}; success "
                                     "without them "
                                     f"{pct(summary['success_rate_without_known_issues'])}"))
    if summary.get("errors"):
        rows.append(("error tasks", _tasks(summary.get("error_tasks") or [])))
    if summary.get("skipped"):
        rows.append(("skipped tasks", _tasks(summary.get("skipped_tasks") or {})
                     + " (they cannot run here; left out of the rates)"))
    return rows


def _tasks(tasks: Any, limit: int = 20) -> str:
    listed = [str(t) for t in list(tasks)[:limit]]
    more = len(tasks) - len(listed)
    return ", ".join(listed) + (f" and {more} more" if more > 0 else "")


def pairs_table(rows: list[tuple[str, str | Text]], title: str | None = None) -> Table:
    """Labels and values in two columns; a value given as text is printed literally."""
    table = Table(box=None, show_header=False, title=title, title_justify="left",
                  title_style="bold", pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True, min_width=LABEL_WIDTH)  # stable lines
    table.add_column(overflow="fold")  # paths and ids have no spaces to break at
    for label, value in rows:
        table.add_row(Text(label), value if isinstance(value, Text) else literal(value))
    return table


def headline_table(summary: dict[str, Any]) -> Table:
    """The headline: episodes, success, reward, turns, model use, known issues."""
    return pairs_table(list(headline_rows(summary)), title="Summary")


def category_table(summary: dict[str, Any]) -> Table | None:
    """Success by category (errors count as failures), or None without categories."""
    groups = summary.get("by_category") or {}
    if not groups:
        return None
    table = Table(box=box.SIMPLE_HEAD, title="By category", title_justify="left",
                  title_style="bold", pad_edge=False)
    table.add_column("category", style="cyan")
    for name in ("episodes", "errors", "success", "rate", "mean reward"):
        table.add_column(name, justify="right")
    for name, group in groups.items():
        table.add_row(literal(name), str(group["episodes"]), str(group.get("errors", 0)),
                      str(group["success"]), pct(group["success_rate"]),
                      num(group.get("mean_reward")))
    return table


def render_summary(summary: dict[str, Any], console: Console) -> None:
    """Print the summary's tables on ``console``."""
    console.print(headline_table(summary))
    table = category_table(summary)
    if table is not None:
        console.print()
        console.print(table)


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as plain text (no colours, no trailing blanks)."""
    return plain_text(lambda console: render_summary(summary, console)).rstrip("\n")


def print_summary(summary: dict[str, Any], stream: TextIO | None = None) -> None:
    """Print the summary: coloured tables on a terminal, :func:`format_summary`'s text
    elsewhere."""
    emit(lambda console: render_summary(summary, console), stream)
