"""Gymnasium ids of the intercode environments."""

from __future__ import annotations

import gymnasium as gym

ENVIRONMENTS = {
    "bash": "intercode.envs.bash:BashEnv",
    "sql": "intercode.envs.sql:SqlEnv",
    "python": "intercode.envs.python:PythonEnv",
    "ctf": "intercode.envs.ctf:CtfEnv",
}


def env_id(name: str) -> str:
    """The Gymnasium id of an environment (``bash`` -> ``intercode/bash-v0``)."""
    return f"intercode/{name}-v0"


def register_all() -> None:
    """Register every environment with Gymnasium (idempotent)."""
    for name, entry_point in ENVIRONMENTS.items():
        if env_id(name) not in gym.registry:
            gym.register(id=env_id(name), entry_point=entry_point, nondeterministic=False,
                         disable_env_checker=True)
