"""The SQL environment: questions (Spider's, WikiSQL's, BIRD's) answered against a
real database.

The agent's statements run in its own session, which starts every episode on a
pristine copy of the task's database (as InterCode's ``use <db>``). The gold query
runs in a second session on a pristine copy, never on the agent's connection; on a
server, where sessions share the server's resources, it runs at the reset, before the
agent acts. A gold that fails is a ``RewardError``, never an empty gold.
"""

from __future__ import annotations

from typing import Any, Self

from intercode.datasets import Dataset, SqlTask, Task
from intercode.envs import arguments
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.info import ActionInfo
from intercode.envs.settings import EnvSettings
from intercode.errors import (
    ConfigError,
    DatasetError,
    GoldError,
    IntercodeError,
    RewardError,
    SnapshotError,
)
from intercode.execstate import ExecState
from intercode.rewards.execution import execution_reward
from intercode.rewards.spider import METRICS, official_text
from intercode.rewards.sql import SqlReward, result_eq, sql_reward
from intercode.sandbox import Sandbox, require_backend
from intercode.sql.backend import SqlBackend, SqlLimits, SqlSession
from intercode.sql.results import MAX_RESULT_CHARS, QueryResult
from intercode.sql.store import SqlStore

__all__ = ["SqlCore"]

# how a gold that failed because its session did (the server's fault) starts its error
GOLD_SESSION_FAILED = "the gold's session failed"


def dataset_store(dataset: Dataset) -> SqlStore | None:
    """The databases of a dataset: a user dataset's (its tasks name database files) or
    those of the MySQL dump its tasks name (WikiSQL's, BIRD's); ``None`` for Spider's
    (the backends' default). Each is read once per process (cached by content)."""
    sql_tasks = [t for t in dataset if isinstance(t, SqlTask)]
    files = {(t.database_path, t.database_sha256) for t in sql_tasks if t.database_path}
    dumps = {t.dump for t in sql_tasks if not t.database_path}
    if len(dumps) > 1 or (files and dumps - {""}):
        raise DatasetError(f"the tasks of {dataset.name} use databases of several sources; "
                           "a SQL dataset's databases come from one dump or its own files")
    if not files:
        dump = dumps.pop() if dumps else ""
        if not dump:
            return None
        from intercode.sql.store import dump_store

        return dump_store(dump)
    from intercode.sql.userdb import read_database, user_store

    databases = []
    for path, sha256 in sorted(files):
        db = read_database(path)
        if db.sha256 != sha256:
            raise DatasetError(f"the database file {path} changed since its dataset was "
                               "loaded; load the dataset again")
        databases.append(db)
    return user_store(tuple(databases))


def make_backend(backend: str | SqlBackend, limits: SqlLimits,
                 mysql_url: str | None = None, store: SqlStore | None = None,
                 sandbox_backend: str = "bwrap") -> SqlBackend:
    """A backend by name (``sqlite`` or ``mysql``) or the one given; ``store``: the
    databases (Spider's by default: see :func:`dataset_store`); ``sandbox_backend``:
    where SQLite runs the agent's statements."""
    if isinstance(backend, SqlBackend):
        return backend
    if backend == "sqlite":
        from intercode.sql.sqlite_backend import SqliteBackend

        return SqliteBackend(limits, store, sandbox_backend=sandbox_backend)
    if backend == "mysql":
        from intercode.sql.mysql_backend import MysqlBackend

        if not mysql_url:
            raise ConfigError("the mysql backend needs a server URL "
                              "(--mysql-url mysql://user:password@host:port)")
        return MysqlBackend(mysql_url, limits, store)
    raise ConfigError(f"unknown SQL backend {backend!r} (sqlite or mysql)")


class SqlState:
    """A SQL snapshot: the session's state, the last statement and its result (what is
    scored)."""

    def __init__(self, session: ExecState, last: QueryResult | None, last_sql: str) -> None:
        self.session = session
        self.last = last
        self.last_sql = last_sql

    def release(self) -> None:
        """Release the session's state."""
        self.session.release()


