"""SQL execution backends: embedded SQLite and a MySQL-compatible server.

Each name is imported on first use."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.sql.backend import SqlBackend, SqlLimits, SqlSession

__all__ = ["SqlBackend", "SqlLimits", "SqlSession"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.sql.backend": ("SqlBackend", "SqlLimits", "SqlSession"),
})
