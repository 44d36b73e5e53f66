"""Ray, imported only when asked for: the extra's check, the connection, a node's checks.

``ray`` is an optional dependency (``pip install 'intercode[ray]'``); nothing else in
intercode imports it, so a core install never pays for it.
"""

from __future__ import annotations

import logging
import os
import re
from types import ModuleType
from typing import Any

from intercode.errors import ConfigError, DatasetError, SandboxError

__all__ = ["check_address", "check_node", "connect", "node_failure", "node_label", "refuse_network",
           "require_ray"]

INSTALL = "pip install 'intercode[ray]'"
ADDRESS_HELP = "auto, local, ray://HOST:PORT or HOST:PORT"
_HOST_PORT = re.compile(r"^(?:ray://)?[A-Za-z0-9_.\-]+:\d{1,5}$|^(?:ray://)?\[[0-9A-Fa-f:.]+\]:\d{1,5}$")


def require_ray(what: str = "--executor ray") -> ModuleType:
    """The ``ray`` module, or a one-line :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"{what} needs Ray: {INSTALL}") from None
    return ray


def check_address(address: str | None) -> str | None:
    """``address`` if it is one Ray understands (``auto``, ``local``, ``ray://HOST:PORT``,
    ``HOST:PORT``); None is Ray's own choice ($RAY_ADDRESS, else a new local instance)."""
    if address is None:
        return None
    if address in ("auto", "local") or _HOST_PORT.match(address):
        port = int(address.rsplit(":", 1)[1]) if ":" in address else 0
        if address in ("auto", "local") or 0 < port < 65536:
            return address
    raise ConfigError(f"bad --ray-address {address!r} (use {ADDRESS_HELP})")


NETWORK_REFUSED = ("a sandbox network (--network, --host-network) is refused on Ray: an "
                   "agent could reach the Ray ports of its node and the cluster's other "
                   "nodes over the LAN, and run code there")


def refuse_network(network: bool | str) -> None:
    """Sandboxes on a Ray cluster get no network: the isolated one still reaches the
    host's non-loopback addresses (where Ray listens), the host's reaches everything."""
    if network:
        raise ConfigError(NETWORK_REFUSED)


def connect(address: str | None, env_vars: dict[str, str] | None = None) -> bool:
    """Connect this process to Ray (start a local instance for ``local`` or None without
    $RAY_ADDRESS); return whether this call did it (the caller then disconnects). A
    process already connected stays on its cluster."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    address = check_address(address)
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False,
                              "configure_logging": False}
    if env_vars:
        kwargs["runtime_env"] = {"env_vars": env_vars}
    if address is None or address == "local":
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=address, **kwargs)
    except Exception as exc:  # ConnectionError, RuntimeError, ...: one line, not a traceback
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = address or os.environ.get("RAY_ADDRESS") or "a new local instance"
        raise ConfigError(f"cannot start or reach Ray at {where}: {text}") from None
    return True


def node_label() -> str:
    """Which node this process runs on (its IP address and the start of its Ray id)."""
    ray = require_ray()
    try:
        ip = ray.util.get_node_ip_address()
        node = ray.get_runtime_context().get_node_id()[:8]
    except Exception:  # not in a Ray worker: the host name is enough
        import socket

        return socket.gethostname()
    return f"{ip} ({node})"


def check_node(env: str, sandbox: str = "bwrap") -> None:
    """Refuse, in one line, a node that cannot run ``env`` on the ``sandbox`` backend:
    no usable sandbox program (bwrap, a Docker engine). The data is checked when the
    environment is built (hash-verified, from the node's mirror or cache)."""
    from intercode.benchmarks import get
    from intercode.sandbox import preflight

    if get(env).sandbox is not None:
        preflight(sandbox)


def node_failure(exc: BaseException) -> str:
    """What a node's failure to build its environment says (the node named)."""
    text = f"on Ray node {node_label()}: {type(exc).__name__}: {exc}"
    if isinstance(exc, SandboxError):
        text += " (run `intercode doctor` on that node)"
    elif isinstance(exc, DatasetError):
        text += " (each node needs the data: INTERCODE_DATA_MIRROR or INTERCODE_CACHE there)"
    return text
