"""The environments."""

from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.envs.bash import BashEnv
from intercode.envs.ctf import CtfEnv
from intercode.envs.python import PythonEnv
from intercode.envs.sql import SqlEnv

__all__ = ["BashEnv", "CtfEnv", "Evaluation", "IntercodeEnv", "PythonEnv", "SqlEnv"]
