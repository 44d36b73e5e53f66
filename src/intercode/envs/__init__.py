"""The environments."""

from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.envs.bash import BashEnv
from intercode.envs.sql import SqlEnv

__all__ = ["BashEnv", "Evaluation", "IntercodeEnv", "SqlEnv"]
