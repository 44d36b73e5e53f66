"""The docker backend's networks: ``none``, an isolated bridge, or the host's.

``network`` settings mean on docker what they mean on bubblewrap (see
:mod:`intercode.sandbox.bwrap.netns`):

* ``False`` / ``"none"``: ``NetworkMode: none``, only ``lo`` (the default).
* ``True`` / ``"isolated"``: the Docker bridge network ``intercode-isolated``, made on
  first use with inter-container traffic disabled (``enable_icc=false``: one sandbox
  cannot reach another on it), outgoing traffic masqueraded, Docker's DNS. The host's
  loopback services (127.0.0.1) are out of reach: the sandbox's 127.0.0.1 is its own and
  the kernel does not route the bridge to the host's loopback. As with slirp4netns, the
  host's other addresses (the bridge's gateway included: services listening on all
  addresses), the LAN and the internet are reachable; there is no egress filter.
* ``"host"``: ``NetworkMode: host``, the host's network (on Docker Desktop, its VM's),
  host loopback services included. Only an explicit opt-in.
"""

from __future__ import annotations

from typing import Any

from intercode.errors import SandboxError
from intercode.sandbox.docker.engine import DockerEngine, message
from intercode.sandbox.network import network_mode

__all__ = ["container_settings"]

ISOLATED = "intercode-isolated"
ICC = "com.docker.network.bridge.enable_icc"
LABEL = "org.intercode.network"


def _check(info: dict[str, Any]) -> None:
    """Refuse a network of that name that would let sandboxes reach each other."""
    options = info.get("Options") or {}
    if info.get("Driver") != "bridge" or str(options.get(ICC, "true")).lower() != "false":
        raise SandboxError(
            f"the Docker network {ISOLATED!r} exists but is not an intercode one (a bridge "
            f"with {ICC}=false, so that sandboxes cannot reach each other): remove it "
            f"(`docker network rm {ISOLATED}`) and intercode makes it again")


def isolated_network(engine: DockerEngine) -> str:
    """The isolated network's name, made if missing (once; concurrent runs may race)."""
    status, info = engine.call("GET", f"/networks/{ISOLATED}")
    if status == 200 and isinstance(info, dict):
        _check(info)
        return ISOLATED
    status, reply = engine.call("POST", "/networks/create", {
        "Name": ISOLATED, "Driver": "bridge", "CheckDuplicate": True, "Internal": False,
        "Options": {ICC: "false", "com.docker.network.bridge.enable_ip_masquerade": "true"},
        "Labels": {LABEL: "1"}})
    if status == 409:  # made by another run meanwhile
        _check(engine.ok("GET", f"/networks/{ISOLATED}"))
    elif status != 201:
        raise SandboxError(f"Docker engine: cannot create the network {ISOLATED!r} "
                           f"({status}): {message(reply)}")
    return ISOLATED


def container_settings(engine: DockerEngine, setting: bool | str) -> dict[str, Any]:
    """The parts of a container's create body for ``setting``: top-level fields and the
    ``HostConfig``'s ``NetworkMode``."""
    mode = network_mode(setting)
    if mode == "none":
        return {"NetworkDisabled": True, "NetworkMode": "none"}
    if mode == "host":
        return {"NetworkDisabled": False, "NetworkMode": "host"}
    return {"NetworkDisabled": False, "NetworkMode": isolated_network(engine)}
