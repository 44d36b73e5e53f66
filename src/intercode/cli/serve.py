"""``intercode serve PROTOCOL``: an environment as a server (MCP, OpenEnv)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from intercode.cli.argtypes import integer, seconds
from intercode.cli.options import MAX_WORKERS, add_env_options, dataset, settings
from intercode.errors import ConfigError

__all__ = ["add_serve", "cmd_serve"]

ALLOWED_HOST_HELP = ("a Host (and browser Origin) the server answers besides its own "
                     "address (on loopback: localhost, 127.0.0.1, [::1] with its port); "
                     "no port: any; repeatable (docs/serving.md)")


def _add_serving(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("serving")
    g.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (127.0.0.1: this machine only)")
    g.add_argument("--port", type=integer(0, 65535), required=True,
                   help="port to listen on (0: any free one, printed at start)")
    g.add_argument("--max-sessions", type=integer(1, 4096), default=64,
                   help="client sessions at once, each with its own sandboxes (64); "
                        "more are refused as busy")
    g.add_argument("--warm", type=integer(0, 4096), default=4,
                   help="idle environments kept started for the next sessions (4)")
    g.add_argument("--idle-timeout", type=seconds(), default=600.0,
                   help="close a session idle this many seconds (600)")
    g.add_argument("--token-env", default=None, metavar="VAR",
                   help="require the bearer token held by this environment variable")
    g.add_argument("--allowed-host", action="append", default=None, metavar="NAME[:PORT]",
                   help=ALLOWED_HOST_HELP)


def add_serve(sub: Any) -> None:
    """``intercode serve PROTOCOL``: an environment as a server (one subcommand each)."""
    sv = sub.add_parser("serve", help="serve an environment to agents and trainers over a "
                                      "protocol (MCP, OpenEnv)")
    protocols = sv.add_subparsers(dest="protocol", metavar="PROTOCOL", required=True)
    mc = protocols.add_parser("mcp", help="a Model Context Protocol server (stdio or HTTP)")
    add_env_options(mc, env_option=True)
    mc.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                    help="stdio (one client: the process that started the server) or "
                         "streamable HTTP (many clients) (stdio)")
    mc.add_argument("--host", default=None,
                    help="http: address to listen on (127.0.0.1; another needs --token-env)")
    mc.add_argument("--port", type=integer(0, 65535), default=None,
                    help="http: port (8000; 0: any free port, printed at start)")
    mc.add_argument("--max-sessions", type=integer(1, MAX_WORKERS), default=None,
                    help="http: client sessions with an episode at once; past them a "
                         "client gets a busy error (64)")
    mc.add_argument("--warm", type=integer(0, MAX_WORKERS), default=None,
                    help="http: idle environments kept started for the next sessions (4)")
    mc.add_argument("--idle-timeout", type=seconds(), default=600.0,
                    help="seconds without a call after which a session is closed (600)")
    mc.add_argument("--reconnect-grace", type=seconds(), default=None,
                    help="http: seconds a client whose event stream closed during a call "
                         "has, after that call, to reopen it (or call) before it is taken "
                         "for gone and its session closed (5); a stream closed between "
                         "calls ends the session at once")
    mc.add_argument("--token-env", default=None, metavar="VAR",
                    help="http: require `Authorization: Bearer <token>`, the token read "
                         "from the environment variable VAR")
    mc.add_argument("--allowed-host", action="append", default=None, metavar="NAME[:PORT]",
                    help="http: " + ALLOWED_HOST_HELP)
    oe = protocols.add_parser(
        "openenv", help="the OpenEnv protocol (HTTP and WebSocket; TRL's environments); "
                        "client: intercode.integrations.serve.openenv.IntercodeEnvClient")
    add_env_options(oe, env_option=True)
    _add_serving(oe)


def _token(args: argparse.Namespace) -> str | None:
    """The bearer token ``--token-env`` names (None without it; unset is an error)."""
    if args.token_env is None:
        return None
    token = os.environ.get(args.token_env)
    if not token:
        raise ConfigError(f"--token-env {args.token_env}: that environment variable is not "
                          "set or empty")
    return token


def cmd_serve(args: argparse.Namespace) -> int:
    """``intercode serve PROTOCOL`` (its environment already chosen: ``chosen_env``)."""
    return SERVE_COMMANDS[args.protocol](args)


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    """``intercode serve mcp``."""
    try:
        from intercode.integrations.serve.mcp_run import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise ConfigError("intercode serve mcp needs the mcp package: "
                          "pip install 'intercode[mcp]'") from None
    from intercode.integrations.serve.sessions import ServeConfig

    http = args.transport == "http"
    if not http:
        for flag, given in (("--host", args.host), ("--port", args.port),
                            ("--max-sessions", args.max_sessions), ("--warm", args.warm),
                            ("--reconnect-grace", args.reconnect_grace),
                            ("--token-env", args.token_env),
                            ("--allowed-host", args.allowed_host)):
            if given is not None:
                raise ConfigError(f"{flag} applies only to --transport http (a stdio server "
                                  "has one client)")
    token = _token(args)
    max_sessions = (args.max_sessions or 64) if http else 1
    config = ServeConfig(env=args.env, dataset=dataset(args), settings=settings(args),
                         max_sessions=max_sessions,
                         warm=min(max_sessions, 4 if args.warm is None else args.warm),
                         idle_timeout=args.idle_timeout,
                         reconnect_grace=args.reconnect_grace or 5.0)
    return serve(config, args.transport, host=args.host or "127.0.0.1",
                 port=8000 if args.port is None else args.port, token=token,
                 allowed_hosts=args.allowed_host or ())


def cmd_serve_openenv(args: argparse.Namespace) -> int:
    """``intercode serve openenv``: until interrupted."""
    from intercode.integrations.serve.sessions import ServeConfig

    try:
        from intercode.integrations.serve.openenv_server import serve_openenv
    except ModuleNotFoundError as exc:  # openenv (the `openenv` extra) is missing
        raise ConfigError(str(exc)) from None
    token = _token(args)
    config = ServeConfig(env=args.env, dataset=dataset(args), settings=settings(args),
                         max_sessions=args.max_sessions, warm=args.warm,
                         idle_timeout=args.idle_timeout)
    from intercode.hosts import require_token_off_loopback

    require_token_off_loopback(args.host, token)
    serve_openenv(config, host=args.host, port=args.port, token=token,
                  log_level="info" if args.verbose else "warning",
                  allowed_hosts=args.allowed_host or ())
    return 0


SERVE_COMMANDS = {"mcp": cmd_serve_mcp, "openenv": cmd_serve_openenv}
