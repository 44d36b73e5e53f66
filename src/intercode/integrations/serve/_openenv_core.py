"""openenv-core, imported once for the client and the server (an optional extra).

A missing package is the one-line :data:`MISSING` (a :class:`ModuleNotFoundError`).

Importing ``openenv.core`` also imports its Gradio web UI (``env_server.web_interface``,
about 8 s of a 10 s import), which neither side here uses: the server builds the plain
FastAPI app (``HTTPEnvServer.register_routes``), the client only speaks the WebSocket. If Gradio is
not imported yet, it is hidden while ``openenv.core`` loads (openenv-core itself catches
the ``ModuleNotFoundError`` and leaves its web UI out) and unhidden at once, so a
program that imports Gradio afterwards gets it as usual.
"""

from __future__ import annotations

import sys

MISSING = "intercode serve openenv needs openenv-core: pip install 'intercode[serve]'"


def _load(hide_gradio: bool = True) -> None:
    hide = hide_gradio and "gradio" not in sys.modules
    if hide:
        sys.modules["gradio"] = None  # type: ignore[assignment]
    try:
        import openenv.core.env_client
        import openenv.core.env_server.http_server  # noqa: F401
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


_load()

from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402
from openenv.core.env_server.http_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import (  # noqa: E402
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
)

__all__ = ["MISSING", "Action", "ConcurrencyConfig", "EnvClient", "Environment",
           "EnvironmentMetadata", "HTTPEnvServer", "Observation", "State", "StepResult",
           "WSErrorCode"]
