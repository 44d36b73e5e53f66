"""The interface of SQL backends and their limits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass

from intercode.errors import ConfigError, SnapshotUnsupported
from intercode.execstate import ExecState
from intercode.sql.results import QueryResult

__all__ = ["SqlBackend", "SqlLimits", "SqlSession"]

MAX_GOLD_RESULTS = 512  # gold results a backend keeps (see GoldResults)


@dataclass(frozen=True)
class SqlLimits:
    """Limits of SQL execution.

    Attributes:
        timeout: seconds one statement may run before it is interrupted.
        max_rows: rows of a result shown in the observation (the rest is counted).
        max_result_rows: rows of a result kept at all (for the reward); a statement
            producing more is cut there and marked.
    """

    timeout: float = 10.0
    max_rows: int = 1000
    max_result_rows: int = 200_000

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.max_rows < 1 or self.max_result_rows < self.max_rows:
            raise ConfigError(f"invalid SQL limits {self}")


class SqlSession(ABC):
    """A connection of one episode: it starts on a pristine copy of a database."""

    current_db: str

    @abstractmethod
    def reset(self, db: str) -> None:
        """Drop every change and make a pristine ``db`` the current database."""

    @abstractmethod
    def execute(self, sql: str) -> QueryResult:
        """Run one statement; errors and timeouts come back as data."""

    @abstractmethod
    def close(self) -> None:
        """Release the session."""

    def save(self) -> ExecState:
        """The session's databases and settings now (for a snapshot)."""
        raise SnapshotUnsupported(f"{type(self).__name__} sessions cannot snapshot")

    def load(self, state: ExecState) -> None:
        """Return to a state :meth:`save` made (of this session)."""
        raise SnapshotUnsupported(f"{type(self).__name__} sessions cannot restore")

    def transfer(self, state: ExecState, other: SqlSession) -> None:
        """Make ``state`` (of this session) the state of ``other`` (a fork)."""
        raise SnapshotUnsupported(f"{type(self).__name__} sessions cannot fork")


class GoldResults:
    """Gold results by (database, statement), the :data:`MAX_GOLD_RESULTS` latest used:
    a long run over many tasks with large results keeps no more than that."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], QueryResult] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: tuple[str, str]) -> QueryResult | None:
        """The result kept for ``key`` (now the latest used), else None."""
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def __setitem__(self, key: tuple[str, str], value: QueryResult) -> None:
        self._kept[key] = value
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_GOLD_RESULTS:
            self._kept.popitem(last=False)


class SqlBackend(ABC):
    """Where SQL runs."""

    name = "sql"
    dialect = "SQL"
    #: whether the gold's statements share resources the agent's can exhaust (a server's
    #: temporary space, memory, connections): the gold then runs at the reset, before the
    #: agent acts, not when the episode is scored
    gold_at_reset = False
    _gold_results: GoldResults | None = None

    def gold_results(self) -> GoldResults:
        """The gold statements that succeeded, by (database, statement): they ran on a
        pristine copy, so each runs once per backend (the latest few hundred kept)."""
        if self._gold_results is None:
            self._gold_results = GoldResults()
        return self._gold_results

    @abstractmethod
    def session(self) -> SqlSession:
        """A new session (the agent's, or the gold's)."""

    def gold_session(self) -> SqlSession:
        """A new session for trusted dataset SQL (the gold); by default :meth:`session`."""
        return self.session()

    def close(self) -> None:  # noqa: B027  (backends with nothing to release keep it)
        """Release what the backend holds (idempotent)."""
