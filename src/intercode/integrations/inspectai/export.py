"""``intercode export inspect RUN -o FILE.eval``: an intercode run as an Inspect log.

Each episode becomes a sample: its messages are what the model saw at its last call
(from the run's ``messages.jsonl``) and its last reply; without a model (gold, replay)
the dialogue is rebuilt from the turns (action, then observation and reward). The score
is the episode's reward (``intercode_scorer``, as the Inspect tasks score), with success,
the reward parts and the turns as metadata; an episode that failed is a sample error.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
)
from inspect_ai.scorer import Score

from intercode.report.runs import Run, load_run

__all__ = ["export_run"]

SCORER = "intercode_scorer"


def _message(role: str, content: str) -> ChatMessage:
    if role == "system":
        return ChatMessageSystem(content=content)
    if role == "assistant":
        return ChatMessageAssistant(content=content)
    return ChatMessageUser(content=content)


def messages(run: Run, record: dict[str, Any]) -> list[ChatMessage]:
    """The episode's dialogue as the model saw it last, with its last reply."""
    turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
    for turn in reversed(turns):
        llm = turn.get("llm") or {}
        prompts = llm.get("prompts") or []
        if prompts:
            own = record.get("messages") or {}
            out = []
            for mid in prompts[-1]:
                m = run.message(mid) or own.get(mid)
                if m is not None:
                    out.append(_message(str(m.get("role")), str(m.get("content"))))
            out.append(ChatMessageAssistant(content=str(llm.get("reply") or turn["action"])))
            return out
    out = [ChatMessageUser(content=str(record.get("query", "")))]
    for turn in turns:
        out.append(ChatMessageAssistant(content=str(turn.get("action", ""))))
        shown = str(turn.get("observation") or "")
        if turn.get("reward") is not None:
            shown += f"\nReward: {turn['reward']:g}"
        out.append(ChatMessageUser(content=shown))
    return out


def sample(run: Run, task: int, record: dict[str, Any]) -> EvalSample:
    """One episode as an Inspect sample."""
    metadata = {k: record.get(k) for k in ("env", "dataset", "category", "source",
                                          "source_index", "agent", "status", "known_issue")}
    turns: list[Any] = record.get("turns") or []
    metadata["turns"] = turns
    scores = None
    error = None
    if record.get("status") == "ok":
        reward = float(record.get("reward") or 0.0)
        scores = {SCORER: Score(
            value=reward, explanation=f"intercode reward {reward:g}",
            metadata={"reward": reward, "success": bool(record.get("success")),
                      "parts": record.get("reward_info") or {},
                      "best_turn": record.get("best_turn"),
                      "turns": len(turns),
                      "agent_fault": record.get("agent_fault")})}
    else:
        text = str(record.get("error") or record.get("status"))
        error = EvalError(message=text, traceback=text, traceback_ansi=text)
    return EvalSample(id=task, epoch=1, input=str(record.get("query", "")), target="",
                      messages=messages(run, record), scores=scores, error=error,
                      metadata=metadata, total_time=record.get("duration_s"))


def to_eval_log(run: Run) -> EvalLog:
    """The whole run as an Inspect log."""
    samples = [sample(run, t, r) for t, r in sorted(run.records.items())]
    model = run.config.get("model")
    name = model.get("model") if isinstance(model, dict) else None
    scored = [s for s in samples if s.scores]
    rewards = [float(s.scores[SCORER].as_float()) for s in scored if s.scores]
    solved = [bool((s.scores[SCORER].metadata or {}).get("success")) for s in scored
              if s.scores]
    results = EvalResults(total_samples=len(samples), completed_samples=len(scored),
                          scores=[EvalScore(name=SCORER, scorer=SCORER,
                                            scored_samples=len(scored),
                                            unscored_samples=len(samples) - len(scored),
                                            metrics={
        "mean": EvalMetric(name="mean", value=sum(rewards) / len(rewards) if rewards else 0.0),
        "success": EvalMetric(name="success",
                              value=sum(solved) / len(solved) if solved else 0.0)})])
    created = str(run.config.get("started_at") or dt.datetime.now(dt.UTC).isoformat())
    spec = EvalSpec(created=created, task=f"intercode/{run.env}",
                    dataset=EvalDataset(name=run.dataset, samples=len(samples),
                                        sample_ids=[s.id for s in samples]),
                    model=str(name or f"intercode/{run.agent}"), config=EvalConfig(),
                    metadata={"intercode_run": str(run.path), "agent": run.agent,
                              "notes": list(run.notes)})
    return EvalLog(eval=spec, status="success", results=results, samples=samples)


def export_run(run_path: str | Path, output: str | Path) -> Path:
    """Write the run at ``run_path`` as an Inspect log (``.eval`` or ``.json``)."""
    log = to_eval_log(load_run(run_path))
    output = Path(output)
    write_eval_log(log, str(output), format="json" if output.suffix == ".json" else "eval")
    return output
