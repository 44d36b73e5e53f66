"""Sandboxes: isolated machines with a writable tree, a persistent shell and limits.

Backends register here by name, or from a plugin through the entry point group
``intercode.sandboxes`` (``name = "package.module:Class"``); every backend passes the
contract suite in ``tests/contract`` (``intercode.testing.check_sandbox``).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

from intercode.errors import ConfigError
from intercode.sandbox.base import Change, ExecResult, Sandbox, Snapshots, snapshots_of
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits
from intercode.sandbox.network import network_mode

BACKENDS = {"bwrap": "intercode.sandbox.bwrap:BwrapSandbox",
            "docker": "intercode.sandbox.docker:DockerSandbox"}
SHELLS = ("bash", "python", "sqlite")
GROUP = "intercode.sandboxes"
_plugins_loaded = False


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from intercode.plugins import entry_points_of

    for ep in entry_points_of(GROUP):
        BACKENDS.setdefault(ep.name, ep.value)


def require_backend(backend: str) -> str:
    """``backend`` if it names a registered backend, else :class:`ConfigError` (the
    plugins are read only for a name that is not built in: they cannot replace one)."""
    if isinstance(backend, str) and backend in BACKENDS:
        return backend
    _load_plugins()
    if not isinstance(backend, str) or backend not in BACKENDS:
        known = ", ".join(BACKENDS)
        raise ConfigError(f"unknown sandbox backend {backend!r}; known: {known}")
    return backend


def _backend_class(backend: str) -> Any:
    module, _, cls = BACKENDS[require_backend(backend)].partition(":")
    try:
        found = getattr(import_module(module), cls)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"the sandbox backend {backend!r} ({module}:{cls}) cannot be "
                          f"loaded: {exc}") from None
    return found


def require_network(setting: bool | str | None, backend: str = "bwrap") -> str:
    """The mode (``none``, ``isolated``, ``host``) of a ``network`` setting, after the
    backend checked that this machine can provide it (its ``check_network(mode)``, if it
    has one: bubblewrap's isolated network needs slirp4netns)."""
    mode = network_mode(setting)
    check = getattr(_backend_class(backend), "check_network", None)
    if callable(check):
        check(mode)
    return mode


def describe_root(backend: str, profile: str = "base",
                  packages: Sequence[str] = ()) -> dict[str, Any] | None:
    """What ``config.json`` records as the root a sandbox of ``backend`` runs for a
    benchmark of ``profile`` and extra ``packages`` (built here if missing): the root file
    system bubblewrap mounts, the image Docker runs; ``None`` for a backend that does not
    say (its ``describe_root(profile, packages)``)."""
    describe = getattr(_backend_class(backend), "describe_root", None)
    return describe(profile, tuple(packages)) if callable(describe) else None


def preflight(backend: str) -> None:
    """Check that this machine can run ``backend`` at all (a missing bwrap is one
    :class:`~intercode.errors.SandboxUnavailableError` before a run writes anything)."""
    check = getattr(_backend_class(backend), "preflight", None)
    if callable(check):
        check()


def create_sandbox(backend: str = "bwrap", limits: Limits | None = None,
                   layout: Layout | None = None, *, shell: str | Sequence[str] = "bash",
                   shell_data: bytes = b"") -> Sandbox:
    """A new (not yet started) sandbox of the named backend.

    ``shell`` is what runs the actions: ``bash``, ``python`` (a persistent Python
    interpreter), ``sqlite`` (an SQL engine that starts with the images packed in
    ``shell_data``), or the argv of a program that speaks the shell protocol itself
    (another language's interpreter; see ``inbox/shell.py``). Unknown backends and
    shells are :class:`ConfigError`.
    """
    if isinstance(shell, str) and shell not in SHELLS:
        raise ConfigError(f"unknown sandbox shell {shell!r}; known: {', '.join(SHELLS)}")
    if not isinstance(shell, str) and (not shell or not str(shell[0]).startswith("/")):
        raise ConfigError(f"a shell program is an argv starting with an absolute path, "
                          f"not {shell!r}")
    box: Sandbox = _backend_class(backend)(limits=limits, layout=layout, shell=shell,
                               shell_data=shell_data)
    return box


__all__ = ["BACKENDS", "SHELLS", "Change", "ExecResult", "Layout", "Limits", "Sandbox",
           "Snapshots", "create_sandbox", "describe_root", "preflight", "require_backend",
           "require_network", "snapshots_of"]
