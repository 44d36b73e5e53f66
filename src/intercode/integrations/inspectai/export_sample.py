"""One episode of an intercode run as an Inspect sample, shaped as a native one.

An Inspect run's sample has its start and end, its token usage, the dialogue and a
transcript of events; the export fills the same from the record: a model event per model
call (what it saw, its reply, the turn's tokens and latency), a tool event per action the
environment ran (a tool call under ``--agent tools``, ``execute`` / ``submit`` for the
text strategies and for runs without a model), an info event for a reply without an
action, and the score. Times are laid out from the episode's start with each turn's model
latency and environment time (the records keep durations, not instants).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.event import (
    Event,
    InfoEvent,
    ModelEvent,
    SampleInitEvent,
    ScoreEvent,
    SpanBeginEvent,
    SpanEndEvent,
    ToolEvent,
)
from inspect_ai.log import EvalError, EvalSample
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCallError

from intercode.integrations.inspectai.export_dialogue import (
    ModelCall,
    model_calls,
    raw_messages,
    turns_of,
)
from intercode.report.runs import Run

__all__ = ["SCORER", "Episode", "instant", "sample", "usage"]

SCORER = "intercode_scorer"
METADATA = ("env", "dataset", "category", "source", "source_index", "agent", "status",
            "known_issue")


def _number(value: Any) -> float:
    """A finite non-negative number of a record (0 for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 <= value < float("inf") else 0.0


def instant(text: Any) -> dt.datetime | None:
    """An ISO time of a record (naive times are UTC), None when it is none."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def usage(llm: Any) -> ModelUsage | None:
    """The tokens of a record's (or a turn's) ``llm`` counts, None without any."""
    if not isinstance(llm, dict) or not _number(llm.get("calls")):
        return None
    prompt, completion = int(_number(llm.get("prompt_tokens"))), int(
        _number(llm.get("completion_tokens")))
    reasoning = llm.get("reasoning_tokens")
    return ModelUsage(input_tokens=prompt, output_tokens=completion,
                      total_tokens=prompt + completion,
                      reasoning_tokens=int(_number(reasoning)) if reasoning is not None
                      else None)


@dataclass
class Episode:
    """What the sample of one record is made from."""

    run: Run
    task: int
    record: dict[str, Any]
    model: str  # the model's name in the log (the agent's when there is no model)
    target: str  # the task's gold ("" when unknown)
    fallback_start: dt.datetime  # the start of an episode whose record has none


# after the span that holds them begins: `inspect view` leaves out the events of a span's
# first instant
FIRST = dt.timedelta(milliseconds=1)


class _Clock:
    """The transcript's instants: from the episode's start, by the recorded durations."""

    def __init__(self, start: dt.datetime) -> None:
        self.start, self.now = start, start + FIRST

    def take(self, seconds: Any) -> tuple[dt.datetime, dt.datetime]:
        began = self.now
        self.now = began + dt.timedelta(seconds=_number(seconds))
        return began, self.now

    def offset(self, when: dt.datetime) -> float:
        return (when - self.start).total_seconds()


def _score(ep: Episode, turns: list[dict[str, Any]]) -> Score:
    record = ep.record
    reward = float(record.get("reward") or 0.0)
    success = bool(record.get("success"))
    best = record.get("best_turn")
    best = best + 1 if type(best) is int and best >= 0 else None  # 1-based, as `show` says
    actions = [str(t.get("action") or "") for t in turns]
    action = (actions[best - 1] if best is not None and best <= len(actions)
              else actions[-1] if actions else None)
    verdict = "solved" if success else "not solved"
    return Score(value=reward, answer=action,
                 explanation=f"intercode reward {reward:g} ({verdict}, {len(turns)} turns)",
                 metadata={"reward": reward, "success": success,
                           "parts": record.get("reward_info") or {}, "best_turn": best,
                           "turns": len(turns),
                           "submitted": any(bool(t.get("submit")) for t in turns),
                           "agent_fault": record.get("agent_fault"), "action": action})


def _model_event(ep: Episode, call: ModelCall, clock: _Clock, turns: list[dict[str, Any]],
                 span: str) -> ModelEvent:
    llm = turns[call.turn].get("llm") or {}
    began, ended = clock.take(llm.get("latency_s") if call.last else 0)
    output = ModelOutput(model=ep.model, choices=[ChatCompletionChoice(
        message=call.reply, stop_reason="tool_calls" if call.reply.tool_calls else "stop")],
                         usage=usage(llm) if call.last else None,
                         time=(ended - began).total_seconds())
    return ModelEvent(model=ep.model, input=call.prompt, tools=[], tool_choice="auto",
                      config=GenerateConfig(), output=output, timestamp=began,
                      completed=ended, working_start=clock.offset(began),
                      working_time=(ended - began).total_seconds(), span_id=span,
                      metadata={"intercode_turn": call.turn + 1})


def _shown(turn: dict[str, Any]) -> str:
    text = str(turn.get("observation") or "")
    reward = turn.get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        text += f"\nReward: {reward:g}"
    return text


def _turn_event(n: int, turn: dict[str, Any], call_of: dict[int, Any], clock: _Clock,
                span: str) -> Event:
    """The environment's part of turn ``n``: the action it ran (a tool event), or the
    reply without an action (an info event)."""
    began, ended = clock.take(turn.get("env_s"))
    meta = {"intercode_turn": n + 1, "reward": turn.get("reward"),
            "exit_code": turn.get("exit_code")}
    call = call_of.get(n)
    action = str(turn.get("action") or "")
    valid = turn.get("valid") is not False
    if call is None and not valid:
        return InfoEvent(source="intercode", timestamp=began, working_start=clock.offset(began),
                         span_id=span,
                         data=f"turn {n + 1}: the reply had no action; the model was told: "
                              f"{turn.get('observation') or ''}", metadata=meta)
    if call is not None:
        cid, function, arguments = call.id, call.function, call.arguments
    else:
        cid = f"turn-{n + 1}"
        function = "submit" if turn.get("submit") else "execute"
        arguments = {"code": action}
    error = None if valid else ToolCallError("parsing", str(turn.get("observation") or ""))
    return ToolEvent(id=cid, function=function, arguments=arguments, result=_shown(turn),
                     error=error, timestamp=began, completed=ended,
                     working_start=clock.offset(began),
                     working_time=(ended - began).total_seconds(), metadata=meta,
                     span_id=span)


def _span(name: str, kind: str, when: dt.datetime, clock: _Clock, sid: str,
          parent: str | None = None) -> SpanBeginEvent:
    return SpanBeginEvent(id=sid, name=name, type=kind, parent_id=parent, timestamp=when,
                          working_start=clock.offset(when), span_id=sid)


def events(ep: Episode, calls: list[ModelCall], score: Score | None, start: dt.datetime,
           end: dt.datetime, messages: list[ChatMessage]) -> tuple[list[Event], dt.datetime]:
    """The sample's transcript, and its end (the recorded one, or later when the recorded
    durations add up to more)."""
    turns = turns_of(ep.record)
    clock = _Clock(start)
    out: list[Event] = [SampleInitEvent(
        sample=Sample(input=str(ep.record.get("query") or ""), target=ep.target, id=ep.task),
        state={"messages": [m.model_dump(exclude_none=True) for m in messages[:2]]},
        timestamp=start, working_start=0.0)]
    solver = f"{ep.task}-solver"
    out.append(_span(f"intercode/{ep.record.get('agent') or 'agent'}", "solver", start, clock,
                     solver))
    call_of = {r.turn: r.call for c in calls for r in c.runs}
    by_turn: dict[int, list[ModelCall]] = {}
    for c in calls:
        by_turn.setdefault(c.turn, []).append(c)
    for n, turn in enumerate(turns):
        out.extend(_model_event(ep, c, clock, turns, solver) for c in by_turn.get(n, []))
        out.append(_turn_event(n, turn, call_of, clock, solver))
    out.append(SpanEndEvent(id=solver, timestamp=clock.now, working_start=clock.offset(
        clock.now), span_id=solver))
    end = max(end, clock.now + FIRST)
    if score is not None:
        scorer = f"{ep.task}-scorer"
        out.append(_span(SCORER, "scorer", clock.now, clock, scorer))
        out.append(ScoreEvent(score=score, target=ep.target, scorer=SCORER, timestamp=end,
                              working_start=clock.offset(end), span_id=scorer))
        out.append(SpanEndEvent(id=scorer, timestamp=end, working_start=clock.offset(end),
                                span_id=scorer))
    return out, end


def _rebuilt(record: dict[str, Any], turns: list[dict[str, Any]]) -> list[ChatMessage]:
    """The dialogue of a run without a model: the query, then each action and its output."""
    out: list[ChatMessage] = [ChatMessageUser(content=str(record.get("query", "")))]
    for turn in turns:
        out.append(ChatMessageAssistant(content=str(turn.get("action", ""))))
        out.append(ChatMessageUser(content=_shown(turn)))
    return out


def dialogue(calls: list[ModelCall], record: dict[str, Any],
             turns: list[dict[str, Any]]) -> list[ChatMessage]:
    """What the model saw at its last call, its last reply, and the results of that
    reply's tool calls."""
    if not calls:
        return _rebuilt(record, turns)
    last = calls[-1]
    out = [*last.prompt, last.reply]
    for r in last.runs:
        out.append(ChatMessageTool(content=_shown(turns[r.turn]), tool_call_id=r.call.id,
                                   function=r.call.function))
    return out


