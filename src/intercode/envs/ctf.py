"""The CTF environment as a Gymnasium environment: :class:`CtfEnv`.

Its workings are :mod:`intercode.envs.core.ctf`'s (``CtfCore``, which a run's workers use
without Gymnasium); this class adds :class:`~intercode.envs.base.IntercodeEnv`'s
Gymnasium base class and spaces.
"""

from __future__ import annotations

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.ctf import CtfCore

__all__ = ["CtfEnv"]


class CtfEnv(CtfCore, IntercodeEnv):
    """``gymnasium.make("intercode/ctf-v0", dataset="intercode-ctf")``."""
