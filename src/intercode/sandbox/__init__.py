"""Sandboxes: isolated machines with a writable tree, a persistent shell and limits.

Backends register here by name; every backend passes the contract suite in
``tests/contract``.
"""

from __future__ import annotations

from importlib import import_module

from intercode.errors import ConfigError
from intercode.sandbox.base import Change, ExecResult, Sandbox
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits

BACKENDS = {"bwrap": "intercode.sandbox.bwrap:BwrapSandbox"}


def create_sandbox(backend: str = "bwrap", limits: Limits | None = None,
                   layout: Layout | None = None) -> Sandbox:
    """A new (not yet started) sandbox of the named backend."""
    try:
        module, _, cls = BACKENDS[backend].partition(":")
    except KeyError:
        known = ", ".join(BACKENDS)
        raise ConfigError(f"unknown sandbox backend {backend!r}; known: {known}") from None
    sandbox_cls = getattr(import_module(module), cls)
    return sandbox_cls(limits=limits, layout=layout)


__all__ = ["BACKENDS", "Change", "ExecResult", "Layout", "Limits", "Sandbox", "create_sandbox"]
