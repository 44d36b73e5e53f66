"""Build an environment from plain settings (used by the runner's workers and `play`)."""

from __future__ import annotations

from intercode.datasets.tasks import Dataset
from intercode.envs.base import IntercodeEnv
from intercode.envs.settings import EnvSettings
from intercode.sandbox.limits import Limits

__all__ = ["create_env", "make_env"]


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

    made = get(env).env_class().from_settings(dataset, settings)
    made.set_reward_mode(settings.reward)
    return made
