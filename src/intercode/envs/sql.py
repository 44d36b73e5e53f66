"""The SQL environment as a Gymnasium environment: :class:`SqlEnv`.

Its workings are :mod:`intercode.envs.core.sql`'s (``SqlCore``, which a run's workers use
without Gymnasium); this class adds :class:`~intercode.envs.base.IntercodeEnv`'s
Gymnasium base class and spaces.
"""

from __future__ import annotations

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.sql import SqlCore

__all__ = ["SqlEnv"]


class SqlEnv(SqlCore, IntercodeEnv):
    """``gymnasium.make("intercode/sql-v0", dataset="spider-dev")``.

    Args:
        dataset: ``spider-dev``, ``wikisql-dev``, ``bird-dev`` (or
            ``bird-dev-no-evidence``) or a loaded SQL dataset; its tasks name the dump
            their databases come from and the metric that is their reward.
        backend: ``"sqlite"`` (embedded, default), ``"mysql"`` (a MariaDB or MySQL
            server given by ``mysql_url``), or a backend object.
        limits: statement timeout and row limits.
        metric: the Spider execution metric ``info["exec_match"]`` holds:
            ``exec_match`` (the official evaluator with ``--keep_distinct``) or
            ``exec_match_nodistinct`` (its default: ``DISTINCT`` deleted from both
            queries, which run again on pristine copies when that changes them).
        sandbox_backend: the sandbox backend the ``sqlite`` backend runs the agent's
            statements in (see ``intercode.sandbox.BACKENDS``); ``bwrap`` by default.
    """
