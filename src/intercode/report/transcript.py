"""One episode's transcript, readable in a terminal (``intercode show RUN --task N``).

For each turn: the messages of each model call (a message already shown earlier in the
episode is collapsed into ``(6 earlier messages, as above: #1-#6)``, so the system
prompt and the growing dialogue are read once), the model's reply, the action, the
observation (cut at :data:`LIMIT` characters) and what the environment said of it.
Everything the agent or its environment wrote is printed literally (see
:func:`intercode.console.literal`).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

from intercode.console import cut, literal
from intercode.report.runs import Run, calls_of, invalid_label
from intercode.runner.summary_view import pairs_table

__all__ = ["render_episode", "turns_of", "unattached"]

LIMIT = 2000  # characters of an observation, message or reply shown
ROLE_STYLES = {"system": "magenta", "user": "blue", "assistant": "green"}
STATUS_STYLES = {"ok": "green", "error": "red", "skipped": "yellow"}


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``#1-#3, #5``."""
    parts: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"#{start}" if start == prev else f"#{start}-#{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def turns_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's turns (anything else in the list left out)."""
    turns = record.get("turns")
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def unattached(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The model calls that gave no action (``extra["llm_unattached"]``)."""
    extra = record.get("extra")
    calls = extra.get("llm_unattached") if isinstance(extra, dict) else None
    return [m for m in calls if isinstance(m, dict)] if isinstance(calls, list) else []


def _yes(value: Any) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def _llm_line(llm: dict[str, Any]) -> str:
    calls = llm.get("calls") or 0
    latency = llm.get("latency_s")
    reasoning = llm.get("reasoning_tokens")
    return (f"{calls} call{'s' if calls != 1 else ''}, {llm.get('prompt_tokens') or 0:,} "
            f"prompt + {llm.get('completion_tokens') or 0:,} completion tokens"
            + (f" ({reasoning:,} reasoning)" if isinstance(reasoning, int)
               and not isinstance(reasoning, bool) else "")
            + (f", {latency:.2f} s" if isinstance(latency, int | float) else ""))


def prompts_note(record: dict[str, Any], run: Run) -> str | None:
    """Why the transcript shows no prompts, when it shows none."""
    if run.kind == "upstream":
        return ("The prompts and replies were not recorded: an InterCode results file "
                "keeps only the actions, observations and rewards.")
    metas = [m for t in turns_of(record) if isinstance(m := t.get("llm"), dict)]
    if metas and not any(isinstance(m.get("prompts"), list) for m in metas):
        return (f"The prompts were not recorded (a schema {record.get('schema', 1)} record); "
                "the replies are shown.")
    return None


class Transcript:
    """One episode's transcript. ``wrap``: lines are wrapped (with their indentation) to
    the terminal's width; without it (off a terminal) each line of agent text stays one
    line, whole, to grep and copy."""

    def __init__(self, run: Run, wrap: bool) -> None:
        self.run = run
        self.wrap = wrap
        self.numbers: dict[tuple[str, str], int] = {}  # messages shown, numbered

    def block(self, text: object, indent: int = 4, limit: int = LIMIT) -> RenderableType:
        """Agent text, indented, cut at ``limit`` characters with a note of the rest."""
        shown, more = cut(str(text), limit)
        body = literal(shown) if shown else Text("(empty)", style="dim italic")
        if more:
            body.append(f"\n[{more:,} more characters]", style="dim italic")
        return self.indented(body, indent)

    def indented(self, body: Text, indent: int) -> RenderableType:
        if self.wrap:
            return Padding(body, (0, 0, 0, indent))
        lines = body.split("\n", allow_blank=True)
        return Text("\n").join(Text(" " * indent) + line for line in lines)

    def messages(self, call: list[dict[str, str]]) -> list[RenderableType]:
        """The messages of one call; those shown before are collapsed."""
        out: list[RenderableType] = []
        earlier: list[int] = []
        for message in call:
            key = (str(message.get("role")), str(message.get("content")))
            if key in self.numbers:
                earlier.append(self.numbers[key])
                continue
            if earlier:
                out.append(self.as_above(earlier))
                earlier = []
            self.numbers[key] = number = len(self.numbers) + 1
            out.append(self.indented(literal(f"#{number} {key[0]}",
                                             ROLE_STYLES.get(key[0], "bold")), 2))
            out.append(self.block(key[1]))
        if earlier:
            out.append(self.as_above(earlier))
        return out

    def as_above(self, numbers: list[int]) -> RenderableType:
        count = len(numbers)
        return self.indented(Text(f"({count} earlier message{'s' if count != 1 else ''}, "
                                  f"as above: {_ranges(numbers)})", style="dim"), 2)

    def header(self, record: dict[str, Any]) -> list[RenderableType]:
        """The episode's outcome and its query."""
        run = self.run
        status = str(record.get("status"))
        rows: list[tuple[str, str | Text]] = [
            ("run", f"{run.label} ({run.env} / {run.dataset} / {run.agent})"),
            ("status", literal(status, STATUS_STYLES.get(status, "bold"))),
            ("reward", reward_text(record.get("reward"))),
            ("success", _yes(record.get("success"))),
        ]
        turns = turns_of(record)
        best = record.get("best_turn")
        rows.append(("turns", f"{len(turns)}" + (f" (best: turn {best + 1})"
                                                 if isinstance(best, int) else "")))
        for key in ("category", "error", "agent_fault", "stop_reason", "known_issue"):
            if record.get(key):
                rows.append((key.replace("_", " "), str(record[key])))
        if isinstance(record.get("duration_s"), int | float) and record["duration_s"]:
            rows.append(("duration", f"{record['duration_s']:.2f} s"))
        llm = record.get("llm")
        if isinstance(llm, dict):
            rows.append(("model", _llm_line(llm)))
        out: list[RenderableType] = [
            Rule(literal(f"task {record.get('task')}"), style="bold"),
            pairs_table(rows), Text("query", style="bold"), self.block(record.get("query", ""))]
        note = prompts_note(record, run)
        if note:
            out.append(Text(note, style="yellow"))
        return out

    def calls(self, meta: dict[str, Any], turn: dict[str, Any]) -> list[RenderableType]:
        """Each model call of a turn: the messages sent, then the reply."""
        prompts = calls_of(turn, self.run)
        replies = meta.get("replies") if isinstance(meta.get("replies"), list) else None
        if replies is None:
            replies = [meta.get("reply")] if "reply" in meta else []
        count = max(len(prompts), len(replies))
        out: list[RenderableType] = []
        for i in range(count):
            of = f" {i + 1} of {count}" if count > 1 else ""
            if i < len(prompts):
                out.append(Text(f"model call{of}: what the model saw", style="bold"))
                out += self.messages(prompts[i])
            if i < len(replies) and replies[i] is not None:
                out.append(Text(f"reply{of}", style="bold"))
                out.append(self.block(replies[i]))
        return out

    def turn(self, index: int, total: int, turn: dict[str, Any]) -> list[RenderableType]:
        """One turn: the model's calls, the action, the observation and its scores."""
        out: list[RenderableType] = [Rule(f"turn {index + 1} of {total}", style="dim")]
        meta = turn.get("llm")
        if isinstance(meta, dict):
            out += self.calls(meta, turn)
        out += [Text("action", style="bold"), self.block(turn.get("action", ""))]
        facts = [f"reward {reward_text(turn.get('reward'))}",
                 "valid" if turn.get("valid", True) else invalid_label(self.run.kind)]
        if turn.get("exit_code") is not None:
            facts.append(f"exit code {turn['exit_code']}")
        if turn.get("timed_out"):
            facts.append("timed out")
        if turn.get("submit"):
            facts.append("submitted")
        out += [Text.assemble(("observation", "bold"), ("  " + " · ".join(facts), "dim")),
                self.block(turn.get("observation", ""))]
        return out

    def parts(self, record: dict[str, Any]) -> list[RenderableType]:
        """Everything shown of the episode, in order."""
        parts = self.header(record)
        turns = turns_of(record)
        for i, turn in enumerate(turns):
            parts += self.turn(i, len(turns), turn)
        for meta in unattached(record):
            parts.append(Rule("model calls after the last action", style="dim"))
            parts += self.calls(meta, {"llm": meta})
        parts.append(Rule("reward info", style="dim"))
        info = record.get("reward_info")
        parts.append(self.block(json.dumps(_rounded(info), indent=2, default=str)
                                if info is not None
                                else "(none)", limit=20 * LIMIT))
        return parts


def reward_text(value: Any) -> str:
    """A reward as the report shows it: at most four significant digits, no float noise
    (``0.6900000000000001`` is ``0.69``); ``n/a`` when there is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a"
    return f"{value:.4g}"


def _rounded(value: Any) -> Any:
    """``value`` with its fractional numbers at four significant digits (reward parts)."""
    if isinstance(value, float) and not value.is_integer():
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def render_episode(record: dict[str, Any], run: Run, console: Console) -> None:
    """Print one episode's transcript (lines not wrapped off a terminal)."""
    transcript = Transcript(run, wrap=console.is_terminal)
    console.print(Group(*transcript.parts(record)), soft_wrap=not transcript.wrap)
