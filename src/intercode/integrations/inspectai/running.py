"""An intercode episode for the Inspect sample being run (blocking calls in a thread)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import anyio
from inspect_ai.solver import TaskState

from intercode.envs.base import IntercodeEnv
from intercode.envs.pool import PoolKey
from intercode.envs.settings import EnvSettings
from intercode.errors import SandboxError
from intercode.integrations.inspectai.episode import POOL, Episode
from intercode.sandbox import require_backend

__all__ = ["STORE_KEY", "Running", "Setup", "blocking"]

STORE_KEY = "intercode:outcome"
T = TypeVar("T")


# Environment calls block, so they run in threads; but not in anyio's worker threads,
# which retire when idle: bwrap's --die-with-parent (PR_SET_PDEATHSIG) kills a sandbox when
# the *thread* that started it exits. These threads live as long as the process.
THREADS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="intercode-env")


async def blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in one of the long-lived environment threads."""
    future = THREADS.submit(fn, *args)
    return await anyio.to_thread.run_sync(future.result)


@dataclass(frozen=True)
class Setup:
    """Which environment the samples run in."""

    env: str
    dataset: str
    sql_backend: str = "sqlite"
    network: bool = False
    sandbox: str = "bwrap"  # the sandbox backend (bwrap or docker)

    def __post_init__(self) -> None:
        require_backend(self.sandbox)  # an unknown name: one line, before any sample runs

    @property
    def settings(self) -> EnvSettings:
        """The environment's settings."""
        return EnvSettings(sql_backend=self.sql_backend, network=self.network,
                           sandbox=self.sandbox)

    @property
    def key(self) -> PoolKey:
        """Which warm environments of the pool the samples can borrow."""
        return self.env, self.dataset, self.settings


class Running:
    """``async with Running(setup, state, ...) as episode``: an environment from the pool,
    reset to the sample's task; on exit the outcome goes into ``state.store`` (what
    :func:`intercode.integrations.inspectai.scorer.intercode_scorer` reports) and the
    environment back."""

    def __init__(self, setup: Setup, state: TaskState, score_each_turn: bool) -> None:
        self.setup = setup
        self.state = state
        self.score_each_turn = score_each_turn
        self.env: IntercodeEnv | None = None
        self.episode: Episode | None = None

    async def __aenter__(self) -> Episode:
        key = self.setup.key
        self.env = await blocking(POOL.borrow, key)
        try:
            self.episode = await blocking(Episode, self.env, int(self.state.sample_id),
                                          self.score_each_turn)
        except BaseException:
            await blocking(POOL.give_back, key, self.env, True)
            raise
        return self.episode

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self.env is not None and self.episode is not None
        # cancelled (a time limit, an interrupted eval): an action may still be running in
        # its thread, so the environment is not scored but closed; shielded, so that the
        # clean-up itself is not cancelled and no sandbox is left behind
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
        broken = cancelled or isinstance(exc, SandboxError)
        with anyio.CancelScope(shield=True):
            try:
                if not broken:
                    outcome = await blocking(self.episode.finish)
                    self.state.store.set(STORE_KEY, outcome.to_json())
                    broken = outcome.agent_fault is not None
            except SandboxError:
                broken = True
                raise
            finally:
                await blocking(POOL.give_back, self.setup.key, self.env, broken)
