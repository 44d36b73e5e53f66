"""intercode: interactive coding benchmarks as sandboxed Gymnasium environments.

>>> import gymnasium as gym, intercode
>>> env = gym.make("intercode/bash-v0", dataset="nl2bash-fs1")
>>> query, info = env.reset(options={"task": 0})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from intercode.import_hook import when_imported
from intercode.lazy import lazy_exports
from intercode.version import __version__

if TYPE_CHECKING:  # the public API, imported on first use (PEP 562; see __getattr__)
    import gymnasium as gym

    from intercode.datasets import (
        BashTask,
        CtfTask,
        Dataset,
        PythonTask,
        SqlTask,
        Task,
        dataset_names,
        load_dataset,
    )
    from intercode.envs import BashEnv, CtfEnv, IntercodeEnv, PythonEnv, SqlEnv
    from intercode.envs.snapshot import Snapshot
    from intercode.errors import (
        ConfigError,
        DatasetError,
        EnvStateError,
        IntercodeError,
        ObservationSpaceError,
        RewardError,
        SandboxError,
        SandboxUnavailableError,
        SnapshotError,
        SnapshotUnsupported,
        TaskUnavailable,
    )
    from intercode.sandbox.limits import Limits
    from intercode.sql.backend import SqlLimits


__all__ = [
    "BashEnv",
    "BashTask",
    "ConfigError",
    "CtfEnv",
    "CtfTask",
    "Dataset",
    "DatasetError",
    "EnvStateError",
    "IntercodeEnv",
    "IntercodeError",
    "Limits",
    "ObservationSpaceError",
    "PythonEnv",
    "PythonTask",
    "RewardError",
    "SandboxError",
    "SandboxUnavailableError",
    "Snapshot",
    "SnapshotError",
    "SnapshotUnsupported",
    "SqlEnv",
    "SqlLimits",
    "SqlTask",
    "Task",
    "TaskUnavailable",
    "__version__",
    "dataset_names",
    "load_dataset",
    "make",
]

# each public name is imported when first asked for, so that `import intercode` (and the
# command line, which imports it) does not load Gymnasium and numpy
__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.datasets": ("BashTask", "CtfTask", "Dataset", "PythonTask", "SqlTask", "Task",
                           "dataset_names", "load_dataset"),
    "intercode.envs": ("BashEnv", "CtfEnv", "IntercodeEnv", "PythonEnv", "SqlEnv"),
    "intercode.errors": ("ConfigError", "DatasetError", "EnvStateError", "IntercodeError",
                         "ObservationSpaceError", "RewardError", "SandboxError",
                         "SandboxUnavailableError", "SnapshotError", "SnapshotUnsupported",
                         "TaskUnavailable"),
    "intercode.envs.snapshot": ("Snapshot",),
    "intercode.sandbox.limits": ("Limits",),
    "intercode.sql.backend": ("SqlLimits",),
})


def _register() -> None:
    from intercode.envs.registration import register_all

    register_all()


# the Gymnasium ids (gym.make("intercode/bash-v0")): now if Gymnasium is loaded, else as
# soon as something imports it
when_imported("gymnasium", _register)


def make(name: str, *, max_turns: int | None = None, **kwargs: Any) -> gym.Env[str, str]:
    """Create an environment by short name (``"bash"``), as ``gymnasium.make`` would.

    ``max_turns`` truncates episodes with Gymnasium's ``TimeLimit``. A wrong argument
    (an unknown name or keyword, a value of the wrong type) is a one-line
    :class:`ConfigError` here, not a failure in the first ``reset``.
    """
    import gymnasium as gym

    from intercode.benchmarks import get
    from intercode.envs.arguments import count, flag, keywords
    from intercode.errors import ConfigError

    benchmark = get(name)
    count("max_turns", max_turns)
    if "max_episode_steps" in kwargs:  # make passes Gymnasium's own, from max_turns
        raise ConfigError(f"make() takes max_turns={kwargs['max_episode_steps']!r}, not "
                          "max_episode_steps (the turns an episode has at most)")
    if kwargs.get("disable_env_checker") is not None:
        flag("disable_env_checker", kwargs["disable_env_checker"])
    if "reward" in kwargs:  # every environment's: the reward mode (intercode.rewards.modes)
        from intercode.rewards.modes import check_mode

        check_mode(kwargs["reward"])
    keywords(name, benchmark.env_class(), {k: v for k, v in kwargs.items() if k != "reward"},
             also=gym.make)
    return gym.make(benchmark.gym_id, max_episode_steps=max_turns, **kwargs)
