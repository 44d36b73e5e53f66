"""An exported episode's dialogue: Inspect messages from an intercode run's records.

A run keeps what the model saw (each call's prompt, as ids into ``messages.jsonl``) and
the reply of each turn's last call. Native tool calls (``--agent tools``) are kept as
fields of the stored messages (an assistant message's ``tool_calls``, a tool message's
``tool_call_id``) and become Inspect's :class:`ChatMessageAssistant` ``tool_calls`` and
:class:`ChatMessageTool`; the last reply of an episode, which no later prompt holds, is
rebuilt from its turns. Nothing here trusts a field's type: a run folder may be anyone's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall

from intercode import safeio
from intercode.report.runs import Run
from intercode.runner.messages import FILE_NAME as MESSAGES_FILE

__all__ = ["Call", "ModelCall", "model_calls", "raw_messages", "turns_of"]

REPLY_CALL = re.compile(r"^([A-Za-z0-9_.-]+)\((.*)\)$")  # a tool call as a turn's reply shows it
MORE_CALLS = re.compile(r"^\[\d+ more tool calls\]$")
SHOWN_CALLS = 3  # the calls a tools turn's reply writes out


def turns_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's turns that are objects."""
    turns = record.get("turns")
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def raw_messages(run: Run, record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The messages the episode's prompts name, with their tool fields: the run's
    ``messages.jsonl`` (only the ids the report's reader accepted, so a file it refused
    stays unread) and the record's own table."""
    table: dict[str, dict[str, Any]] = {}
    own = record.get("messages")
    if isinstance(own, dict):
        table.update({k: v for k, v in own.items() if isinstance(v, dict)})
    path = run.path / MESSAGES_FILE
    if run.messages and run.path.is_dir() and not path.is_symlink():
        try:
            with safeio.open_regular(path) as fh:
                for _number, line in safeio.lines(fh):
                    try:
                        obj = None if line is None else safeio.loads(line)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and obj.get("id") in run.messages:
                        table[str(obj["id"])] = obj
        except (OSError, safeio.Refused):
            pass
    for mid, m in run.messages.items():  # what the reader rendered, when nothing better
        table.setdefault(mid, m)
    return table


def _arguments(text: Any) -> tuple[dict[str, Any], str | None]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        return {}, f"the arguments are not JSON: {exc}"
    if isinstance(value, dict):
        return value, None
    return {}, "the arguments are not a JSON object"


def _tool_calls(value: Any) -> list[ToolCall]:
    calls = []
    for c in value if isinstance(value, list) else []:
        if isinstance(c, dict):
            arguments, error = _arguments(c.get("arguments"))
            calls.append(ToolCall(id=str(c.get("id")), function=str(c.get("name")),
                                  arguments=arguments, parse_error=error))
    return calls


def message(m: dict[str, Any], functions: dict[str, str]) -> ChatMessage:
    """One stored message as Inspect's (``functions``: tool call id -> tool name)."""
    role, content = str(m.get("role")), str(m.get("content") or "")
    if role == "system":
        return ChatMessageSystem(content=content)
    if role == "assistant":
        calls = _tool_calls(m.get("tool_calls"))
        functions.update({c.id: c.function for c in calls})
        return ChatMessageAssistant(content=content, tool_calls=calls or None)
    if role == "tool" and m.get("tool_call_id") is not None:
        cid = str(m["tool_call_id"])
        return ChatMessageTool(content=content, tool_call_id=cid, function=functions.get(cid))
    return ChatMessageUser(content=content)


@dataclass
class Call:
    """One tool call a reply made, and the turn that ran it."""

    call: ToolCall
    turn: int


@dataclass
class ModelCall:
    """One model call: what it saw, what it replied, and the turns it led to."""

    prompt: list[ChatMessage]
    reply: ChatMessageAssistant
    turn: int  # the turn whose action the call produced
    last: bool  # the turn's last call (the one the turn's tokens and latency are put on)
    runs: list[Call] = field(default_factory=list)  # its tool calls, by the turn run


def _split_reply(reply: str) -> tuple[str, list[re.Match[str]]]:
    """A tools turn's reply: its text, then up to three calls as ``name(arguments)``
    lines, then ``[n more tool calls]``."""
    lines = reply.splitlines()
    if lines and MORE_CALLS.match(lines[-1]):
        lines.pop()
    calls: list[re.Match[str]] = []
    while lines and len(calls) < SHOWN_CALLS and (match := REPLY_CALL.match(lines[-1])):
        calls.insert(0, match)
        lines.pop()
    return "\n".join(lines), calls


def _reply_calls(turns: list[dict[str, Any]], first: int) -> Iterator[Call]:
    """The tool calls of the reply of turn ``first``'s call, from the turns that ran them
    (the call's own turn, then the turns that used no model call)."""
    _text, shown_calls = _split_reply(str((turns[first].get("llm") or {}).get("reply") or ""))
    for n in range(first, len(turns)):
        llm = turns[n].get("llm")
        if not isinstance(llm, dict) or (n > first and llm.get("prompts")):
            return
        tc = llm.get("tool_call")
        if not isinstance(tc, dict):
            continue
        name, action = str(tc.get("name")), str(turns[n].get("action") or "")
        index = n - first
        arguments: dict[str, Any] | None = None
        if index < len(shown_calls) and shown_calls[index].group(1) == name:
            parsed, error = _arguments(shown_calls[index].group(2))
            arguments = parsed if error is None else None
        if arguments is None:
            rest = action.split(maxsplit=1)
            arguments = ({"code": action} if name == "execute" else
                         {"answer": rest[1]} if name == "submit" and len(rest) > 1 else {})
        yield Call(ToolCall(id=str(tc.get("id")), function=name, arguments=arguments), n)


def model_calls(record: dict[str, Any],
                table: dict[str, dict[str, Any]]) -> list[ModelCall]:
    """Every model call of the episode, in order (none for a run without a model)."""
    turns = turns_of(record)
    prompts: list[tuple[int, list[str]]] = []
    for n, turn in enumerate(turns):
        llm = turn.get("llm")
        for ids in (llm.get("prompts") or []) if isinstance(llm, dict) else []:
            if isinstance(ids, list):
                prompts.append((n, [str(i) for i in ids]))
    # what each prompt was answered with: the assistant message a longer prompt adds
    answered: dict[tuple[str, ...], str] = {}
    for _n, ids in prompts:
        for j in range(1, len(ids)):
            if str((table.get(ids[j]) or {}).get("role")) == "assistant":
                answered.setdefault(tuple(ids[:j]), ids[j])
    functions: dict[str, str] = {}
    out: list[ModelCall] = []
    for k, (n, ids) in enumerate(prompts):
        prompt = [message(table[i], functions) if i in table else
                  ChatMessageUser(content=f"[message {i} is not in the run's messages]")
                  for i in ids]
        last = k + 1 == len(prompts) or prompts[k + 1][0] != n
        runs = list(_reply_calls(turns, n)) if last else []
        after = answered.get(tuple(ids))
        stored = table.get(after) if after is not None else None
        llm = turns[n].get("llm") or {}
        if stored is not None and stored.get("tool_calls"):
            reply = ChatMessageAssistant(content=str(stored.get("content") or ""),
                                         tool_calls=_tool_calls(stored["tool_calls"]))
        elif runs:  # the turn's reply shows its calls as text; the calls are the calls
            text, _shown = _split_reply(str(llm.get("reply") or ""))
            reply = ChatMessageAssistant(content=text, tool_calls=[r.call for r in runs])
        elif last and llm.get("reply") is not None:  # the reply as it came
            reply = ChatMessageAssistant(content=str(llm["reply"]))
        elif stored is not None:
            reply = ChatMessageAssistant(content=str(stored.get("content") or ""))
        else:
            reply = ChatMessageAssistant(content=str(turns[n].get("action") or ""))
        functions.update({c.id: c.function for c in reply.tool_calls or []})
        if runs and reply.tool_calls:
            by_id = {c.id: c for c in reply.tool_calls}
            for r in runs:
                r.call = by_id.get(r.call.id, r.call)
        out.append(ModelCall(prompt, reply, n, last, runs))
    return out
