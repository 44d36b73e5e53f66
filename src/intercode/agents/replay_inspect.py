"""Inspect logs as recorded episodes for ``--agent replay``.

A sample's actions are, in order: the turns an intercode export kept in its metadata
(``intercode export inspect``), else what the model did in the dialogue: each call of
the ``execute`` tool (Inspect's ``react``), each ``submit`` call with an answer (a CTF
flag: ``submit <flag>``), and each assistant reply of the Try Again solver, parsed as
intercode parses replies (a reply without code is an invalid turn, as it was then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from intercode.agents.base import Action
from intercode.agents.parsing import parse_code
from intercode.agents.recorded import Recorded
from intercode.errors import ConfigError, DatasetError

__all__ = ["load_inspect_log"]

SCORER = "intercode_scorer"


def load_inspect_log(path: Path) -> dict[int, Recorded]:
    """The recorded episodes of an Inspect log (``.eval`` or ``.json``), by task."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError("replaying an Inspect log needs inspect-ai: "
                          "pip install 'intercode[inspect]'") from None

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # Inspect raises many kinds on a damaged file
        raise DatasetError(f"{path}: not a readable Inspect log ({exc})") from exc
    task = str(getattr(log.eval, "task", "") or "")
    out: dict[int, Recorded] = {}
    for sample in log.samples or []:
        try:
            index = int(sample.id)
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"{path}: sample id {sample.id!r} is not a task index") from exc
        meta = sample.metadata or {}
        env = str(meta.get("env") or task.rpartition("/")[2] or "")
        turns = meta.get("turns")
        if isinstance(turns, list):
            actions = [Action(str(t.get("action", "")), valid=bool(t.get("valid", True)))
                       for t in turns if isinstance(t, dict) and not t.get("submit")]
        else:
            actions = _from_messages(sample.messages, env)
        score = (sample.scores or {}).get(SCORER)
        reward = None if score is None else _number(score.value)
        out[index] = Recorded(index, tuple(actions), reward)
    return out


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _from_messages(messages: list[Any], env: str) -> list[Action]:
    actions: list[Action] = []
    for message in messages:
        if getattr(message, "role", None) != "assistant":
            continue
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            for call in calls:
                args = call.arguments or {}
                if call.function == "execute":
                    actions.append(Action(str(args.get("code", ""))))
                elif call.function == "submit" and args.get("answer"):
                    actions.append(Action(f"submit {args['answer']}"))
            continue
        parsed = parse_code(message.text, env) if env else None
        if parsed is None or parsed.kind == "none":
            actions.append(Action(message.text, valid=False))
        elif parsed.kind == "submit":
            actions.append(Action(parsed.text or "submit"))
        else:
            actions.append(Action(parsed.text))
    return actions
