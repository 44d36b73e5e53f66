"""A sent message's id and the form the run's message table keeps it in
(:mod:`intercode.runner.messages` stores the table; the policies fill it)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["stored"]


def message_id(role: str, content: str, extra: dict[str, Any] | None = None) -> str:
    """The id of a message: 16 hex digits of a SHA-256 of its role and content (and of
    its tool fields, ``extra``, when it has any)."""
    digest = hashlib.sha256(role.encode("utf-8", "surrogatepass") + b"\0"
                            + content.encode("utf-8", "surrogatepass"))
    if extra:
        digest.update(b"\0" + json.dumps(extra, sort_keys=True).encode("utf-8",
                                                                        "surrogatepass"))
    return digest.hexdigest()[:16]


def stored(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A sent message as the table keeps it (tool calls flattened to id, name,
    arguments), and its id."""
    role, content = str(message.get("role")), str(message.get("content") or "")
    kept: dict[str, Any] = {"role": role, "content": content}
    extra: dict[str, Any] = {}
    calls = message.get("tool_calls")
    if calls:
        extra["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"],
                                "arguments": c["function"]["arguments"]} for c in calls]
    if message.get("tool_call_id") is not None:
        extra["tool_call_id"] = str(message["tool_call_id"])
    kept.update(extra)
    return message_id(role, content, extra), kept