class SqlCore(EnvCore):
    """The SQL environment without Gymnasium (see :class:`intercode.envs.sql.SqlEnv`,
    this and :class:`~intercode.envs.base.IntercodeEnv`)."""

    env_name = "sql"

    @classmethod
    def from_settings(cls, dataset: str | Dataset, settings: EnvSettings) -> Self:
        """The SQL backend and server of the settings; the action time limit as SQL's."""
        defaults = SqlLimits()
        limits = SqlLimits(timeout=settings.limits.timeout,
                           max_rows=settings.sql_max_rows or defaults.max_rows,
                           max_result_rows=settings.sql_max_result_rows
                           or defaults.max_result_rows)
        return cls(dataset, backend=settings.sql_backend, mysql_url=settings.mysql_url,
                   limits=limits, metric=settings.sql_metric or METRICS[0],
                   sandbox_backend=settings.sandbox)

    def __init__(self, dataset: str | Dataset = "spider-dev", *,
                 backend: str | SqlBackend = "sqlite", mysql_url: str | None = None,
                 limits: SqlLimits | None = None, metric: str = "exec_match",
                 sandbox_backend: str = "bwrap", render_mode: str | None = None) -> None:
        if metric not in METRICS:
            raise ConfigError(f"unknown SQL metric {metric!r} ({' or '.join(METRICS)})")
        super().__init__(dataset, render_mode=render_mode)
        self.metric = metric
        self.limits = arguments.optional("limits", limits, SqlLimits) or SqlLimits()
        arguments.optional("mysql_url", mysql_url, str)
        self._limit_observations(MAX_RESULT_CHARS + NOTE_CHARS)  # results are cut there
        require_backend(sandbox_backend)
        self._owns_backend = not isinstance(backend, SqlBackend)
        self.backend = make_backend(backend, self.limits, mysql_url,
                                    dataset_store(self.dataset), sandbox_backend)
        self._agent: SqlSession | None = None
        self._gold: SqlSession | None = None
        self._scratch: SqlSession | None = None  # agent SQL rewritten for a metric
        self._last: QueryResult | None = None
        self._last_sql = ""
        self._gold_result: QueryResult | None = None
        self._gold_nodistinct: QueryResult | None = None

    @property
    def dialect(self) -> str:
        """What the agent is talking to (for prompts)."""
        return self.backend.dialect

    def warm_up(self) -> None:
        """Open both sessions."""
        self._session("agent")
        self._session("gold")

    def _prestart(self) -> bool:
        """Begin the agent session's engine sandbox (a fork's spare); only sessions that
        run in a sandbox of their own can (SQLite's, not the MySQL backend's)."""
        session = self._session("agent")
        prestart = getattr(session, "prestart", None)
        return bool(prestart()) if prestart is not None else False

    def _session(self, which: str) -> SqlSession:
        if which == "agent":
            if self._agent is None:
                self._agent = self.backend.session()
            return self._agent
        if which == "scratch":
            if self._scratch is None:
                self._scratch = self.backend.session()
            return self._scratch
        if self._gold is None:
            self._gold = self.backend.gold_session()
        return self._gold

    def load_task(self, task: Task) -> None:
        """Connect the agent to a pristine copy of the task's database; on a backend whose
        gold shares resources with the agent (a server's), run the gold now, before the
        agent can act (see :meth:`gold_result`)."""
        if not isinstance(task, SqlTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a SQL task")
        self._session("agent").reset(task.db)
        self._last = None
        self._last_sql = ""
        self._gold_result = None
        self._gold_nodistinct = None
        if self.backend.gold_at_reset:
            self._gold_result = self._run_gold(task, task.gold)
            if self.metric != "exec_match":
                nodistinct = official_text(task.gold, keep_distinct=False)
                if nodistinct != task.gold:
                    self._gold_nodistinct = self._run_gold(task, nodistinct)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; ``info`` also names the database and the dialect."""
        query, info = super().reset(seed=seed, options=options)
        assert isinstance(self.task, SqlTask)
        info.update(database=self.task.db, hardness=self.task.hardness, dialect=self.dialect)
        return query, info

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run one statement."""
        session = self._session("agent")
        result = session.execute(action)
        self._last = result
        self._last_sql = action
        info = ActionInfo(exit_code=0 if result.ok else 1, timed_out=result.timed_out).as_dict(
            error=result.error, rows=None if result.rows is None else len(result.rows),
            database=session.current_db)
        return result.render(self.limits.max_rows), info

    def gold_result(self) -> QueryResult:
        """The gold query's result on a pristine database; a gold that fails is a
        :class:`RewardError`, never "no rows" (an empty answer would score 1.0)."""
        assert isinstance(self.task, SqlTask)
        self._gold_result = self._settled_gold(self._gold_result, self.task.gold,
                                               "the gold query")
        return self._gold_result

    def _run_gold(self, task: SqlTask, sql: str) -> QueryResult:
        """``sql`` (trusted) on a pristine copy of the task's database, in the gold's
        session; a success is kept for the backend's life, a failure (or a failing
        session) comes back as a result with an error."""
        key = (task.db, sql)
        done = self.backend.gold_results().get(key)
        if done is not None:
            return done
        try:
            session = self._session("gold")
            session.reset(task.db)
            result = session.execute(sql)
        except IntercodeError as exc:
            return QueryResult(error=f"{GOLD_SESSION_FAILED}: {exc}")
        if result.ok:
            self.backend.gold_results()[key] = result
        return result

    def _settled_gold(self, result: QueryResult | None, sql: str, what: str) -> QueryResult:
        """``result`` if it succeeded, else ``sql`` run once more; one that still fails
        is a :class:`RewardError`."""
        assert isinstance(self.task, SqlTask)
        if result is None or not result.ok:
            result = self._run_gold(self.task, sql)
        return _finished(result, what)

    def reward(self) -> SqlReward:
        """The reward of the agent's last result."""
        if self.task is None:
            raise RewardError("no task loaded")
        gold = self.gold_result()
        gold_rows = gold.rows if gold.rows is not None else []
        agent_rows = self._last.rows if self._last is not None and self._last.ok else None
        assert isinstance(self.task, SqlTask)
        if self.task.metric:
            return execution_reward(self.task.metric, agent_rows, gold_rows, self.task.gold)[0]
        return sql_reward(agent_rows, gold_rows, self.task.gold)

    def exec_match_nodistinct(self, reward: SqlReward) -> bool:
        """The official evaluator's default: both queries without ``DISTINCT``.

        A query the deletion leaves unchanged keeps its result; a changed gold runs on
        the gold's pristine session, a changed agent statement on a pristine copy of
        the agent's current database, in a session of its own (agent SQL never runs
        outside an agent session).
        """
        assert isinstance(self.task, SqlTask)
        gold_sql = official_text(self.task.gold, keep_distinct=False)
        agent_sql = official_text(self._last_sql, keep_distinct=False)
        if self._last is None or not self._last.ok:
            return False
        if gold_sql == self.task.gold and agent_sql == self._last_sql:
            return reward.exec_match
        gold = self.gold_result()
        if gold_sql != self.task.gold:
            self._gold_nodistinct = self._settled_gold(self._gold_nodistinct, gold_sql,
                                                       "the gold query without DISTINCT")
            gold = self._gold_nodistinct
        agent = self._last
        if agent_sql != self._last_sql:
            scratch = self._session("scratch")
            scratch.reset(self._session("agent").current_db or self.task.db)
            agent = scratch.execute(agent_sql)
        if not agent.ok or agent.rows is None:
            return False
        gold_rows = gold.rows if gold.rows is not None else []
        return result_eq(list(gold_rows), list(agent.rows), "order by" in gold_sql.lower())

    def evaluate(self) -> Evaluation:
        """What submitting now would give."""
        reward = self.reward()
        gold = self.gold_result()
        match = (reward.exec_match if self.metric == "exec_match"
                 else self.exec_match_nodistinct(reward))
        info = {"reward_parts": {"iou": reward.iou, "kendall_tau": reward.tau},
                "exec_match": match, "exec_metric": self.metric, "gold_failed": not gold.ok,
                "gold_error": gold.error, "gold_rows": None if gold.rows is None else
                len(gold.rows)}
        assert isinstance(self.task, SqlTask)
        if self.task.metric:  # the reward is that benchmark's execution accuracy
            info["reward_metric"] = f"{self.task.metric}_ex"
        return Evaluation(reward.reward, reward.success, info)

    # -- snapshots ---------------------------------------------------------------------

    def save_state(self) -> SqlState:
        """The agent session's databases and settings, and its last result (the reward's)."""
        return SqlState(self._session("agent").save(), self._last, self._last_sql)

    def load_state(self, state: ExecState) -> None:
        """The agent's session back in ``state``."""
        if not isinstance(state, SqlState):
            raise SnapshotError("not a snapshot of a SQL environment")
        self._session("agent").load(state.session)
        self._last, self._last_sql = state.last, state.last_sql

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """``other``'s agent session in ``state``."""
        if not isinstance(state, SqlState) or not isinstance(other, SqlCore):
            raise SnapshotError("not a snapshot of a SQL environment")
        self._session("agent").transfer(state.session, other._session("agent"))
        other._last, other._last_sql = state.last, state.last_sql

    def _refill_spare(self) -> None:
        """A warm spare only on the SQLite backend (a MySQL sibling builds a backend of its
        own: its templates load for seconds, not in the background)."""
        if self.backend.name == "sqlite":
            super()._refill_spare()

    def sibling(self) -> Self:
        """A new environment of this class on this one's backend (its pristine images are
        reused)."""
        args, kwargs = self._init_args
        if self.backend.name != "sqlite":
            return type(self)(*args, **kwargs)
        return type(self)(*args, **{**kwargs, "backend": self.backend})

    def _agent_alive(self) -> bool:
        """Whether the agent session's engine runs (always, for the MySQL backend's)."""
        alive = getattr(self._agent, "alive", None)
        return alive() if alive is not None else True

    def _detach_agent(self) -> Sandbox | None:
        """The agent session's engine sandbox, taken out (SQLite's; see
        :meth:`EnvCore._detach_agent`)."""
        detach = getattr(self._agent, "detach_box", None)
        return detach() if detach is not None else None

    def _adopt_agent(self, box: Sandbox) -> None:
        """``box`` becomes the agent session's engine sandbox."""
        session = self._session("agent")
        adopt = getattr(session, "adopt_box", None)
        if adopt is None:
            raise SnapshotError("this SQL backend's sessions have no sandbox")
        adopt(box)

    def close(self) -> None:
        """Close the sessions (and the backend, if this environment made it); a closed
        fork's engine sandbox may become a warm spare of the environment it was forked
        from (see :meth:`intercode.envs.spares.Spares.recycle`)."""
        self._recycle()
        for session in (self._agent, self._gold, self._scratch):
            if session is not None:
                session.close()
        self._agent = self._gold = self._scratch = None
        if self._owns_backend:
            self.backend.close()
        super().close()


def _finished(result: QueryResult, what: str) -> QueryResult:
    """``result``, if the gold succeeded. A gold that fails (out of time on a loaded
    machine, out of server space, a statement the server refuses) says nothing about the
    task: scoring against no rows, as InterCode did, would give an empty answer 1.0."""
    if result.timed_out:
        raise RewardError(f"{what} did not finish within the statement time limit; "
                          "the episode cannot be scored")
    if not result.ok:
        error = " ".join((result.error or "no result").split())[:300]
        message = f"{what} failed ({error}); the episode cannot be scored"
        if error.startswith(GOLD_SESSION_FAILED):  # the server's fault, not the task's
            raise RewardError(message)
        raise GoldError(message)
    return result
