"""``intercode report``: one self-contained HTML file for one run or several.

Everything is inline (styles, the page script, the plots as SVG, the data as gzipped
JSON), so the file opens from disk or a CI artifact with no network. The headline
tables, the plots and the error list are plain HTML; the episode table, its filters and
the transcripts are drawn by the page script from the embedded data. Agent text
(actions, outputs, replies) only ever reaches the page as data the script puts in with
``textContent``; everything written here goes through :func:`html.escape`.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from intercode.report import plots
from intercode.report.compare_html import comparisons
from intercode.report.payload import build_payload, pack
from intercode.report.runs import Run
from intercode.version import __version__

__all__ = ["render"]

CONFIG_KEYS = ("env", "dataset", "agent", "max_turns", "workers", "sql_backend",
               "upstream_quirks", "dataset_revision", "intercode_version", "git_revision",
               "created_at", "source_file")

Section = Callable[[list[Run]], str]


def esc(value: Any) -> str:
    """Text as HTML."""
    return html.escape("" if value is None else str(value), quote=True)


def _asset(name: str) -> str:
    return resources.files("intercode.report").joinpath("assets", name).read_text("utf-8")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def groups(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """Runs grouped by environment and dataset, in the order given."""
    out: dict[str, list[Run]] = {}
    for run in runs:
        out.setdefault(f"{run.env} · {run.dataset}", []).append(run)
    return list(out.items())


def wall_time(run: Run) -> float | None:
    """Seconds from the first episode's start to the last one's end."""
    spans = []
    for rec in run.records.values():
        try:
            start = dt.datetime.fromisoformat(str(rec["started_at"])).timestamp()
        except (KeyError, ValueError, TypeError):
            continue
        spans.append((start, start + float(rec.get("duration_s") or 0)))
    if not spans:
        return None
    return max(e for _, e in spans) - min(s for s, _ in spans)


def headline(runs: list[Run], summaries: list[dict[str, Any]]) -> str:
    """The headline table of a group: a column per run."""
    def row(name: str, cells: list[str], hint: str = "") -> str:
        title = f' title="{esc(hint)}"' if hint else ""
        return (f"<tr><th{title}>{esc(name)}</th>"
                + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")

    rows = []
    rows.append(row("agent", [esc(r.agent) for r in runs]))
    rows.append(row("episodes", [
        f"{s['finished']}/{s['requested']} finished · {s['ok']} ok · {s['errors']} errors"
        + (f" · {s['skipped']} skipped" if s.get("skipped") else "") for s in summaries]))
    rows.append(row("success (all tasks)", [
        f"<b>{_pct(s['success_rate'])}</b> ({s['success']}/{s.get('scored', s['requested'])})"
        for s in summaries], "errors and tasks without a record count as failures"))
    rows.append(row("success (ok episodes)", [_pct(s.get("success_rate_ok")) for s in summaries]))
    rows.append(row("mean reward", [_num(s["mean_reward"]) for s in summaries]))
    rows.append(row("errors", [str(s["errors"]) for s in summaries],
                    "infrastructure faults; never a reward of 0"))
    rows.append(row("mean turns", [_num(s.get("mean_turns"), 2) for s in summaries]))
    if any(s.get("known_issues") for s in summaries):
        rows.append(row("without known issues", [
            _pct(s.get("success_rate_without_known_issues")) for s in summaries]))

    def llm(s: dict[str, Any], key: str) -> str:
        total = s.get("llm") or {}
        return "–" if not total else f"{total.get(key) or 0:,}"

    rows.append(row("model calls", [llm(s, "calls") for s in summaries]))
    rows.append(row("tokens (prompt + completion)", [
        "–" if not s.get("llm") else
        f"{s['llm']['prompt_tokens']:,} + {s['llm']['completion_tokens']:,}" for s in summaries]))
    rows.append(row("model time", [
        "–" if not s.get("llm") else f"{s['llm']['latency_s']:.1f} s" for s in summaries]))
    rows.append(row("wall time", ["–" if (w := wall_time(r)) is None else f"{w:.0f} s"
                                  for r in runs], "first episode's start to last one's end"))
    rows.append(row("dataset revision", [esc(r.config.get("dataset_revision") or "–")
                                         for r in runs]))
    rows.append(row("configuration", [_config(r) for r in runs]))
    head = "".join(f"<th>{esc(r.label)}</th>" for r in runs)
    return (f'<table class="headline"><thead><tr><th></th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _config(run: Run) -> str:
    if not run.config:
        return "unknown"
    shown = {k: run.config[k] for k in CONFIG_KEYS if run.config.get(k) is not None}
    model = run.config.get("model")
    if isinstance(model, dict):
        shown["model"] = {k: v for k, v in model.items() if v is not None}
    brief = ", ".join(f"{k}={v}" for k, v in shown.items() if k in ("max_turns", "workers"))
    return (f"<details><summary>{esc(brief or 'settings')}</summary><pre>"
            f"{esc(json.dumps(run.config, indent=1, default=str))}</pre></details>")


def figures(runs: list[Run], summaries: list[dict[str, Any]]) -> str:
    """The paper's plots for a group."""
    svgs = [plots.success_by_turns(runs, summaries),
            plots.success_by_category(runs, summaries),
            plots.reward_distribution(runs), plots.turns_distribution(runs)]
    return '<div class="plots">' + "".join(
        f'<figure class="plot">{svg}</figure>' for svg in svgs if svg) + "</div>"


def error_list(runs: list[Run]) -> str:
    """Every errored episode with its reason and known issue."""
    rows = []
    for i, run in enumerate(runs):
        for task, rec in sorted(run.records.items()):
            if rec.get("status") != "error":
                continue
            rows.append(f'<tr><td>{esc(run.label)}</td><td><a href="#t/{i}/{task}">{task}</a>'
                        f"</td><td class=\"text\">{esc(rec.get('error'))}</td>"
                        f"<td>{esc(rec.get('known_issue') or '')}</td></tr>")
    if not rows:
        return "<p>No episode ended in an infrastructure error.</p>"
    return ('<table class="errors"><thead><tr><th>run</th><th>task</th><th>reason</th>'
            f"<th>known issue</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def notes(runs: list[Run]) -> str:
    """What is missing or was left out of each run."""
    items = [f"<li><b>{esc(r.label)}</b>: {esc(n)}</li>" for r in runs for n in r.notes]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def render(runs: list[Run], extra_sections: list[tuple[str, Section]] | None = None) -> str:
    """The whole page."""
    parts = []
    for name, members in groups(runs):
        summaries = [r.summary() for r in members]
        indices = [next(i for i, r in enumerate(runs) if r is m) for m in members]
        parts.append(f'<section class="group"><h2>{esc(name)}</h2>'
                     f"{headline(members, summaries)}{figures(members, summaries)}"
                     f"{comparisons(members, indices)}")
        for title, section in extra_sections or []:
            body = section(members)
            if body:
                parts.append(f"<h3>{esc(title)}</h3>{body}")
        parts.append("</section>")
    title = "intercode report: " + ", ".join(r.label for r in runs)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return _asset("report.html").format(
        title=esc(title), style=_asset("report.css"), script=_asset("report.js"),
        generated=esc(f"generated {stamp} by intercode {__version__}"),
        notes=notes(runs), groups="".join(parts), errors=error_list(runs),
        data=pack(build_payload(runs)))
