"""A model's reply read from a Chat Completions answer, whole or streamed, never trusted.

Whatever the server sends is hostile: a field of the wrong type, a tool call without
an id, an id with control characters, thousands of tool calls, a reply of gigabytes.
:func:`from_response` and :func:`from_stream` read what is usable and bound the rest:
at most :data:`MAX_TOOL_CALLS` tool calls are kept (the rest are counted in
``dropped_calls``), a streamed reply stops being read past :data:`MAX_REPLY_CHARS`
(it is then cut, ``finish_reason`` ``length``), and a tool call's id is kept only when it
is a short string (else a made-up ``call_<n>`` replaces it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TOOL_CALLS", "Malformed", "Reply", "ToolCall", "from_response", "from_stream"]

MAX_TOOL_CALLS = 64
MAX_REPLY_CHARS = 1 << 22
MAX_ID_CHARS = 256
MAX_NAME_CHARS = 256


class Malformed(Exception):
    """The server answered with something that is not a chat completion."""


@dataclass(frozen=True)
class ToolCall:
    """One function call of a reply: its id, the function's name, the raw JSON arguments."""

    id: str
    name: str
    arguments: str

    def message(self) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls`` item."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Reply:
    """What the model answered: text, tool calls, why it stopped, what it cost."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    dropped_calls: int = 0


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _get(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]`` (the SDK's models keep unknown fields as dicts)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Malformed(f"an answer whose {what} is not text: {value!r}"[:300])
    return value


def _usage(usage: Any) -> tuple[int | None, int | None, int | None]:
    if usage is None:
        return None, None, None
    details = _get(usage, "completion_tokens_details")
    return (_int(_get(usage, "prompt_tokens")), _int(_get(usage, "completion_tokens")),
            _int(_get(details, "reasoning_tokens")) if details is not None else None)


def _call_id(value: Any, position: int) -> str:
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS:
        return value
    return f"call_{position}"


def _call(raw: Any, position: int) -> ToolCall:
    function = _get(raw, "function")
    name = _get(function, "name") if function is not None else None
    arguments = _get(function, "arguments") if function is not None else None
    if not isinstance(name, str):
        name = ""
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else repr(arguments)[:MAX_REPLY_CHARS]
    return ToolCall(_call_id(_get(raw, "id"), position), name[:MAX_NAME_CHARS], arguments)


def from_response(response: Any) -> Reply:
    """The reply of a whole (not streamed) answer."""
    choices = _get(response, "choices")
    if not isinstance(choices, list) or not choices:
        raise Malformed(f"an answer without choices: {str(response)[:200]!r}")
    message = _get(choices[0], "message")
    text = _text(_get(message, "content"), "content")
    raw_calls = _get(message, "tool_calls") if message is not None else None
    calls: list[ToolCall] = []
    dropped = 0
    if isinstance(raw_calls, list):
        calls = [_call(c, i) for i, c in enumerate(raw_calls[:MAX_TOOL_CALLS])]
        dropped = max(0, len(raw_calls) - MAX_TOOL_CALLS)
    prompt, completion, reasoning = _usage(_get(response, "usage"))
    finish = _get(choices[0], "finish_reason")
    return Reply(text=text, tool_calls=tuple(calls),
                 finish_reason=finish if isinstance(finish, str) else None,
                 prompt_tokens=prompt, completion_tokens=completion,
                 reasoning_tokens=reasoning, dropped_calls=dropped)


class _Partial:
    """A tool call being assembled from stream deltas."""

    def __init__(self, position: int) -> None:
        self.position = position
        self.id: Any = None
        self.name: list[str] = []
        self.arguments: list[str] = []

    def done(self) -> ToolCall:
        return ToolCall(_call_id(self.id, self.position), "".join(self.name)[:MAX_NAME_CHARS],
                        "".join(self.arguments))


def from_stream(chunks: Iterable[Any]) -> Reply:
    """The reply a stream of ``chat.completion.chunk`` objects spells out.

    A stream that ends before any chunk said why the reply ended (no ``finish_reason``)
    was cut: :class:`Malformed` (retried like a dropped connection).
    """
    text: list[str] = []
    size = 0
    calls: dict[Any, _Partial] = {}
    dropped: set[Any] = set()
    finish: str | None = None
    usage: Any = None
    for chunk in chunks:
        if _get(chunk, "usage") is not None:
            usage = _get(chunk, "usage")
        choices = _get(chunk, "choices")
        if not isinstance(choices, list) or not choices:
            continue
        choice = choices[0]
        delta = _get(choice, "delta")
        if delta is not None:
            piece = _text(_get(delta, "content"), "content")
            text.append(piece)
            size += len(piece)
            for raw in _get(delta, "tool_calls") or []:
                size += _add_delta(calls, dropped, raw)
        reason = _get(choice, "finish_reason")
        if isinstance(reason, str) and reason:
            finish = reason
        if size > MAX_REPLY_CHARS:
            finish = "length"  # a reply past any sane size: read no more of it
            break
    if finish is None:
        raise Malformed("the stream ended before the reply did (no finish_reason)")
    prompt, completion, reasoning = _usage(usage)
    return Reply(text="".join(text)[:MAX_REPLY_CHARS],
                 tool_calls=tuple(p.done() for p in calls.values()),
                 finish_reason=finish, prompt_tokens=prompt, completion_tokens=completion,
                 reasoning_tokens=reasoning, dropped_calls=len(dropped))


def _add_delta(calls: dict[Any, _Partial], dropped: set[Any], raw: Any) -> int:
    """Add one tool-call delta; the number of characters it added."""
    index = _get(raw, "index")
    key = index if isinstance(index, int) and not isinstance(index, bool) else len(calls)
    if key not in calls:
        if len(calls) >= MAX_TOOL_CALLS:
            if len(dropped) <= MAX_REPLY_CHARS:
                dropped.add(key)
            return 1
        calls[key] = _Partial(len(calls))
    partial = calls[key]
    if _get(raw, "id") is not None and partial.id is None:
        partial.id = _get(raw, "id")
    function = _get(raw, "function")
    added = 0
    if function is not None:
        for field, parts in (("name", partial.name), ("arguments", partial.arguments)):
            value = _get(function, field)
            if isinstance(value, str):
                parts.append(value)
                added += len(value)
    return added
