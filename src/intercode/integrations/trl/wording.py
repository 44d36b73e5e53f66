"""The tools' docstrings: the native tool-calling agent's wording, as TRL reads it.

TRL builds each tool's JSON schema from the method's type hints and Google-style
docstring (``transformers.utils.get_json_schema``); these docstrings carry the same
descriptions as ``--agent tools`` (:func:`intercode.agents.prompts.tools`), so a model
sees one wording whichever way it is trained or evaluated.
"""

from __future__ import annotations

from typing import Any

from intercode.agents import prompts

__all__ = ["execute_doc", "submit_doc"]


def _function(env: str, name: str) -> dict[str, Any]:
    for tool in prompts.tools(env):
        if tool["function"]["name"] == name:
            return dict(tool["function"])
    raise LookupError(f"the {env} benchmark declares no {name} tool")  # pragma: no cover


def _docstring(function: dict[str, Any], returns: str) -> str:
    lines = [function["description"]]
    properties: dict[str, Any] = function["parameters"]["properties"]
    if properties:
        lines += ["", "Args:"]
        lines += [f"    {name}: {spec['description']}" for name, spec in properties.items()]
    lines += ["", "Returns:", f"    {returns}"]
    return "\n".join(lines)


def execute_doc(env: str) -> str:
    """The docstring of ``execute(code)`` for the benchmark ``env``."""
    return _docstring(_function(env, "execute"), "the output of the code")


def submit_doc(env: str) -> str:
    """The docstring of ``submit`` (with ``answer`` where the benchmark takes one)."""
    return _docstring(_function(env, "submit"), "what the environment says of the submission")
