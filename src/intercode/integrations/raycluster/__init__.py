"""intercode on Ray (the ``ray`` extra: ``pip install 'intercode[ray]'``).

:class:`EnvPool`: many remote environments behind a batched API, for RL trainers.
``intercode eval --executor ray`` runs whole evaluations on a cluster
(:mod:`intercode.integrations.raycluster.executor`). Ray itself is imported only when used.
"""

from __future__ import annotations

from intercode.integrations.raycluster.pool import EnvPool, PoolResult

__all__ = ["EnvPool", "PoolResult"]
