"""Serving environments over protocols (MCP, OpenEnv): sessions on a pool of sandboxes.

Each name is imported on first use; the servers themselves need the ``serve`` extra."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.integrations.serve.sessions import (
        ServeConfig,
        ServeError,
        Session,
        SessionPool,
    )

__all__ = ["ServeConfig", "ServeError", "Session", "SessionPool"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.integrations.serve.sessions": ("ServeConfig", "ServeError", "Session",
                                              "SessionPool"),
})
