"""The paper's figures for a group of runs, drawn by matplotlib as inline SVG.

Success rate against the number of turns (one line per run), success by category,
the reward distribution and the distribution of turns. Figures are built with
:class:`matplotlib.figure.Figure` (no pyplot: no global state, no display needed).
"""

from __future__ import annotations

import io
from typing import Any

from intercode.errors import ConfigError
from intercode.report.runs import Run

__all__ = ["reward_distribution", "success_by_category", "success_by_turns", "turns_distribution"]

# the order a category axis follows when it holds these names
CATEGORY_ORDER = ["easy", "medium", "hard", "extra"]
WIDTH, HEIGHT = 6.4, 3.4


def _figure() -> Any:
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError("the report's plots need matplotlib: pip install "
                          "'intercode[report]'") from exc
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "intercode",
                                "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False})
    fig = Figure(figsize=(WIDTH, HEIGHT), layout="constrained")
    return fig, fig.add_subplot()


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]  # the XML prolog and doctype are not HTML


def success_by_turns(runs: list[Run], summaries: list[dict[str, Any]]) -> str:
    """Share of the tasks solved within n turns, one line per run."""
    fig, ax = _figure()
    longest = 1
    for run, summary in zip(runs, summaries, strict=True):
        curve = summary.get("success_by_turn") or {}
        if not curve:
            continue
        xs = sorted(int(n) for n in curve)
        longest = max(longest, xs[-1])
        # not clipped: a point at 100 % (a one-turn run's only point) sits on the edge
        ax.plot(xs, [100 * curve[str(n)] for n in xs], marker="o",
                markersize=3 if len(xs) > 1 else 6, label=run.label, clip_on=False)
    ax.set_xlabel("turns")
    ax.set_ylabel("success rate (%)")
    ax.set_xlim(0.5, longest + 0.5)
    _whole_numbers(ax.xaxis)
    ax.set_ylim(0, 104)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Success rate against turns")
    return _svg(fig)


def _whole_numbers(axis: Any) -> None:
    """Ticks at whole numbers only (turns are counted)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _ordered(names: set[str]) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in names]
    return known + sorted(names - set(known))


def success_by_category(runs: list[Run], summaries: list[dict[str, Any]]) -> str | None:
    """Success rate per category, a bar per run in each group (None without categories)."""
    names = _ordered({c for s in summaries for c in s.get("by_category") or {}})
    if not names:
        return None
    fig, ax = _figure()
    width = 0.8 / len(runs)
    for i, (run, summary) in enumerate(zip(runs, summaries, strict=True)):
        groups = summary.get("by_category") or {}
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, [100 * groups[c]["success_rate"] if c in groups else 0 for c in names],
               width=width, label=run.label)
    ax.set_xticks(range(len(names)), [_short(n) for n in names],
                  rotation=30 if len(names) > 5 else 0, ha="right" if len(names) > 5 else "center")
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=8)
    ax.set_title("Success by category")
    return _svg(fig)


def _short(name: str, width: int = 18) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def reward_distribution(runs: list[Run]) -> str:
    """Histogram of episode rewards (an error or a missing task counts as 0)."""
    fig, ax = _figure()
    data = []
    for run in runs:
        rewards = []
        for task in run.requested:
            rec = run.records.get(task)
            if rec is not None and rec.get("status") == "skipped":
                continue
            ok = rec is not None and rec.get("status") == "ok"
            rewards.append(float(rec.get("reward") or 0.0) if ok and rec else 0.0)
        data.append(rewards)
    bins = [i / 10 for i in range(11)]
    if any(data):
        ax.hist(data, bins=bins, label=[r.label for r in runs])
    ax.set_xlabel("reward")
    ax.set_ylabel("episodes")
    ax.set_xlim(0, 1)
    if len(runs) > 1:
        ax.legend(fontsize=8)
    ax.set_title("Reward distribution")
    return _svg(fig)


def turns_distribution(runs: list[Run]) -> str:
    """Histogram of the number of turns per ok episode."""
    fig, ax = _figure()
    data = [[len(r.get("turns") or []) for r in run.records.values() if r.get("status") == "ok"]
            for run in runs]
    longest = max((max(d) for d in data if d), default=1)
    bins = [n - 0.5 for n in range(0, longest + 2)]
    if any(data):
        ax.hist(data, bins=bins, label=[r.label for r in runs])
    ax.set_xlabel("turns taken")
    _whole_numbers(ax.xaxis)
    _whole_numbers(ax.yaxis)
    ax.set_ylabel("episodes")
    if len(runs) > 1:
        ax.legend(fontsize=8)
    ax.set_title("Turns per episode")
    return _svg(fig)
