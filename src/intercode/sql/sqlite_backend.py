"""The embedded SQLite backend: every episode gets a private in-memory copy.

Where SQL runs: the agent's statements never execute in the host process. Its
session (:class:`~intercode.sql.sqlite_sandboxed.SandboxedSqliteSession`) drives an SQLite
engine inside a bubblewrap sandbox (``inbox/sqlrepl.py``), with the same isolation
and limits as the Bash shell. The gold query is dataset text, trusted: it runs on
the host, in :class:`LocalSqliteSession`, on its own pristine copy.

Isolation: each session deserialises pristine images, so nothing an agent does
(``INSERT``, ``DROP``, ``CREATE``) reaches the gold's session, the next episode or
another worker. Safety, in both sessions: the hardened connection of
``inbox/sqlconn.py`` (an authorizer refusing ``ATTACH``/``DETACH``, writable
``PRAGMA``\\ s, ``load_extension``, ``fts3_tokenizer`` and unknown virtual tables;
defensive mode; the FTS3 tokenizer interface off). ``VACUUM INTO`` (which writes a
file, through an internal ATTACH) is refused too; a progress handler interrupts any
statement at the time limit.
"""

from __future__ import annotations

from intercode.sandbox import require_backend
from intercode.sandbox.inbox import sqlrepl
from intercode.sql.backend import SqlBackend, SqlLimits
from intercode.sql.sqlite_sandboxed import SandboxedSqliteSession
from intercode.sql.sqlite_session import LocalSqliteSession, SqliteSessionBase
from intercode.sql.store import INFO_SCHEMA, SqlStore, dump_store

__all__ = ["SqliteBackend"]


class SqliteBackend(SqlBackend):
    """A dump's databases (Spider's by default) in SQLite, with MySQL's exploration
    commands emulated."""

    name = "sqlite"
    dialect = ("SQLite 3 (MySQL's SHOW TABLES, SHOW DATABASES, SHOW COLUMNS, DESCRIBE, USE "
               "and SHOW CREATE TABLE also work; text comparison is case-insensitive)")

    def __init__(self, limits: SqlLimits | None = None, store: SqlStore | None = None,
                 sandbox_backend: str = "bwrap") -> None:
        """``sandbox_backend``: where the agent's engines run (``intercode.sandbox.BACKENDS``)."""
        self.limits = limits or SqlLimits()
        self.store = store or dump_store()
        self.sandbox_backend = require_backend(sandbox_backend)
        self._images: bytes | None = None

    def images(self) -> bytes:
        """Every pristine image, packed once for the sandboxed engines."""
        if self._images is None:
            self._images = sqlrepl.pack_images({**self.store.images,
                                                INFO_SCHEMA: self.store.info_schema})
        return self._images

    def session(self) -> SqliteSessionBase:
        """A new private session for agent SQL: its engine runs in a sandbox."""
        return SandboxedSqliteSession(self)

    def gold_session(self) -> SqliteSessionBase:
        """A session for the gold (trusted dataset SQL), in this process."""
        return LocalSqliteSession(self.store, self.limits)
