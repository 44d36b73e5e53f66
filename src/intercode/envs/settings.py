"""The settings an environment is built with, in one object (CLI, runner, workers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from intercode.sandbox.limits import Limits

__all__ = ["EnvSettings"]


@dataclass(frozen=True)
class EnvSettings:
    """What the command line and the runner may set for an environment.

    Each environment takes what applies to it (:meth:`IntercodeEnv.from_settings`);
    the benchmark's ``options`` say which of the others it accepts: ``sql_backend``,
    ``mysql_url``, ``sql_max_rows`` (result rows shown), ``sql_max_result_rows`` (rows
    kept for the reward), ``sql_metric`` (``exec_match`` or ``exec_match_nodistinct``:
    the Spider metric reported as ``exec_match``), ``network``, ``test_timeout``
    (seconds per test statement of the Python benchmark), ``gold_cache`` (Bash and Python:
    reuse the gold's stored results, see :mod:`intercode.envs.gold_cache` and
    :mod:`intercode.envs.outcome_store`), ``sandbox`` (the
    sandbox backend: ``bwrap`` or ``docker``, see ``intercode.sandbox``), ``repo_mirror``
    (SWE: a folder of local clones, see :mod:`intercode.swe.repos`), ``image`` (SWE: a
    prebuilt image per instance, a pattern, see :mod:`intercode.swe.images`), ``reward`` (the
    reward episodes earn: ``paper``, ``success``, ``baseline``; :mod:`intercode.rewards.modes`).
    ``answer_check`` (Bash: ``tfidf`` or ``strict``, see :mod:`intercode.rewards.bash`).
    ``None`` is the
    environment's own default.
    """

    limits: Limits = field(default_factory=Limits)
    upstream_quirks: bool = False
    sql_backend: str = "sqlite"
    mysql_url: str | None = None
    network: bool | str = False
    sql_max_rows: int | None = None
    sql_max_result_rows: int | None = None
    test_timeout: float | None = None
    sql_metric: str | None = None
    gold_cache: bool = True
    sandbox: str = "bwrap"
    repo_mirror: str | None = None
    image: str | None = None
    reward: str = "paper"
    answer_check: str = "tfidf"
