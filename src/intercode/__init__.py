"""intercode: interactive coding benchmarks as sandboxed Gymnasium environments.

>>> import gymnasium as gym, intercode
>>> env = gym.make("intercode/bash-v0", dataset="nl2bash-fs1")
>>> query, info = env.reset(options={"task": 0})
"""

from __future__ import annotations

from typing import Any

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
from intercode.envs.registration import register_all
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

__version__ = "0.1.0"

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

register_all()


def make(name: str, *, max_turns: int | None = None, **kwargs: Any) -> gym.Env[str, str]:
    """Create an environment by short name (``"bash"``), as ``gymnasium.make`` would.

    ``max_turns`` truncates episodes with Gymnasium's ``TimeLimit``.
    """
    from intercode.benchmarks import get

    return gym.make(get(name).gym_id, max_episode_steps=max_turns, **kwargs)
