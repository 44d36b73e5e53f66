"""The environments."""

from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.envs.bash import BashEnv

__all__ = ["BashEnv", "Evaluation", "IntercodeEnv"]