def sample(ep: Episode) -> EvalSample:
    """One episode as an Inspect sample."""
    record = ep.record
    turns = turns_of(record)
    metadata: dict[str, Any] = {k: record.get(k) for k in METADATA}
    metadata["turns"] = turns
    calls = model_calls(record, raw_messages(ep.run, record))
    messages = dialogue(calls, record, turns)
    score = _score(ep, turns) if record.get("status") == "ok" else None
    error = None
    if score is None:
        text = str(record.get("error") or record.get("status"))
        error = EvalError(message=text, traceback=text, traceback_ansi=text)
    duration = _number(record.get("duration_s"))
    start = instant(record.get("started_at")) or ep.fallback_start
    transcript, end = events(ep, calls, score, start, start + dt.timedelta(seconds=duration),
                             messages)
    used = usage(record.get("llm"))
    last = next((c.reply for c in reversed(calls)), None)
    output = ModelOutput(model=ep.model, usage=used, choices=[] if last is None else [
        ChatCompletionChoice(message=last, stop_reason="tool_calls" if last.tool_calls
                             else "stop")])
    return EvalSample(id=ep.task, epoch=1, input=str(record.get("query", "")),
                      target=ep.target, messages=messages, output=output,
                      scores={SCORER: score} if score is not None else None, error=error,
                      metadata=metadata, events=transcript,
                      model_usage={ep.model: used} if used is not None else {},
                      started_at=start.isoformat(), completed_at=end.isoformat(),
                      total_time=duration, working_time=duration,
                      turn_count=len(turns))
