"""The interface of SQL backends and their limits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass

from intercode.errors import ConfigError, SnapshotUnsupported
from intercode.execstate import ExecState
from intercode.sql.results import QueryResult

__all__ = ["SqlBackend", "SqlLimits", "SqlSession"]

MAX_GOLD_RESULTS = 8192  # gold results a backend keeps (see GoldResults)
MAX_GOLD_SIZE = 64 << 20  # and their size together (see result_size)


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


def result_size(result: QueryResult) -> int:
    """About the bytes ``result`` holds: its text and blobs, 16 a row and other value."""
    size = 64
    for row in result.rows or ():
        size += 16
        for value in row:
            size += len(value) if isinstance(value, str | bytes) else 16
    return size


class GoldResults:
    """Gold results by (database, statement), the latest used: at most
    :data:`MAX_GOLD_RESULTS` of them and :data:`MAX_GOLD_SIZE` bytes together
    (``result_size``), so a long run over many tasks with large results keeps no more."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], tuple[QueryResult, int]] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: tuple[str, str]) -> QueryResult | None:
        """The result kept for ``key`` (now the latest used), else None."""
        found = self._kept.get(key)
        if found is None:
            return None
        self._kept.move_to_end(key)
        return found[0]

    def __setitem__(self, key: tuple[str, str], value: QueryResult) -> None:
        old = self._kept.pop(key, None)
        if old is not None:
            self._size -= old[1]
        size = result_size(value)
        if size > MAX_GOLD_SIZE:
            return  # (run again when needed)
        self._kept[key] = (value, size)
        self._size += size
        while len(self._kept) > MAX_GOLD_RESULTS or self._size > MAX_GOLD_SIZE:
            self._size -= self._kept.popitem(last=False)[1][1]


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
