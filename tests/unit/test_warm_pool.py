"""The warm pool: environments lent by key, reset on return when asked, never kept broken."""

from __future__ import annotations

from typing import Any, cast

from intercode.envs.base import IntercodeEnv
from intercode.envs.pool import PoolKey, WarmPool
from intercode.envs.settings import EnvSettings


class Fake:
    def __init__(self, fail_reset: bool = False) -> None:
        self.fail_reset = fail_reset
        self.task: Any = type("T", (), {"index": 3})()
        self.resets: list[Any] = []
        self.closed = False
        self.forgot = 0

    def forget_history(self) -> None:
        self.forgot += 1

    def reset(self, **kwargs: Any) -> None:
        if self.fail_reset:
            raise RuntimeError("broken")
        self.resets.append(kwargs.get("options"))

    def close(self) -> None:
        self.closed = True


KEY: PoolKey = ("bash", "bash-demo", EnvSettings())
OTHER: PoolKey = ("bash", "bash-demo", EnvSettings(network=True))


def env(fake: Fake) -> IntercodeEnv:
    return cast(IntercodeEnv, fake)


def test_an_environment_given_back_is_lent_again_only_for_its_key() -> None:
    pool = WarmPool()
    a = Fake()
    pool.give_back(KEY, env(a))
    built = env(Fake())
    assert pool.borrow(OTHER, lambda: built) is built
    assert pool.borrow(KEY, lambda: env(Fake())) is env(a)
    assert not a.resets and not a.closed  # not scrubbed: the next episode resets it
    assert a.forgot == 1  # but what its episodes leave to later ones is forgotten


def test_broken_environments_and_those_past_the_bound_are_closed() -> None:
    pool = WarmPool(keep=1)
    a, b, c = Fake(), Fake(), Fake()
    pool.give_back(KEY, env(a), broken=True)
    pool.give_back(KEY, env(b))
    pool.give_back(KEY, env(c))
    assert a.closed and not b.closed and c.closed and pool.idle() == 1


def test_scrub_resets_on_return_and_a_failed_reset_is_closed() -> None:
    pool = WarmPool(scrub=True)
    good, bad = Fake(), Fake(fail_reset=True)
    pool.give_back(KEY, env(good))
    pool.give_back(KEY, env(bad))
    assert good.resets == [{"task": 3}] and good.task is None and not good.closed
    assert bad.closed and pool.idle_envs() == [env(good)]


def test_after_shutdown_nothing_is_kept_but_close_only_empties() -> None:
    pool = WarmPool()
    a, b = Fake(), Fake()
    pool.give_back(KEY, env(a))
    pool.close()
    assert a.closed and pool.idle() == 0
    pool.give_back(KEY, env(b))
    assert pool.idle() == 1
    pool.shutdown()
    c = Fake()
    pool.give_back(KEY, env(c))
    assert b.closed and c.closed and pool.idle() == 0
