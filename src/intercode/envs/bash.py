"""The Bash environment as a Gymnasium environment: :class:`BashEnv`.

Its workings are :mod:`intercode.envs.core.bash`'s (``BashCore``, which a run's workers use
without Gymnasium); this class adds :class:`~intercode.envs.base.IntercodeEnv`'s
Gymnasium base class and spaces.
"""

from __future__ import annotations

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.bash import BashCore

__all__ = ["BashEnv"]


class BashEnv(BashCore, IntercodeEnv):
    """``gymnasium.make("intercode/bash-v0", dataset="nl2bash-fs1")``.

    Args:
        dataset: a Bash dataset name (see ``intercode.dataset_names("bash")``) or a
            loaded :class:`~intercode.datasets.Dataset`.
        limits: sandbox limits (timeout per action, memory, ...).
        layout: what the sandbox looks like inside (root file system, user, host name).
        sandbox: a factory ``limits -> Sandbox``; by default a sandbox of ``backend``.
        backend: the sandbox backend (see ``intercode.sandbox.BACKENDS``); ``bwrap``
            (bubblewrap) by default.
        upstream_quirks: run every action (and the gold) as upstream InterCode did:
            a fresh ``/bin/bash -c "<action>"`` split by Docker's argument splitting,
            which strips inner double quotes, with ``cd`` emulated. Off by default;
            meant for reproducing recorded results, not for new evaluations.
        gold_cache: keep the gold's results on disk across runs and reuse them
            (:mod:`intercode.envs.gold_cache`; never for time-dependent or
            nondeterministic tasks); ``False`` (or ``INTERCODE_GOLD_CACHE=0``) runs the
            gold every episode. Not used with a ``sandbox`` factory of your own.
        answer_check: ``tfidf`` (InterCode's similarity of the answers, the default) or
            ``strict`` (the answers equal as text after a documented normalisation,
            order and case counting; see :mod:`intercode.rewards.bash`).
    """
