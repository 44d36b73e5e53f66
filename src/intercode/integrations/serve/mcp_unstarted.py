"""A stdio MCP server that could not start, telling its client why.

A client that launches the server (``intercode serve mcp`` over stdio) often reads only
the protocol: the TypeScript SDK's stdio transport, for one, passes the server a minimal
environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``) and, when the
server exits at start-up, reports nothing but "Connection closed". So a server whose
environment cannot be built (no data mirror, no sandbox root, no Docker engine, ...)
still speaks the protocol: it answers the ``initialize`` handshake (its instructions
name the failure) and every request for its tools and resources with a JSON-RPC error,
``intercode serve mcp could not start: <the reason>``, until its input ends.
"""

from __future__ import annotations

from typing import Any, NoReturn

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

__all__ = ["serve_unstarted"]


def unstarted_server(reason: str) -> Server[Any]:
    """The server answering every request for tools and resources with ``reason``."""
    message = "intercode serve mcp could not start: " + " ".join(reason.split())

    async def refuse(ctx: ServerRequestContext[Any, Any], params: Any) -> NoReturn:
        raise MCPError(types.INTERNAL_ERROR, message)

    return Server("intercode", instructions=message + " (fix the server's command or "
                                                      "environment and restart it)",
                  on_list_tools=refuse, on_call_tool=refuse, on_list_resources=refuse,
                  on_list_resource_templates=refuse, on_read_resource=refuse)


async def serve_unstarted(reason: str) -> None:
    """Serve the failure ``reason`` over standard input and output until input ends."""
    server = unstarted_server(reason)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
