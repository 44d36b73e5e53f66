"""The tools every intercode server offers, without any protocol's SDK.

``reset``, ``execute``, ``evaluate`` and ``submit``: their arguments (:func:`tool_params`),
descriptions (:func:`tool_descriptions`), JSON schemas (:func:`tool_schema`) and the
check of a call's arguments (:func:`check_arguments`, one-line
:class:`~intercode.integrations.serve.sessions.ServeError`). The MCP server and the OpenEnv
server's MCP side both describe their tools from here, so the two say the same.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from intercode.benchmarks import get
from intercode.integrations.serve.sessions import MAX_CODE_CHARS, ServeError

__all__ = ["MAX_SEED", "Param", "check_arguments", "tool_descriptions", "tool_params",
           "tool_schema"]

MAX_SEED = 1 << 63


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its JSON type, whether required, what it means."""

    kind: type
    required: bool
    description: str


@functools.cache  # read-only; checked on every call
def tool_params(env: str) -> dict[str, dict[str, Param]]:
    submit: dict[str, Param] = {}
    if get(env).parsing.submit_argument:  # elsewhere `submit x` would run as an action
        submit["answer"] = Param(str, False, "the flag" if env == "ctf" else
                                 "the name of the function to test" if env == "python" else
                                 "what to hand in")
    return {
        "reset": {"task": Param(int, False, "the task index (0-based); default: a task "
                                            "drawn with the seed"),
                  "seed": Param(int, False, "seed of the random draw when task is not given")},
        "execute": {"code": Param(str, True, "the action: code to run in the sandbox")},
        "evaluate": {},
        "submit": submit,
    }


def tool_descriptions(env: str) -> dict[str, str]:
    benchmark = get(env)
    language = benchmark.prompting.language
    submit = {"ctf": "Hand in a flag: a right flag ends the episode with reward 1.0; a wrong "
                     "one scores 0 and the episode goes on.",
              "python": "Hand in the function named by answer: the hidden tests run on it and "
                        "the episode ends with its reward (0.0 to 1.0).",
              "swe": "Hand in the repository's changes (its diff against the base commit): "
                     "the task's tests run on them and the episode ends with reward 1.0 if "
                     "the issue is resolved, else 0.0."}
    return {
        "reset": ("Start an episode (ending any current one) on a task; returns the task's "
                  "query (what to do), its index and the dataset."),
        "execute": (f"Run one action ({language}) in this session's sandbox; returns its "
                    "output, the exit code, whether it timed out and whether the episode "
                    "ended."),
        "evaluate": ("Score the current state as a submission would, without ending the "
                     "episode (InterCode's Try Again reward): the reward and its parts."),
        "submit": submit.get(env, "End the episode and score the current state: the reward "
                                  "(0.0 to 1.0) and its parts."),
    }


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", dict: "object", type(None): "null"}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def tool_schema(env: str, name: str) -> dict[str, Any]:
    """The JSON schema of the tool ``name``'s arguments."""
    params = tool_params(env)[name]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: {"type": _JSON_TYPES[p.kind], "description": p.description}
                       for key, p in params.items()},
        "additionalProperties": False,
    }
    required = [key for key, p in params.items() if p.required]
    if required:
        schema["required"] = required
    if name == "reset":
        schema["properties"]["task"]["minimum"] = 0
        schema["properties"]["seed"]["minimum"] = 0
    if name == "execute":
        schema["properties"]["code"]["maxLength"] = MAX_CODE_CHARS
    return schema


def check_arguments(env: str, tool: str, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments of a call, checked against the tool's parameters (one-line errors)."""
    params = tool_params(env)[tool]
    given = dict(raw or {})
    for key in given:
        if key not in params:
            takes = ", ".join(params) or "no arguments"
            raise ServeError(f"{tool} has no argument {key!r} (it takes {takes})")
    out: dict[str, Any] = {}
    for key, param in params.items():
        value = given.get(key)
        if value is None:
            if param.required:
                raise ServeError(f"{tool} needs the argument {key} "
                                 f"({_JSON_TYPES[param.kind]})")
            continue
        if type(value) is not param.kind:  # bool is not an integer here
            raise ServeError(f"{tool}: {key} must be {_a(_JSON_TYPES[param.kind])}, got "
                             f"{_a(_json_type(value))}")
        out[key] = value
    for key in ("task", "seed"):
        if key in out and not 0 <= out[key] < MAX_SEED:
            raise ServeError(f"{tool}: {key} must be from 0 to {MAX_SEED - 1}, got {out[key]}")
    return out


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
