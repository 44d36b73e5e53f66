"""Reading a server result as it streams in, within a row, size and time budget.

The cursor is unbuffered (PyMySQL's ``SSCursor``): rows are read one at a time from
the socket, so the host holds at most the rows kept so far plus one row (a row is
bounded by the server's ``max_allowed_packet``). Reading stops at the first of: the
row cap, the size cap (the characters the rows take in the observation,
``str(rows)``), or the statement's deadline. Each socket read waits at most until
the deadline (plus a short grace), however the agent set its session's time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from intercode.sql.results import MAX_RESULT_CHARS, Row

__all__ = ["arm", "fetch_bounded"]

#: Seconds a socket read may wait past the statement's deadline.
GRACE = 0.5


def row_chars(row: Row) -> int:
    """An upper bound of the characters ``row`` takes in ``str(list_of_rows)``."""
    return 4 + sum(len(repr(value)) + 2 for value in row)


def arm(conn: Any, deadline: float) -> float:
    """Make the connection's next socket reads wait at most until ``deadline`` + grace."""
    remaining = deadline - time.monotonic()
    conn._read_timeout = max(remaining, 0.0) + GRACE  # PyMySQL applies it at each read
    return remaining


def fetch_bounded(cursor: Any, conn: Any, max_rows: int, deadline: float,
                  max_chars: int = MAX_RESULT_CHARS,
                  convert: Callable[[Row], Row] = lambda r: r) -> tuple[list[Row], str]:
    """Rows of ``cursor`` and why reading stopped early (``rows``, ``size``, ``time``; ``""``).

    ``convert`` maps each row before it is kept (and measured).
    """
    rows: list[Row] = []
    size = 2
    while True:
        if arm(conn, deadline) <= 0:
            return rows, "time"
        row = cursor.fetchone()
        if row is None:
            return rows, ""
        if len(rows) >= max_rows:
            return rows, "rows"
        row = convert(tuple(row))
        size += row_chars(row)
        if size > max_chars:
            return rows, "size"
        rows.append(row)
