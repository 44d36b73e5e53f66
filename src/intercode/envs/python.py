"""The Python environment as a Gymnasium environment: :class:`PythonEnv`.

Its workings are :mod:`intercode.envs.core.python`'s (``PythonCore``, which a run's workers use
without Gymnasium); this class adds :class:`~intercode.envs.base.IntercodeEnv`'s
Gymnasium base class and spaces.
"""

from __future__ import annotations

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.python import PythonCore

__all__ = ["PythonEnv"]


class PythonEnv(PythonCore, IntercodeEnv):
    """``gymnasium.make("intercode/python-v0", dataset="mbpp")``.

    Actions are Python code (statements, definitions, expressions); ``submit <name>``
    scores the function ``name`` (one the interpreter does not define, or a keyword,
    scores 0 and ``info["note"]`` says why). Without a name, and under Try Again, the
    candidate is the first function of the latest action that ran without error and
    defined functions (upstream took the first ``def`` of the action).
    Each test statement gets its own time limit (``test_timeout`` seconds).

    On an APPS problem, ``submit [<path>]`` hands in the program file ``path``
    (``solution.py`` by default, relative to the interpreter's working directory), and
    Try Again scores that default file; each input/output test runs the program afresh
    with its own time limit (see :mod:`intercode.envs.python_apps`).
    """
