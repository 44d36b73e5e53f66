"""``intercode show RUN [--task N] [--json]``: a run's header, notes and summary, or one
episode's transcript (:mod:`intercode.report.transcript`).

RUN is anything :func:`intercode.report.runs.load_run` reads. Anything that cannot be
shown (no such task, a run without records) is a one-line :class:`ConfigError`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from intercode.console import emit, literal
from intercode.errors import ConfigError
from intercode.report.runs import Run, load_run
from intercode.report.transcript import render_episode, turns_of, unattached
from intercode.runner.summary_view import pairs_table, render_summary

__all__ = ["show"]

# config.json settings worth a line of the header, in this order
HIGHLIGHTS = ("max_turns", "workers", "sql_backend", "upstream_quirks", "network",
              "dataset_revision", "intercode_version", "git_revision", "schema", "created_at",
              "source_file")
MODEL_SETTINGS = ("temperature", "max_tokens", "top_p")
# settings that apply to some environments or agents only (config.json has them all)
ENV_ONLY = {"sql_backend": ("sql",)}
AGENT_ONLY = {"refine_turns": ("plan-solve",), "dialogue_limit": ("try-again", "single-turn")}


def _applies(key: str, env: str, agent: str) -> bool:
    return env in ENV_ONLY.get(key, (env,)) and agent in AGENT_ONLY.get(key, (agent,))


def header_rows(run: Run) -> list[tuple[str, str]]:
    """What the run is: its environment, dataset, agent and settings."""
    kind = "InterCode results file (upstream)" if run.kind == "upstream" else "intercode run"
    rows = [("run", str(run.path)), ("kind", kind), ("env", run.env),
            ("dataset", run.dataset), ("agent", run.agent)]
    model = run.config.get("model")
    if isinstance(model, dict):
        settings = [f"{k.replace('_', ' ')} {model[k]}" for k in MODEL_SETTINGS
                    if model.get(k) is not None]
        if settings:
            rows.append(("model settings", ", ".join(settings)))
    agent = str(run.config.get("agent") or "")
    strategy = run.config.get("strategy")
    if isinstance(strategy, dict):
        options = [f"{k.replace('_', ' ')} {v}" for k, v in strategy.items()
                   if v is not None and _applies(str(k), run.env, agent)]
        if options and run.config.get("model"):
            rows.append(("strategy", ", ".join(options)))
    for key in HIGHLIGHTS:
        value = run.config.get(key)
        if value is None or value is False or (key == "source_file"
                                                and value == str(run.path)):
            continue
        if not _applies(key, run.env, agent):
            continue
        rows.append((key.replace("_", " "), str(value)))
    rows.append(("tasks", f"{len(run.requested)} requested, {len(run.records)} with a record"))
    return rows


def render_run(run: Run, console: Console) -> None:
    """Print the run's header, its notes and its summary."""
    console.print(pairs_table(list(header_rows(run)), title="Run"))
    for note in run.notes:
        console.print(Text.assemble(("note: ", "yellow bold"), literal(note)))
    console.print()
    render_summary(run.summary(), console)


def episode(run: Run, task: int) -> dict[str, Any]:
    """The latest record of ``task``; a task without one is a one-line error."""
    record = run.records.get(task)
    if record is not None:
        return record
    if task in run.requested:
        raise ConfigError(f"task {task} of {run.path} has no record yet (it was requested "
                          "but has not finished)")
    tasks = sorted(run.records)
    listed = ", ".join(str(t) for t in tasks[:10]) + (", ..." if len(tasks) > 10 else "")
    raise ConfigError(f"{run.path} has no task {task}; its tasks are {listed} "
                      f"({len(tasks)} in all)")


def run_json(run: Run) -> dict[str, Any]:
    """The run's header, notes and summary as one JSON object."""
    return {"path": str(run.path), "label": run.label, "kind": run.kind, "env": run.env,
            "dataset": run.dataset, "agent": run.agent, "config": run.config,
            "notes": run.notes, "summary": run.summary()}


def episode_json(run: Run, record: dict[str, Any]) -> dict[str, Any]:
    """The record, with the messages its prompts name (from the run's table)."""
    ids: list[str] = []
    metas = [t.get("llm") for t in turns_of(record)] + list(unattached(record))
    for meta in metas:
        if isinstance(meta, dict) and isinstance(meta.get("prompts"), list):
            ids += [str(i) for call in meta["prompts"] if isinstance(call, list) for i in call]
    out = dict(record)
    messages = {i: m for i in dict.fromkeys(ids) if (m := run.message(i)) is not None}
    if messages:
        out["messages"] = messages
    return out


def show(path: str, task: int | None = None, as_json: bool = False,
         stream: TextIO | None = None) -> None:
    """Print a run (or one of its episodes) on ``stream`` (standard output)."""
    run = load_run(path)
    if not run.records:
        why = [n for n in run.notes if n != "the run has no episode records"]
        raise ConfigError(f"{path} has no episode records to show"
                          + (f" ({'; '.join(why)})" if why else ""))
    stream = stream if stream is not None else sys.stdout
    if as_json:
        data = run_json(run) if task is None else episode_json(run, episode(run, task))
        stream.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    if task is None:
        emit(lambda console: render_run(run, console), stream)
    else:
        record = episode(run, task)
        emit(lambda console: render_episode(record, run, console), stream)
