"""The ``network`` setting every backend reads: ``none``, ``isolated`` or ``host``.

What each mode is on bubblewrap: :mod:`intercode.sandbox.bwrap.netns`; on Docker:
:mod:`intercode.sandbox.docker.network`.
"""

from __future__ import annotations

from intercode.errors import ConfigError

__all__ = ["network_mode", "resolv_conf"]

MODES = ("none", "isolated", "host")
# the DNS server of the isolated network (slirp4netns's, which bubblewrap's uses)
SLIRP_DNS = "10.0.2.3"


def network_mode(setting: bool | str | None) -> str:
    """``"none"``, ``"isolated"`` or ``"host"`` for a ``network`` setting."""
    if setting is None or setting is False:
        return "none"
    if setting is True:
        return "isolated"
    if isinstance(setting, str) and setting in MODES:
        return setting
    raise ConfigError(f"network must be True, False, 'isolated', 'host' or 'none', "
                      f"not {setting!r}")


def resolv_conf(setting: bool | str | None) -> str | None:
    """The sandbox's generated ``/etc/resolv.conf`` (``None``: the root fs's own)."""
    mode = network_mode(setting)
    if mode == "none":
        return "# no network inside the sandbox\n"
    if mode == "isolated":
        return f"nameserver {SLIRP_DNS}\n"
    return None
