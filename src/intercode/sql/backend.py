"""The interface of SQL backends and their limits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from intercode.envs.snapshot import ExecState
from intercode.errors import ConfigError, SnapshotUnsupported
from intercode.sql.results import QueryResult


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


class SqlBackend(ABC):
    """Where SQL runs."""

    name = "sql"
    dialect = "SQL"
    #: whether the gold's statements share resources the agent's can exhaust (a server's
    #: temporary space, memory, connections): the gold then runs at the reset, before the
    #: agent acts, not when the episode is scored
    gold_at_reset = False
    _gold_results: dict[tuple[str, str], QueryResult] | None = None

    def gold_results(self) -> dict[tuple[str, str], QueryResult]:
        """The gold statements that succeeded, by (database, statement): they ran on a
        pristine copy, so each runs once per backend."""
        if self._gold_results is None:
            self._gold_results = {}
        return self._gold_results

    @abstractmethod
    def session(self) -> SqlSession:
        """A new session (the agent's, or the gold's)."""

    def gold_session(self) -> SqlSession:
        """A new session for trusted dataset SQL (the gold); by default :meth:`session`."""
        return self.session()

    def close(self) -> None:  # noqa: B027  (backends with nothing to release keep it)
        """Release what the backend holds (idempotent)."""
