"""The environments (each class imported on first use: they bring Gymnasium and numpy)."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.envs.base import Evaluation, IntercodeEnv
    from intercode.envs.bash import BashEnv
    from intercode.envs.ctf import CtfEnv
    from intercode.envs.python import PythonEnv
    from intercode.envs.sql import SqlEnv

__all__ = ["BashEnv", "CtfEnv", "Evaluation", "IntercodeEnv", "PythonEnv", "SqlEnv"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.envs.base": ("Evaluation", "IntercodeEnv"),
    "intercode.envs.bash": ("BashEnv",),
    "intercode.envs.ctf": ("CtfEnv",),
    "intercode.envs.python": ("PythonEnv",),
    "intercode.envs.sql": ("SqlEnv",),
})
