"""``intercode report RUN [RUN ...] [-o FILE.html]``: load the runs, write the page."""

from __future__ import annotations

import os
from pathlib import Path

from intercode.errors import ConfigError
from intercode.report.html import render
from intercode.report.runs import Run, load_run

__all__ = ["load_runs", "write_report"]


def default_output(paths: list[str]) -> Path:
    """Where the report goes without ``-o``: into the run's folder for one run folder,
    else ``report.html`` here."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return Path(paths[0]) / "report.html"
    return Path("report.html")


def load_runs(paths: list[str]) -> list[Run]:
    """The runs, labelled uniquely (two folders of one name get their parents too)."""
    if not paths:
        raise ConfigError("name at least one run")
    runs = [load_run(p) for p in paths]
    labels = [r.label for r in runs]
    for i, run in enumerate(runs):
        if labels.count(run.label) > 1:
            run.label = f"{run.label} ({i + 1})" if run.path.parent.name in ("", ".") \
                else f"{run.path.parent.name}/{run.path.name}"
    if len({r.label for r in runs}) < len(runs):
        for i, run in enumerate(runs):
            run.label = f"{i + 1}: {run.label}"
    return runs


def write_report(paths: list[str], output: str | Path | None = None) -> Path:
    """Write the report of the runs at ``paths``; return its path."""
    runs = load_runs(paths)
    target = Path(output) if output is not None else default_output(paths)
    if target.is_dir():
        raise ConfigError(f"-o {target} is a folder; name the .html file to write")
    page = render(runs)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write the report to {target}: "
                          f"{exc.strerror or exc}") from exc
    return target
