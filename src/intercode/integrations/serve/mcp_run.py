"""Running the MCP server: one client over stdio, or many over streamable HTTP
(:mod:`intercode.integrations.serve.mcp_http`).

A stdio server whose environment cannot be built or started tells its client why over
the protocol (:mod:`intercode.integrations.serve.mcp_unstarted`), not only on its
standard error, which many clients do not show."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import anyio
from mcp.server.stdio import stdio_server

from intercode.errors import ConfigError, IntercodeError
from intercode.integrations.serve.mcp_server import McpService, Transport
from intercode.integrations.serve.sessions import ServeConfig

__all__ = ["serve"]


class StartFailed(Exception):
    """The environment could not be built or started (the reason: ``args[0]``)."""


async def serve_stdio(service: McpService) -> None:
    """Serve one client over standard input and output until its input ends."""
    try:
        try:
            await service.start()
        except (IntercodeError, OSError) as exc:
            raise StartFailed(str(exc)) from exc
        print(f"intercode serve mcp: serving {service.config.env} ({service.config.dataset}) "
              "over stdio", file=sys.stderr, flush=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(service.reaper)
            async with stdio_server() as (read_stream, write_stream):
                await service.server.run(read_stream, write_stream,
                                         service.server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        service.shutdown()


def _unstarted(failure: StartFailed) -> int:
    """The server could not start: say so on standard error and, to a client on standard
    input (not a terminal), over the protocol until it leaves; exit status 2."""
    cause = failure.__cause__
    if (sys.stdin is None or sys.stdin.isatty()) and isinstance(cause, BaseException):
        raise cause  # a person at a terminal (or no input): the usual one-line error
    print(f"intercode: error: {failure}", file=sys.stderr, flush=True)
    from intercode.integrations.serve.mcp_unstarted import serve_unstarted

    try:
        anyio.run(serve_unstarted, str(failure))
    except KeyboardInterrupt:
        pass
    return 2


def serve(config: ServeConfig, transport: Transport = "stdio", host: str = "127.0.0.1",
          port: int = 8000, token: str | None = None,
          allowed_hosts: Sequence[str] = ()) -> int:
    """Run the server until its client leaves (stdio) or it is interrupted (HTTP)."""
    if transport == "stdio":
        try:
            try:
                service = McpService(config, "stdio")
            except (IntercodeError, OSError) as exc:
                raise StartFailed(str(exc)) from exc
            anyio.run(serve_stdio, service)
        except StartFailed as exc:
            return _unstarted(exc)
        except KeyboardInterrupt:
            pass
        return 0
    if transport != "http":
        raise ConfigError(f"unknown transport {transport!r}")
    from intercode.hosts import HostPolicy, require_token_off_loopback
    from intercode.integrations.serve.mcp_http import loop_options, serve_http

    require_token_off_loopback(host, token)
    hosts = HostPolicy(host, allowed_hosts)  # a bad --allowed-host: one line, now
    service = McpService(config, "http")
    try:
        anyio.run(serve_http, service, host, port, token, hosts,
                  backend_options=loop_options())
    except KeyboardInterrupt:
        pass
    return 0
