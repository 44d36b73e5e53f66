"""What the model saw: the messages of every model call, stored once per run.

A policy that calls a model keeps, per episode, a table of the messages it sent
(``id -> {"role", "content"}``) and gives each turn the ids of each call's prompt, in
order (``turn.llm["prompts"]``: one list of ids per call). A message's id is a hash of
its role and content, so the system prompt and the dialogue's history, sent again with
every call, are stored once.

The runner moves each episode's table into the run's ``messages.jsonl`` (one
``{"id", "role", "content"}`` object per line, appended and fsync'd before the
episode's record, so every id a record names is on disk before the record is), and the
record line keeps only the ids. A record written by :func:`run_episode` outside the
runner keeps its own table in ``messages``.

Native tool calling (``--agent tools``) adds two optional fields, stored and hashed only
when present: an assistant message's ``tool_calls`` (``[{"id", "name", "arguments"}]``)
and a tool message's ``tool_call_id``. :func:`readable` renders them into the text the
report and transcript show.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.errors import ConfigError
from intercode.runner.logs import ResultsLog, encode_json

__all__ = ["FILE_NAME", "MessageTable", "read_messages", "readable"]

FILE_NAME = "messages.jsonl"


TOOL_FIELDS = ("tool_calls", "tool_call_id")


def readable(message: dict[str, Any]) -> str:
    """A message's text with its tool calls (or the call it answers) written out."""
    text = str(message.get("content") or "")
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        lines = [f"[tool call {c.get('name')!s} id={c.get('id')!s}] {c.get('arguments')!s}"
                 for c in calls if isinstance(c, dict)]
        text = "\n".join(([text] if text else []) + lines)
    if message.get("tool_call_id") is not None:
        text = f"[result of {message['tool_call_id']!s}] {text}"
    return text


class MessageTable:
    """The run's ``messages.jsonl``: each message once, appended and fsync'd."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: set[str] = set()
        self._fh: Any = None

    def open_existing(self) -> None:
        """Learn the ids already in the file (a resumed run, of any size), cutting a torn
        last line; a path that is not a regular file is a one-line ``ConfigError``."""
        ResultsLog(self.path).repair()
        try:
            self.known = message_ids(self.path)
        except safeio.Refused as exc:
            raise ConfigError(f"cannot resume: {self.path} {exc}") from None

    def absorb(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write the messages of ``record`` not yet in the file; return the record
        without its own table."""
        table = record.pop("messages", None)
        if not isinstance(table, dict):
            return record
        lines = []
        for mid, message in table.items():
            if mid in self.known or not isinstance(message, dict):
                continue
            line = {"id": mid, "role": message.get("role"), "content": message.get("content")}
            line.update({k: message[k] for k in TOOL_FIELDS if k in message})
            lines.append(encode_json(line) + b"\n")
            self.known.add(mid)
        if lines:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("ab")
            self._fh.write(b"".join(lines))
            self._fh.flush()
            os.fsync(self._fh.fileno())
        return record

    def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def message_ids(path: Path) -> set[str]:
    """The ids of the messages of a run's own ``messages.jsonl`` (any size; an absent
    file has none)."""
    ids: set[str] = set()
    try:
        fh = safeio.open_regular(path, safeio.UNBOUNDED)
    except FileNotFoundError:
        return ids
    with fh:
        for _number, line in safeio.lines(fh, max_total=safeio.UNBOUNDED):
            try:
                obj = None if line is None else safeio.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                ids.add(obj["id"])
    return ids


def read_messages(path: Path) -> dict[str, dict[str, str]]:
    """The messages of a ``messages.jsonl`` (an absent file has none; lines that are
    not messages, a torn last line among them, are skipped), their tool fields written
    into the content (:func:`readable`). A path that is not a regular file, or one past
    :data:`~intercode.safeio.MAX_FILE`, is :class:`~intercode.safeio.Refused`."""
    out: dict[str, dict[str, str]] = {}
    try:
        fh = safeio.open_regular(path)
    except FileNotFoundError:
        return out
    with fh:
        for _number, line in safeio.lines(fh):
            try:
                obj = None if line is None else safeio.loads(line)
            except ValueError:
                continue
            if (isinstance(obj, dict) and isinstance(obj.get("id"), str)
                    and isinstance(obj.get("content"), str)):
                out[obj["id"]] = {"role": str(obj.get("role")), "content": readable(obj)}
    return out
