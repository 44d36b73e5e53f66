"""What the SWE environment's test modules share: an environment per backend, one step."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import pytest
from backends import need

# the SWE environment scores with the swe extra's package: a module's ``pytestmark``
NEEDS_SWEBENCH = pytest.mark.skipif(find_spec("swebench") is None,
                                    reason="the swe extra is not installed")


def swe_env(backend: str) -> Iterator[Any]:
    """A ``swe-demo`` environment on ``backend`` (skipped without the swe extra or the
    backend), closed after: the body of a module-scoped fixture."""
    pytest.importorskip("swebench", reason="the swe extra is not installed")
    need(backend)
    from intercode.envs.swe import SweEnv

    made = SweEnv("swe-demo", backend=backend)
    try:
        yield made
    finally:
        made.close()


def step(env: Any, action: str) -> tuple[str, float, dict[str, Any]]:
    """One action: its observation, reward and info."""
    obs, reward, _, _, info = env.step(action)
    return obs, float(reward), info
