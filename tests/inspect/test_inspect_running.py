"""A cancelled sample (a time limit, an interrupted eval) leaves no environment open."""

from __future__ import annotations

import anyio
from inspect_ai.model import ModelName
from inspect_ai.solver import TaskState

from intercode.integrations.inspectai.episode import POOL
from intercode.integrations.inspectai.running import STORE_KEY, Running, Setup


def test_a_cancelled_episode_closes_its_environment():
    setup = Setup("sql", "spider-dev")
    state = TaskState(model=ModelName("mockllm/model"), sample_id=0, epoch=1, input="q",
                      messages=[])
    seen = {}

    async def body() -> None:
        with anyio.move_on_after(1.0):
            async with Running(setup, state, score_each_turn=True) as episode:
                seen["env"] = episode.env
                await anyio.sleep(30)

    anyio.run(body)
    env = seen["env"]
    idle = POOL.idle_envs()
    assert env not in idle  # not given back ...
    assert env._agent is None and env._gold is None  # ... but closed
    assert state.store.get(STORE_KEY) is None  # not scored


def test_a_finished_episode_is_scored_and_its_environment_reused():
    setup = Setup("sql", "spider-dev")
    state = TaskState(model=ModelName("mockllm/model"), sample_id=0, epoch=1, input="q",
                      messages=[])
    seen = {}

    async def body() -> None:
        async with Running(setup, state, score_each_turn=True) as episode:
            seen["env"] = episode.env
            episode.act("SELECT 1")

    anyio.run(body)
    idle = POOL.idle_envs()
    assert seen["env"] in idle
    outcome = state.store.get(STORE_KEY)
    assert outcome["turns"] == 1 and outcome["reward"] < 1 and outcome["action"] == "SELECT 1"
