"""The result of one SQL statement, and how it is shown to the agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_RESULT_CHARS", "QueryResult", "Row", "fetch_capped"]

Row = tuple[Any, ...]

#: Characters of a result (as ``str(rows)`` shows it whole) a backend keeps at most; a
#: result is cut there, with a note. It bounds the SQL environment's observations.
MAX_RESULT_CHARS = 8 * 2**20


@dataclass(frozen=True)
class QueryResult:
    """Rows (``None`` for a statement without a result set) or an error.

    ``rows`` holds the whole result up to the backend's row cap (``capped`` says if
    rows were dropped there); the reward uses it. The observation shows at most
    ``max_rows`` of them. ``note`` is the backend's remark on the result (for example
    that it was cut for its size), shown after the rows.
    """

    rows: list[Row] | None = None
    error: str | None = None
    timed_out: bool = False
    affected: int = -1
    capped: bool = False
    message: str = ""
    columns: tuple[str, ...] = field(default=())
    note: str = ""

    @property
    def ok(self) -> bool:
        """Whether the statement ran without error."""
        return self.error is None

    def render(self, max_rows: int) -> str:
        """InterCode's observation: ``str(rows)``, or ``Error executing query: ...``."""
        if self.error is not None:
            return f"Error executing query: {self.error}"
        if self.rows is None:
            text = self.message or f"Query OK, {max(self.affected, 0)} rows affected"
            return text + (f"\n[intercode] {self.note}" if self.note else "")
        shown = self.rows[:max_rows]
        text = str(shown)
        hidden = len(self.rows) - len(shown)
        if hidden > 0 or self.capped:
            more = f"{hidden}+ more" if self.capped and hidden else (
                "more" if self.capped else f"{hidden} more")
            text += f"\n[intercode] {more} rows not shown ({len(shown)} shown)"
        if self.note:
            text += f"\n[intercode] {self.note}"
        return text


def fetch_capped(cursor: Any, cap: int) -> tuple[list[Row], bool]:
    """All rows of a DB-API cursor, at most ``cap`` of them (and whether rows were cut)."""
    rows: list[Row] = []
    while True:
        chunk = cursor.fetchmany(4096)
        if not chunk:
            return rows, False
        rows.extend(chunk)
        if len(rows) > cap:
            return rows[:cap], True
