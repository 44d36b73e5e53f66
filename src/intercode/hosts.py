"""Which ``Host`` and ``Origin`` a server answers: its guard against web pages.

A web page in the user's browser can send requests to any address, loopback included:
a WebSocket is not bound by the same-origin rule, a form or a ``fetch`` without CORS
still goes out (only its answer is hidden), and DNS rebinding points the page's own name
at 127.0.0.1, after which even reading the answers is same-origin. Every server of the
project (``serve openenv``, ``serve mcp`` over HTTP, the scripted chat server) checks
each request, HTTP or WebSocket handshake, before anything else:

- ``Host`` must be a name the server is served under (else 421): on a loopback address
  ``localhost``, ``127.0.0.1`` and ``[::1]`` on any port (a tunnel or a port mapping
  brings another), plus the ``--allowed-host`` names. Bound to another address without
  ``--allowed-host``, any name goes (the server is reached by names it cannot know; a
  token is required there), and with them, that address with its port and the names
  given (and the loopback names when the address is a wildcard, which serves loopback
  too).
- ``Origin``, which only browsers send, must be one of those names too, with the
  server's own port, over ``http`` or ``https`` (else 403); when any ``Host`` goes, the
  ``Host`` of the request itself (same origin). A request without ``Origin`` (a
  program: the OpenEnv and MCP clients, TRL, curl) is not a page's and passes.

``--allowed-host NAME`` allows that name on any port, ``NAME:PORT`` on that port only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, MutableMapping, Sequence
from typing import Any, NamedTuple

from intercode.errors import ConfigError

__all__ = ["HostPolicy", "require_token_off_loopback"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_DEFAULT_PORT = {"http": 80, "https": 443}
_NAME = re.compile(r"^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*"
                   r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$|^\[[0-9a-f:.]+\]$")
_PORT = re.compile(r"^[0-9]{1,5}$")


class Refusal(NamedTuple):
    """Why a request is refused: its HTTP status, a code, and a one-line message."""

    status: int
    code: str
    message: str


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token_off_loopback(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback address without a token: whoever reaches it (or a
    page whose name a DNS rebinding points at it, which the same-origin check lets by)
    could run code in the sandboxes."""
    if not is_loopback(host) and token is None:
        raise ConfigError(f"--host {host} is not a loopback address: anyone who reaches it "
                          "could run code in the sandboxes; give a token with --token-env")


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


def split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` value (``name``, ``name:port``, ``[v6]:port``),
    the name in lower case and an IPv6 address in brackets; None if malformed."""
    value = value.lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[:end + 1], value[end + 1:]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
    if not _NAME.match(name):
        return None
    if port is None:
        return name, None
    if not _PORT.match(port) or not 0 < int(port) < 65536:
        return None
    return name, int(port)


def split_origin(value: str) -> tuple[str, int] | None:
    """``(name, port)`` of an ``Origin`` over http or https (the scheme's port if none
    is given); None for any other (``null``, another scheme, a path, user info)."""
    scheme, sep, rest = value.partition("://")
    default = _DEFAULT_PORT.get(scheme.lower()) if sep else None
    if default is None or "@" in rest:
        return None
    parts = split_host(rest)
    if parts is None:
        return None
    return parts[0], default if parts[1] is None else parts[1]


def _bracketed(host: str) -> str:
    host = host.lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostPolicy:
    """The ``Host`` and ``Origin`` values a server bound to ``bind_host`` answers
    (``allowed``: the ``--allowed-host`` values, ``NAME`` or ``NAME:PORT``)."""

    def __init__(self, bind_host: str, allowed: Sequence[str] = ()) -> None:
        self.any_port: set[str] = set()  # names allowed on any port
        self.exact: set[tuple[str, int]] = set()  # (name, port) allowed
        self.served: set[str] = set()  # names allowed on the port the request came to
        for value in allowed:
            parts = split_host(value.strip()) if value.strip() else None
            if parts is None:
                raise ConfigError(f"bad --allowed-host {value!r}: give a host name or "
                                  "address, with :PORT or without (any port), e.g. "
                                  "intercode.example.org or 192.168.1.5:8000")
            name, port = parts
            if port is None:
                self.any_port.add(name)
            else:
                self.exact.add((name, port))
        wildcard = _is_wildcard(bind_host)
        self.check_host = is_loopback(bind_host) or bool(allowed)
        if is_loopback(bind_host) or wildcard:
            self.served.update(LOOPBACK_NAMES)
        if not wildcard:
            self.served.add(_bracketed(bind_host))
        self.others = sorted(self.any_port) + sorted(f"{n}:{p}" for n, p in self.exact)

    def allows(self, name: str, port: int | None, served: int | None,
               same_port: bool = True) -> bool:
        """Whether ``name`` on ``port`` (None: not given) is allowed on a server that
        got the request on port ``served`` (None: unknown); ``same_port=False`` allows
        the served names on any port (a ``Host``: see :meth:`refusal`)."""
        if name in self.any_port:
            return True
        if name in self.served and (not same_port or port is None or served is None
                                    or port == served):
            return True
        return port is not None and (name, port) in self.exact

    def refusal(self, hosts: Iterable[str], origins: Iterable[str],
                served: int | None) -> Refusal | None:
        """Why a request with these ``Host`` and ``Origin`` header values, received on
        port ``served``, is refused; None when it is not."""
        hosts = list(hosts)
        host = split_host(hosts[0]) if len(hosts) == 1 else None
        # a served name in Host on another port is a tunnel or a port mapping (ssh -L,
        # docker -p), never a rebinding page (its Host is its own name); a page of
        # another local port is told by its Origin, whose port must match
        if self.check_host and (host is None or not self.allows(*host, served, False)):
            shown = hosts[0][:100] if len(hosts) == 1 else f"{len(hosts)} Host headers"
            port = "" if served is None else f":{served}"
            names = ", ".join([*(n + port for n in sorted(self.served)), *self.others])
            return Refusal(421, "bad_host", f"Host {shown!r} is not a name this server "
                           f"is served under ({names}); to allow another, start the "
                           "server with --allowed-host NAME[:PORT]")
        for value in origins:
            origin = split_origin(value)
            if origin is None or not (self.allows(*origin, served) if self.check_host
                                      else self._same(origin, host)):
                return Refusal(403, "bad_origin", f"Origin {value[:100]!r} is not allowed:"
                               " a web page may not use this server (programs send no "
                               "Origin); to allow a page's, start the server with "
                               "--allowed-host NAME[:PORT]")
        return None

    @staticmethod
    def _same(origin: tuple[str, int], host: tuple[str, int | None] | None) -> bool:
        """Whether the origin is the request's own host (any ``Host`` goes)."""
        return host is not None and origin[0] == host[0] and host[1] in (None, origin[1])

    def check(self, scope: MutableMapping[str, Any]) -> Refusal | None:
        """:meth:`refusal` of an ASGI ``http`` or ``websocket`` request."""
        hosts: list[str] = []
        origins: list[str] = []
        for key, value in scope.get("headers", ()):
            if key == b"host":
                hosts.append(bytes(value).decode("latin-1"))
            elif key == b"origin":
                origins.append(bytes(value).decode("latin-1"))
        server = scope.get("server")
        served = server[1] if server and isinstance(server[1], int) else None
        return self.refusal(hosts, origins, served)
