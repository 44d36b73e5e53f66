"""Build an environment from plain settings (used by the runner's workers and `play`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from intercode.datasets.tasks import Dataset
from intercode.envs.settings import EnvSettings
from intercode.sandbox.limits import Limits

if TYPE_CHECKING:
    from intercode.envs.base import IntercodeEnv
    from intercode.envs.core.base import EnvCore

__all__ = ["create_env", "make_core_env", "make_env"]

E = TypeVar("E", bound="EnvCore")


def create_env(env: str, dataset: str | Dataset, limits: Limits | None = None,
               upstream_quirks: bool = False, sql_backend: str = "sqlite",
               mysql_url: str | None = None, network: bool | str = False) -> IntercodeEnv:
    """An unwrapped environment of the registered benchmark ``env``."""
    settings = EnvSettings(limits=limits or Limits(), upstream_quirks=upstream_quirks,
                           sql_backend=sql_backend, mysql_url=mysql_url, network=network)
    return make_env(env, dataset, settings)


def make_env(env: str, dataset: str | Dataset, settings: EnvSettings) -> IntercodeEnv:
    """An unwrapped environment of the registered benchmark ``env``."""
    from intercode.benchmarks import get

    return _built(get(env).env_class(), dataset, settings)


def make_core_env(env: str, dataset: str | Dataset, settings: EnvSettings) -> EnvCore:
    """The environment a run's worker builds: as :func:`make_env`, but the benchmark's
    class without Gymnasium where it has one (:attr:`Benchmark.core`)."""
    from intercode.benchmarks import get

    return _built(get(env).core_class(), dataset, settings)


def _built(cls: type[E], dataset: str | Dataset, settings: EnvSettings) -> E:
    made = cls.from_settings(dataset, settings)
    made.set_reward_mode(settings.reward)
    return made
