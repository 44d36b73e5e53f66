"""The verifiers rollouts' pool gives an environment back for the next rollout (wrapped as
``intercode.make`` wraps it) after it forgot what its episodes leave to later ones."""

from __future__ import annotations

import asyncio
from typing import Any

from intercode.integrations.verifiers.pool import PoolKey, close_pools, pool_for


def test_a_released_environment_is_lent_again_with_no_history() -> None:
    key = PoolKey.of("bash", "bash-demo", "paper", 5, None, {"upstream_quirks": True})
    pool = pool_for(key, {"upstream_quirks": True})

    async def twice() -> tuple[Any, Any]:
        first = await pool.acquire()
        inner = first.environment.unwrapped
        inner._agent_redated["testbed/x"] = 1  # as an episode leaves it
        pool.release(first)
        second = await pool.acquire()
        pool.release(second)
        return first, second

    try:
        first, second = asyncio.run(twice())
        assert first is second and pool.lent == 0 and pool.idle == [first]
        assert first.environment.unwrapped._agent_redated == {}
    finally:
        close_pools()
