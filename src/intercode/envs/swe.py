"""The SWE environment as a Gymnasium environment: :class:`SweEnv`.

Its workings are :mod:`intercode.envs.core.swe`'s (``SweCore``, which a run's workers use
without Gymnasium); this class adds :class:`~intercode.envs.base.IntercodeEnv`'s
Gymnasium base class and spaces.
"""

from __future__ import annotations

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.swe import SweCore

__all__ = ["SweEnv"]


class SweEnv(SweCore, IntercodeEnv):
    """``gymnasium.make("intercode/swe-v0", dataset="swe-demo")``.

    Args:
        dataset: ``swe-demo``, ``ic-swe-bench``, a file of SWE-bench instances, or a
            loaded :class:`~intercode.datasets.Dataset`.
        limits: the agent's sandbox limits (per action).
        backend: the sandbox backend (``bwrap`` or ``docker``).
        repo_mirror: a folder of local clones (offline; see :mod:`intercode.swe.repos`);
            default ``$INTERCODE_REPO_MIRROR``.
        test_timeout: seconds the test command may run when scoring (default 900).
        image: a prebuilt image per instance, by pattern (``{instance_id}``,
            ``{docker_id}``; an instance's own ``image`` field comes first): see
            :mod:`intercode.swe.images`. Without one, environments are built here.
    """
