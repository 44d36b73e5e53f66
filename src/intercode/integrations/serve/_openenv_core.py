"""OpenEnv (the ``openenv`` package), imported once for the client and the server.

Supported: ``openenv`` 0.4 to 0.10 (:data:`SUPPORTED`), the versions whose client
dispatches every call to an ``_*_async`` method (awaited in async code, run directly in
blocking code, or through ``.sync()``) and whose server speaks OpenEnv's MCP side
(``list_tools``/``call_tool`` actions on the WebSocket, JSON-RPC on ``/mcp``). A missing
package, or a version outside that range (``openenv-core`` 0.3, the package's former
name, among them), is the one-line :data:`MISSING` (a :class:`ModuleNotFoundError`).

Importing ``openenv.core`` also imports its Gradio web UI (``env_server.web_interface``,
about 8 s of a 10 s import), which neither side here uses: the server builds the plain
FastAPI app (``HTTPEnvServer.register_routes``), the client only speaks the WebSocket. If
Gradio is not imported yet, it is hidden while ``openenv.core`` loads (OpenEnv catches
the ``ModuleNotFoundError`` and leaves its web UI out) and unhidden at once, so a
program that imports Gradio afterwards gets it as usual.
"""

from __future__ import annotations

import sys
from importlib import metadata

SUPPORTED = ((0, 4), (0, 10))  # the oldest and newest openenv minor versions
MISSING = ("intercode serve openenv needs openenv 0.4 to 0.10: "
           "pip install 'intercode[openenv]'")


def _version() -> tuple[int, int] | None:
    """The installed ``openenv`` distribution's (major, minor), if any."""
    try:
        text = metadata.version("openenv")
    except metadata.PackageNotFoundError:
        return None
    parts = text.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return None


def _check_version() -> None:
    found = _version()
    if found is None:
        try:
            old = metadata.version("openenv-core")
        except metadata.PackageNotFoundError:
            return  # no distribution record (a source checkout): the imports decide
        raise ModuleNotFoundError(f"{MISSING} (found openenv-core {old}, its former name: "
                                  "pip uninstall openenv-core first)", name="openenv")
    if not SUPPORTED[0] <= found <= SUPPORTED[1]:
        raise ModuleNotFoundError(f"{MISSING} (found openenv {found[0]}.{found[1]})",
                                  name="openenv")


def _load(hide_gradio: bool = True) -> None:
    hide = hide_gradio and "gradio" not in sys.modules
    if hide:
        sys.modules["gradio"] = None  # type: ignore[assignment]
    try:
        import openenv.core.env_client
        import openenv.core.env_server.http_server
        import openenv.core.env_server.mcp_types
    except ModuleNotFoundError as exc:
        if hide and exc.name == "gradio":  # a version that needs it after all: load it
            del sys.modules["gradio"]
            hide = False
            _load(hide_gradio=False)
            return
        detail = "" if (exc.name or "").split(".")[0] == "openenv" else f" (no {exc.name})"
        raise ModuleNotFoundError(MISSING + detail, name=exc.name) from None
    finally:
        if hide and sys.modules.get("gradio", 0) is None:
            del sys.modules["gradio"]
    if not hasattr(openenv.core.env_client.EnvClient, "_reset_async"):
        raise ModuleNotFoundError(MISSING + " (this openenv is older than 0.4)",
                                  name="openenv")


_check_version()
_load()

from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402
from openenv.core.env_server.http_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.mcp_types import (  # noqa: E402
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import (  # noqa: E402
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
)

__all__ = ["MISSING", "SUPPORTED", "Action", "CallToolAction", "CallToolObservation",
           "ConcurrencyConfig", "EnvClient", "Environment", "EnvironmentMetadata",
           "HTTPEnvServer", "ListToolsAction", "ListToolsObservation", "Observation", "State",
           "StepResult", "Tool", "ToolError", "ToolErrorType", "WSErrorCode"]
