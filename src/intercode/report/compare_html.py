"""The report's comparison section: every later run of a group against its first."""

from __future__ import annotations

import html
import math
from typing import Any

from intercode.errors import ConfigError
from intercode.report.compare import compare_runs
from intercode.report.runs import Run

__all__ = ["comparisons"]

SHOWN_TASKS = 60


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def p_text(group: dict[str, Any]) -> str:
    """A p-value, from its logarithm where it underflows a float."""
    p, log10 = group["mcnemar_p"], group["mcnemar_log10_p"]
    if p >= 0.001:
        return f"{p:.3f}"
    exponent = math.floor(log10)
    return f"{10 ** (log10 - exponent):.1f}e{exponent}"


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _row(name: str, g: dict[str, Any]) -> str:
    ci, rci = g["difference_ci"], g["reward_difference_ci"]
    strong = ' class="significant"' if g["mcnemar_p"] < 0.05 else ""
    return (f"<tr><th>{_esc(name)}</th><td>{g['n']}</td>"
            f"<td>{100 * g['a']['success_rate']:.1f}%</td>"
            f"<td>{100 * g['b']['success_rate']:.1f}%</td>"
            f"<td><b>{_pts(g['difference'])}</b> [{_pts(ci[0])}, {_pts(ci[1])}]</td>"
            f"<td>{g['reward_difference']:+.3f} [{rci[0]:+.3f}, {rci[1]:+.3f}]</td>"
            f"<td>{g['wins']} / {g['losses']} / {g['ties']['both']} + {g['ties']['neither']}"
            f"</td><td{strong}>{p_text(g)}</td></tr>")


def _tasks(ids: list[int], run_index: int) -> str:
    links = ", ".join(f'<a href="#t/{run_index}/{t}">{t}</a>' for t in ids[:SHOWN_TASKS])
    more = f" … and {len(ids) - SHOWN_TASKS} more" if len(ids) > SHOWN_TASKS else ""
    return (links or "none") + more


def comparison(a: Run, b: Run, index_b: int) -> str:
    """One comparison of run ``b`` (at ``index_b`` in the report) against run ``a``."""
    try:
        result = compare_runs(a, b)
    except ConfigError as exc:
        return f'<p class="muted">{_esc(a.label)} and {_esc(b.label)}: {_esc(exc)}</p>'
    conf = round(100 * result["settings"]["confidence"])
    rows = [_row("all", result["overall"])]
    rows += [_row(name, g) for name, g in result["by_category"].items()]
    notes = "".join(f"<li>{_esc(n)}</li>" for n in result["notes"])
    return (f"<h4>B = {_esc(b.label)} against A = {_esc(a.label)}</h4>"
            '<table class="compare"><thead><tr><th></th><th>tasks</th><th>A</th><th>B</th>'
            f"<th>B − A (points, {conf}% CI)</th><th>mean reward B − A</th>"
            "<th>wins / losses / ties (both + neither)</th><th>McNemar p (exact)</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p>B solved, A did not: {_tasks(result['wins'], index_b)}<br>"
            f"A solved, B did not: {_tasks(result['losses'], index_b)}</p>"
            + (f'<ul class="muted">{notes}</ul>' if notes else ""))


def comparisons(members: list[Run], indices: list[int]) -> str:
    """Every run of a group after the first, against the first ("" for a single run)."""
    if len(members) < 2:
        return ""
    body = "".join(comparison(members[0], b, i) for b, i in zip(members[1:], indices[1:],
                                                                 strict=True))
    return f"<h3>Comparison (paired by task)</h3>{body}"
