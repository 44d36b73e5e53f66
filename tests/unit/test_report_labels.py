"""What the report and ``show`` say of a run: turn labels that mean what the files mean,
known issues of InterCode's own result files, the settings that apply, whole-number
turn axes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from intercode.datasets.issue_table import issue_of
from intercode.report import plots
from intercode.report.payload import build_payload
from intercode.report.runs import load_run
from intercode.report.show import header_rows, show

UPSTREAM_SQL = Path("results") / "sql" / "gpt-3.5" / "ic_sql_multiturn_gpt-3.5_10_turns.json"


def _record(task, turns, **more):
    rec = {"env": "sql", "dataset": "spider-dev", "task": task, "source": "spider-dev",
           "source_index": task, "query": f"q{task}", "agent": "try-again", "status": "ok",
           "reward": 0.0, "success": False, "turns": turns, "schema": 2}
    rec.update(more)
    return rec


def _folder(path: Path, recs, config) -> Path:
    path.mkdir(parents=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_upstream_invalid_turns_are_labelled_as_failed_actions(mirror):
    """InterCode sets valid_action false for an action that ran and failed (or a reply
    without code): the paper's file is not labelled "no action found"."""
    run = load_run(mirror / UPSTREAM_SQL)
    payload = build_payload([run])
    invalid = [t for tr in payload["transcripts"].values() for t in tr["turns"] if t.get("v") == 0]
    assert len(invalid) == 4240
    label = payload["runs"][0]["invalid"]
    assert "failed" in label and "valid_action" in label and "no action found" not in label
    task = next(t for t, r in run.records.items() if any(not x["valid"] for x in r["turns"]))
    out = io.StringIO()
    show(str(mirror / UPSTREAM_SQL), task, stream=out)
    assert "the action failed or the reply had no code" in out.getvalue()
    assert "invalid action" not in out.getvalue()


def test_intercode_invalid_turns_say_nothing_was_run(tmp_path):
    """... and rewards show without float noise (at most four significant digits)."""
    turns = [{"action": "Let me think.", "observation": "No code found.", "reward": 0.0,
              "valid": False},
             {"action": "SELECT 1", "observation": "[(1,)]", "reward": 0.6900000000000001}]
    run = _folder(tmp_path / "run", [_record(
        0, turns, reward=0.6900000000000001,
        reward_info={"reward_parts": {"iou": 0.6900000000000001}})],
        {"env": "sql", "agent": "try-again"})
    assert build_payload([load_run(run)])["runs"][0]["invalid"] == (
        "no valid action in the reply (not run)")
    out = io.StringIO()
    show(str(run), 0, stream=out)
    assert "no valid action in the reply (not run)" in out.getvalue()
    assert "invalid action" not in out.getvalue()
    assert "reward 0.69" in out.getvalue() and "0.6900000000000001" not in out.getvalue()
    assert '"iou": 0.69' in out.getvalue()


def test_upstream_files_carry_intercode_known_issues(mirror):
    """The "without known issues" rate of the paper's file leaves the known-issue tasks out
    (it was the overall rate)."""
    run = load_run(mirror / UPSTREAM_SQL)
    known = {t for t in run.records if issue_of("spider-dev", t) is not None}
    assert known and {t for t, r in run.records.items() if r.get("known_issue")} == known
    summary = run.summary()
    clean = [r for t, r in run.records.items() if t not in known]
    assert summary["success_rate_without_known_issues"] == pytest.approx(
        sum(bool(r["success"]) for r in clean) / len(clean))
    assert summary["success_rate_without_known_issues"] != summary["success_rate"]


@pytest.mark.parametrize(("env", "agent", "shown", "hidden"), [
    ("bash", "try-again", set(), {"sql backend", "refine turns"}),
    ("sql", "tools", {"sql backend"}, {"refine turns", "dialogue limit"}),
    ("sql", "plan-solve", {"sql backend", "refine turns"}, {"dialogue limit"}),
    ("bash", "try-again-limited", set(), {"refine turns"}),
])
def test_show_lists_only_the_settings_that_apply(env, agent, shown, hidden, tmp_path):
    config = {"env": env, "dataset": "d", "agent": agent.removesuffix("-limited"),
              "sql_backend": "sqlite", "max_turns": 10, "model": {"model": "m"},
              "strategy": {"refine_turns": 3, "dialogue_limit": 4, "observation_chars": None}}
    run = _folder(tmp_path / "run", [_record(0, [], env=env)], config)
    text = "\n".join(f"{k}: {v}" for k, v in header_rows(load_run(run)))
    for word in shown:
        assert word in text, text
    for word in hidden:
        assert word not in text, text


def _figure_of(monkeypatch, draw):
    seen = []
    monkeypatch.setattr(plots, "_svg", lambda fig: seen.append(fig) or "<svg/>")
    draw()
    return seen[0].axes[0]


def test_turn_axes_have_whole_numbers_and_a_one_turn_curve_shows(tmp_path, monkeypatch):
    turns = [{"action": "SELECT 1", "observation": "[(1,)]", "reward": 1.0}]
    run = load_run(_folder(tmp_path / "one", [_record(0, turns, reward=1.0, success=True,
                                                      best_turn=0)],
                           {"env": "sql", "agent": "single-turn", "tasks": [0]}))
    summary = run.summary()
    ax = _figure_of(monkeypatch, lambda: plots.success_by_turns([run], [summary]))
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [100.0]
    assert ax.get_ylim()[1] > 100 or not line.get_clip_on()  # the point is not cut off
    ax = _figure_of(monkeypatch, lambda: plots.turns_distribution([run]))
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
