"""Warm intercode environments shared by the rollouts of one process, one per rollout.

verifiers runs many rollouts at once on one asyncio loop. Each takes an environment of
its configuration from the pool (a warm one when one is idle, else a new one), runs
every blocking call of it in the pool's threads, and gives it back when its episode is
scored; a broken environment is closed rather than given back. An environment is an
:class:`~intercode.integrations.trl.IntercodeTrlEnv` (the TRL integration's): the same
tools, wording, task checks and never-raise rule, whichever trainer drives it.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from intercode.integrations.trl.environment import IntercodeTrlEnv, environment_class

__all__ = ["EnvPool", "PoolKey", "close_pools", "pool_for"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# a blocking call of one rollout never waits for another's: threads are made as needed
# (each rollout has at most one call in flight), up to this many at once
MAX_THREADS = 512


@dataclass(frozen=True)
class PoolKey:
    """What makes two environments interchangeable."""

    benchmark: str
    dataset: str
    reward: str
    max_turns: int | None
    observation_chars: int | None  # None: environment_class's default
    env_kwargs: str  # JSON, keys sorted

    @classmethod
    def of(cls, benchmark: str, dataset: str, reward: str, max_turns: int | None,
           observation_chars: int | None, env_kwargs: dict[str, Any]) -> PoolKey:
        return cls(benchmark, dataset, reward, max_turns, observation_chars,
                   json.dumps(env_kwargs, sort_keys=True, default=repr))


@dataclass
class EnvPool:
    """Idle warm environments of one :class:`PoolKey`, and the threads their calls run in."""

    key: PoolKey
    env_class: type[IntercodeTrlEnv]
    idle: list[IntercodeTrlEnv] = field(default_factory=list)
    lent: int = 0
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(
        MAX_THREADS, thread_name_prefix="intercode-verifiers"))

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in one of the pool's threads."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: function(*args, **kwargs))

    async def acquire(self) -> IntercodeTrlEnv:
        """An environment for one rollout: an idle one, else a new one (warmed up in a
        thread; a failure to make it raises, as at a trainer's start)."""
        with self.lock:
            if self.closed:
                raise RuntimeError("the intercode environment pool is closed")
            self.lent += 1
            if self.idle:
                return self.idle.pop()
        try:
            return await self.run(self.env_class)
        except BaseException:
            with self.lock:
                self.lent -= 1
            raise

    def release(self, env: IntercodeTrlEnv) -> None:
        """Give ``env`` back: kept warm for the next rollout unless it broke (its
        environment was dropped) or the pool is closed."""
        with self.lock:
            self.lent -= 1
            keep = not self.closed and env.environment is not None
        if keep:
            try:  # nothing of this rollout's episodes reaches the next one
                forget = getattr(getattr(env.environment, "unwrapped", None),
                                 "forget_history", None)
                if forget is not None:
                    forget()
            except Exception:
                keep = False
        if keep:
            with self.lock:
                keep = not self.closed
                if keep:
                    self.idle.append(env)
        if not keep:
            _close(env)

    def close(self) -> None:
        """Close the idle environments (those lent out close when given back)."""
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
        for env in idle:
            _close(env)
        self.executor.shutdown(wait=False)


_pools: dict[PoolKey, EnvPool] = {}
_pools_lock = threading.Lock()


def pool_for(key: PoolKey, env_kwargs: dict[str, Any]) -> EnvPool:
    """The process's pool of ``key`` (made on first use)."""
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            shown: dict[str, Any] = ({} if key.observation_chars is None
                                     else {"observation_chars": key.observation_chars})
            env_class = environment_class(key.benchmark, key.dataset, reward=key.reward,
                                          max_turns=key.max_turns, **shown, **env_kwargs)
            pool = _pools[key] = EnvPool(key, env_class)
        return pool


def close_pools() -> None:
    """Close every pool of the process (also done at exit)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def _close(env: IntercodeTrlEnv) -> None:
    environment, env.environment = env.environment, None
    if environment is None:
        return
    try:
        environment.close()
    except Exception as exc:
        log.warning("intercode: closing an environment: %s", " ".join(str(exc).split())[:300])


atexit.register(close_pools)
