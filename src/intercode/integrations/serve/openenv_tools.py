"""OpenEnv's MCP side of ``intercode serve openenv``: the tools as steps and over ``/mcp``.

OpenEnv (0.4 and later) lets a client drive an environment by tools instead of typed
actions: its ``MCPToolClient`` sends ``list_tools`` and ``call_tool`` actions on the
session's WebSocket (OpenEnv decodes them as ``ListToolsAction``/``CallToolAction``
whatever the environment's own action class), and its "production" mode, like any
JSON-RPC client, posts ``tools/list`` and ``tools/call`` to ``/mcp``, which OpenEnv
hands to the environment's ``mcp_client``.

The tools are ``execute`` (``code``), ``evaluate`` and ``submit`` (``answer`` where the
benchmark takes one), described and checked as the MCP server describes and checks them
(:mod:`intercode.integrations.serve.tooldefs`); ``reset`` stays the protocol's own
(OpenEnv reserves the name). A call's observation carries the tool's answer as
``result``, and its ``reward`` and ``done`` are the step's: ``submit`` ends the episode
with the reward, ``evaluate`` scores without ending it, ``execute`` has reward 0.0
(unless the action ended the episode). A call that cannot run (an unknown tool, a bad
argument, no episode) is an observation with ``error`` and one line, never an
exception.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from intercode.errors import IntercodeError
from intercode.integrations.serve._openenv_core import (
    CallToolObservation,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from intercode.integrations.serve.sessions import ServeError
from intercode.integrations.serve.tooldefs import (
    check_arguments,
    tool_descriptions,
    tool_params,
    tool_schema,
)

__all__ = ["TOOLS", "McpBridge", "call_result", "list_tools", "tool_names"]

TOOLS = ("execute", "evaluate", "submit")  # reset is OpenEnv's own (a reserved name)


def tool_names(env: str) -> tuple[str, ...]:
    """The tools an ``env`` server offers over OpenEnv."""
    return tuple(name for name in tool_params(env) if name in TOOLS)


def list_tools(env: str) -> ListToolsObservation:
    """The answer to a ``list_tools`` action."""
    described = tool_descriptions(env)
    return ListToolsObservation(
        tools=[Tool(name=name, description=described[name],
                    input_schema=tool_schema(env, name)) for name in tool_names(env)],
        reward=None, done=False)


Run = Callable[[str, dict[str, Any]], dict[str, Any]]


def call_result(env: str, name: object, arguments: object, run: Run,
                done_before: bool) -> CallToolObservation:
    """The answer to a ``call_tool`` action: ``run(name, checked arguments)`` does the
    work and returns the tool's data; every failure is an ``error`` with one line."""
    if not isinstance(name, str) or name not in tool_names(env):
        # a name that is not a string (over /mcp, where OpenEnv passes it on unchecked)
        # is shown, not kept: the observation's tool_name is a string
        return _failed(name if isinstance(name, str) else _line(repr(name))[:100],
                       ToolErrorType.TOOL_NOT_FOUND,
                       f"unknown tool {name!r}; the tools are {', '.join(tool_names(env))}",
                       done_before)
    if not isinstance(arguments, dict):
        return _failed(name, ToolErrorType.INVALID_ARGS, "arguments must be an object",
                       done_before)
    try:
        checked = check_arguments(env, name, arguments)
    except ServeError as exc:
        return _failed(name, ToolErrorType.INVALID_ARGS, f"bad_request: {exc}", done_before)
    try:
        data = run(name, checked)
    except ServeError as exc:
        return _failed(name, ToolErrorType.EXECUTION_ERROR, _line(f"{exc.code}: {exc}"),
                       done_before)
    except IntercodeError as exc:
        return _failed(name, ToolErrorType.EXECUTION_ERROR, _line(f"infrastructure: {exc}"),
                       done_before)
    reward = float(data["reward"]) if "reward" in data else 0.0
    done = bool(data.get("done", False))
    return CallToolObservation(tool_name=name, result=data, reward=reward, done=done,
                               metadata={"tool": name})


def _failed(name: str, kind: ToolErrorType, message: str,
            done_before: bool) -> CallToolObservation:
    return CallToolObservation(tool_name=name, error=ToolError(error_type=kind,
                                                               message=_line(message)),
                               reward=0.0, done=done_before, metadata={"tool": name})


def _line(text: str) -> str:
    return " ".join(text.split())[:1000]


class McpBridge:
    """The ``mcp_client`` OpenEnv's ``/mcp`` route (and the WebSocket's ``mcp`` message)
    asks an environment for: ``list_tools`` and ``call_tool`` answered by the session's
    own tools, on the server's threads, with no MCP SDK in between.

    ``call`` runs a ``call_tool`` action (the environment's step) off the event loop.
    A tool's failure is a tool result with ``isError`` and one line, as MCP asks.
    """

    def __init__(self, env: str,
                 call: Callable[[object, object], Awaitable[CallToolObservation]]) -> None:
        self._env = env
        self._call = call

    def is_connected(self) -> bool:
        """Always: there is no transport to open (OpenEnv asks before each call)."""
        return True

    async def __aenter__(self) -> McpBridge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def list_tools(self) -> list[dict[str, Any]]:
        """``tools/list``: the tools in MCP's wire form."""
        return [{"name": tool.name, "description": tool.description,
                 "inputSchema": tool.input_schema} for tool in list_tools(self._env).tools]

    async def call_tool(self, name: object, arguments: object = None) -> dict[str, Any]:
        """``tools/call``: a ``CallToolResult`` in MCP's wire form (``data`` as well, which
        OpenEnv's ``MCPToolClient`` returns), with the step's reward and end."""
        observation = await self._call(name, arguments if arguments is not None else {})
        if observation.error is not None:
            text = observation.error.message
            return {"content": [{"type": "text", "text": text}], "isError": True,
                    "structuredContent": {"error": observation.error.error_type.value,
                                          "message": text}}
        data = dict(observation.result or {})
        return {"content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}],
                "isError": False, "structuredContent": data, "data": data,
                "reward": observation.reward, "done": observation.done}
