"""A session of the MySQL backend: one connection, as an account of its own.

The session works on private copies of the databases it uses, inside a transaction
(see ``mysql_backend``). Results are read as they stream in, within a row, size and
time budget (``mysql_fetch``); a statement that overruns is stopped from a second
connection of the same account. Server messages are cut at ``MAX_ERROR_CHARS``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from intercode.errors import SandboxError, SnapshotError, SnapshotUnsupported
from intercode.execstate import ExecState
from intercode.sql import mysql_compat as compat
from intercode.sql import mysql_snapshot as snaps
from intercode.sql.backend import SqlSession
from intercode.sql.mysql_accounts import Account
from intercode.sql.mysql_fetch import arm, fetch_bounded
from intercode.sql.results import QueryResult

if TYPE_CHECKING:
    from intercode.sql.mysql_backend import MysqlBackend

__all__ = ["MysqlSession", "server_message", "statement_kind"]

READ = {"SELECT", "SHOW", "DESC", "DESCRIBE", "EXPLAIN", "HELP", "WITH", "VALUES", "TABLE"}
DML = {"INSERT", "UPDATE", "DELETE", "REPLACE"}
# a comment cannot reach past its first */, and nothing is given back once skipped: a lazy
# /\*.*?\*/ in a backtracking loop took 2^n steps for '/**/' * n + '1' (the host hung)
_FIRST_WORD = re.compile(r"^(?:\s|/\*(?:[^*]|\*(?!/))*\*/|--[^\n]*\n|#[^\n]*\n|\()*+([A-Za-z]+)")
TIMEOUT_ERRORS = {1969, 3024, 1317}  # MariaDB / MySQL statement time limit, interrupted
LOST = {2013, 2006, 2014, 0}  # lost connection (client-side timeout), out of sync
MAX_ERROR_CHARS = 1000
BAD_DATABASE = 1049  # ER_BAD_DB_ERROR: Unknown database
_EXECUTABLE_COMMENT = re.compile(r"/\*M?!", re.I)
#: What an agent session's statements may hold on the server, set again after every
#: statement that may change a setting (a server's ``maximum-<name>`` settings, see
#: scripts/mariadb-intercode.cnf, also bound a ``SET STATEMENT`` within one statement).
#: A MEMORY table (server memory, until the reset) and an internal temporary table that
#: spills to the server's tmpdir (until the statement ends) are cut at these sizes.
MEMORY_TABLE_BYTES = 16 << 20
DISK_TEMP_TABLE_BYTES = 256 << 20


def statement_kind(sql: str) -> str:
    """``read``, ``dml`` (rolled back at reset) or ``other`` (may commit or leave session
    state: redo the copy, start a fresh connection).

    The server executes what stands in ``/*! ... */`` and ``/*M! ... */`` comments
    (``/*!CREATE OR REPLACE TABLE city*/ SELECT 1`` is a ``CREATE``), so a statement
    with one is ``other``; so is a read or a write that sets a user variable
    (``SELECT @a := 1``) or takes a user lock (``GET_LOCK``), which a rollback keeps.
    """
    if _EXECUTABLE_COMMENT.search(sql):
        return "other"
    m = _FIRST_WORD.match(sql)
    word = m.group(1).upper() if m else ""
    if word not in READ and word not in DML:
        return "other"
    if _keeps_session_state(sql):
        return "other"
    return "read" if word in READ else "dml"


def server_message(exc: BaseException) -> str:
    """A driver exception's server message, on one line."""
    text = str(exc.args[-1]) if exc.args else str(exc)
    return " ".join(text.split())[:MAX_ERROR_CHARS]


def _keeps_session_state(sql: str) -> bool:
    """Whether ``sql`` may set a user variable or take a user lock. Read on the raw text:
    the server's comments are not the tokeniser's (``SELECT --@a:=5`` sets ``@a``)."""
    return "@" in sql or "get_lock" in sql.lower()


class MysqlSession(SqlSession):
    """One connection, as an account of its own, on private copies of the databases it uses."""

    def __init__(self, backend: MysqlBackend, sid: int, trusted: bool = False) -> None:
        assert backend.accounts is not None
        self.backend = backend
        self.sid = sid
        self.trusted = trusted  # the gold's (dataset SQL): no bounds on its tables
        self.current_db = ""
        self.account: Account = backend.accounts.create()
        self._copies: set[str] = set()
        self._dirty: set[str] = set()
        self._names: dict[str, str] = {}
        self._snapshots: dict[str, snaps.MysqlState] = {}
        # statements that could write (any but a plain read) run so far, and the state
        # (ident, that count) the databases were last made equal to by a save or load
        self._writes = 0
        self._synced: tuple[str, int] | None = None
        self.conn = self._login()
        self._configure()

    def _login(self) -> Any:
        assert self.backend.accounts is not None
        return self.backend.accounts.login(self.account, self.backend.connect)

    def _configure(self) -> None:
        timeout = self.backend.limits.timeout
        mariadb = "mariadb" in self.backend.server.lower()
        settings = ([f"max_statement_time = {timeout:g}"] if mariadb
                    else [f"max_execution_time = {int(timeout * 1000)}"])
        if not self.trusted:
            settings += [f"max_heap_table_size = {MEMORY_TABLE_BYTES}",
                         f"tmp_table_size = {MEMORY_TABLE_BYTES}"]
            if mariadb:
                settings.append(f"tmp_disk_table_size = {DISK_TEMP_TABLE_BYTES}")
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION " + ", ".join(settings))

    @contextmanager
    def _server_errors(self, what: str) -> Iterator[None]:
        """A server error outside the agent's statement (making a copy, logging in, a
        rollback) as a one-line :class:`SandboxError` (the agent's own statements'
        errors are observations, see ``_run``)."""
        try:
            yield
        except self.backend._pymysql.err.Error as exc:
            raise SandboxError(f"the SQL server failed {what}: "
                               f"{server_message(exc)}") from None

    def _physical(self, db: str, fresh: bool = False) -> str:
        """The session's copy of ``db``, made if missing (or, at a reset, if dirty)."""
        target = self.backend.copy_name(self.sid, db)
        if db not in self._copies or (fresh and db in self._dirty):
            self.backend.clone(db, target)
            if db not in self._copies:
                assert self.backend.accounts is not None
                self.backend.accounts.grant(self.account, target)
            self._copies.add(db)
            self._dirty.discard(db)
        return target

    def reset(self, db: str) -> None:
        """Roll back, redo copies that a statement may have committed to, use ``db``."""
        name = self._canonical(db)
        if name is None:
            raise KeyError(db)
        with self._server_errors(f"to reset the session to {name}"):
            self._reset(name)

    def _reset(self, name: str) -> None:
        if self._dirty:
            self._fresh_connection()
        else:
            self._rollback()
        for dirty in list(self._dirty):
            self._physical(dirty, fresh=True)
        self._use(name)

    def _fresh_connection(self) -> None:
        """Start on a new connection: no session state of the old one survives.

        Temporary tables (which would hide the copy's tables), variables, table locks and
        prepared statements end with the connection; a prepared XA transaction would not,
        and would block the re-copy, so it is rolled back first.
        """
        try:
            with self.conn.cursor() as cur:
                for xid in self._prepared_xids(cur):
                    cur.execute(f"XA ROLLBACK {xid}")
            self.conn.rollback()
        except self.backend._pymysql.err.Error:
            pass  # the connection is going anyway
        try:
            self.conn.close()
        except Exception:  # already broken
            pass
        self.conn = self._login()
        self._configure()

    def _prepared_xids(self, cur: Any) -> list[str]:
        """The prepared XA transactions this account can see, as SQL xid literals."""
        if "mariadb" in self.backend.server.lower():
            cur.execute("XA RECOVER FORMAT='SQL'")
            return [str(row[3]) for row in cur.fetchall()]
        cur.execute("XA RECOVER CONVERT XID")
        xids = []
        for form, glen, blen, data in cur.fetchall():
            raw = bytes.fromhex(str(data)[2:])
            xids.append(f"X'{raw[:glen].hex()}',X'{raw[glen:glen + blen].hex()}',{int(form)}")
        return xids

    def _rollback(self) -> None:
        try:
            self.conn.rollback()
        except self.backend._pymysql.err.Error:
            self._reconnect()

    def _reconnect(self) -> None:
        try:
            self.conn.close()
        except Exception:  # the connection is already broken
            pass
        self.conn = self._login()
        self._configure()
        self._dirty |= self._copies

    def _kill(self, thread_id: int, query_only: bool) -> None:
        """Stop a statement (or connection) of this session, from a second connection."""
        try:
            side = self._login()
        except SandboxError:
            return
        try:
            with side.cursor() as cur:
                cur.execute(f"KILL {'QUERY ' if query_only else ''}{int(thread_id)}")
        except self.backend._pymysql.err.Error:
            pass  # it already ended
        finally:
            side.close()

    def _use(self, name: str) -> None:
        """Select the copy of ``name``; one the agent dropped (``DROP DATABASE`` on its
        own copy, which its grants allow) is made again rather than failing the step."""
        physical = self._physical(name)
        try:
            self.conn.select_db(physical)
        except self.backend._pymysql.err.OperationalError as exc:
            if (exc.args[0] if exc.args else 0) != BAD_DATABASE:
                raise
            self._dirty.add(name)
            self.conn.select_db(self._physical(name, fresh=True))
        self.conn.begin()
        self.current_db = name
        self._names = {self.backend.copy_name(self.sid, n): n for n in self._copies}

    # -- snapshots (see mysql_snapshot) --------------------------------------------------

    def save(self) -> snaps.MysqlState:
        """Copy the session's databases and record its settings; the session goes on, on a
        fresh connection (what a restore would give: see ``mysql_snapshot``)."""
        with self._server_errors("to take a snapshot"):
            return self._save()

    def _save(self) -> snaps.MysqlState:
        if "mariadb" not in self.backend.server.lower():
            raise SnapshotUnsupported("snapshots of the MySQL backend need a MariaDB server "
                                      "(they read user variables from USER_VARIABLES)")
        if len(self._snapshots) >= snaps.MAX_LIVE:
            raise SnapshotError(f"this session holds {snaps.MAX_LIVE} live snapshots, the "
                                "most it may: release some (snap.release())")
        now, variables = self._capture()
        self._settle(commit=True)
        settings = self._changed(now) if now else {}
        state = snaps.MysqlState(self, {}, self.current_db, {}, {})
        try:
            found = {db: snaps.inventory(self.backend, self.backend.copy_name(self.sid, db))
                     for db in sorted(self._copies)}
            state.size = sum(f.size for f in found.values() if f is not None)
            held = sum(s.size for s in self._snapshots.values())
            if held + state.size > snaps.MAX_BYTES:
                raise SnapshotError(f"the session's live snapshots would hold more than "
                                    f"{snaps.MAX_BYTES >> 20} MiB: release some")
            self._snapshots[state.ident] = state
            for db, inv in found.items():
                target = None if inv is None else snaps.snapshot_name(self.backend,
                                                                      state.ident, db)
                state.copies[db] = target
                if inv is not None and target is not None:
                    snaps.copy_database(self.backend, self.backend.copy_name(self.sid, db),
                                        inv, target)
                    state.inventories[db] = inv
            state.settings, state.variables = settings, variables
            self._synced = (state.ident, self._writes)
        except BaseException:
            state.release()
            raise
        finally:
            self._resume(settings, variables, self.current_db)
        return state

    def load(self, state: ExecState) -> None:
        """The session's databases and settings back as in ``state``."""
        state = self._own(state)
        with self._server_errors("to restore a snapshot"):
            self._install(state)

    def transfer(self, state: ExecState, other: SqlSession) -> None:
        """``other`` (a session on the same server) in ``state``."""
        state = self._own(state)
        if not isinstance(other, MysqlSession) or other.backend.args != self.backend.args:
            raise SnapshotError("a MySQL snapshot forks only into a session of the same server")
        with self._server_errors("to fork a snapshot"):
            other._install(state)

    def forget_snapshot(self, state: snaps.MysqlState) -> None:
        """``state`` was released."""
        self._snapshots.pop(state.ident, None)

    def _own(self, state: ExecState) -> snaps.MysqlState:
        if (not isinstance(state, snaps.MysqlState) or state.session is not self
                or state.released or self._snapshots.get(state.ident) is not state):
            raise SnapshotError("not a live snapshot of this SQL session")
        return state

    def _install(self, state: snaps.MysqlState) -> None:
        """Copy ``state``'s databases over this session's, replay its settings. The copy
        is skipped when this session's databases are ``state``'s already (it saved or
        restored it, and ran nothing since that could write: see ``_writes``)."""
        self._settle(commit=False)
        if (state.session is self and self._synced == (state.ident, self._writes)
                and self._copies == set(state.copies)):
            self._resume(state.settings, state.variables, state.current_db)
            return
        try:
            for db in self._copies - set(state.copies):  # made since: pristine when used
                self.backend.query(f"DROP DATABASE IF EXISTS "
                                   f"`{self.backend.copy_name(self.sid, db)}`")
            self._copies &= set(state.copies)
            for db, source in state.copies.items():
                target = self.backend.copy_name(self.sid, db)
                found = state.inventories.get(db)
                if found is None or source is None:
                    self.backend.query(f"DROP DATABASE IF EXISTS `{target}`")
                else:
                    snaps.copy_database(self.backend, source, found, target)
                if db not in self._copies:
                    assert self.backend.accounts is not None
                    self.backend.accounts.grant(self.account, target)
                    self._copies.add(db)
        finally:
            self._dirty |= self._copies
        self._synced = (state.ident, self._writes)
        self._resume(state.settings, state.variables, state.current_db)

    def _capture(self) -> tuple[dict[str, str | None], dict[str, Any]]:
        """The connection's session variables, and its user variables."""
        try:
            with self.conn.cursor() as cur:
                return snaps.session_variables(cur), snaps.user_variables(cur)
        except self.backend._pymysql.err.Error as exc:
            if (exc.args[0] if exc.args else 0) in snaps.NO_TABLE:
                raise SnapshotUnsupported("this MariaDB server has no information_schema."
                                          "USER_VARIABLES (the user_variables plugin), which "
                                          "snapshots need") from None
            return {}, {}  # the connection broke: nothing of it survives

    def _changed(self, now: dict[str, str | None]) -> dict[str, str | None]:
        """The settings of ``now`` that differ from a fresh session's (the connection is
        a fresh one)."""
        if self.backend.session_defaults is None:
            with self.conn.cursor() as cur:
                self.backend.session_defaults = snaps.session_variables(cur)
        return snaps.changed_settings(now, self.backend.session_defaults)

    def _settle(self, commit: bool) -> None:
        """End the connection (committing its transaction first if ``commit``)."""
        if commit:
            try:
                self.conn.commit()
            except self.backend._pymysql.err.Error:
                pass  # an XA transaction, a broken connection: it ends with the connection
        self._fresh_connection()

    def _resume(self, settings: dict[str, str | None], variables: dict[str, Any],
                db: str) -> None:
        snaps.replay(self.conn, settings, variables)
        self._configure()
        self._dirty |= self._copies
        if db:
            self._use(db)

    def _canonical(self, db: str) -> str | None:
        for name in self.backend.store.databases:
            if name.lower() == db.lower():
                return name
        return None

    def execute(self, sql: str) -> QueryResult:
        """Run one statement on the server (names mapped both ways)."""
        with self._server_errors("around a statement"):
            return self._execute(sql)

    def _execute(self, sql: str) -> QueryResult:
        if not self.current_db:
            return QueryResult(error="No database selected")
        try:
            sql.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: the driver cannot send it
            return QueryResult(error=f"the statement is not valid Unicode: {exc.reason} at "
                                     f"character {exc.start}")
        meta = compat.parse_meta(sql)
        if meta is not None and meta.kind == "use":
            target = self._canonical(meta.args[0] or "")
            if target is None:
                return QueryResult(error=self._error(f"Unknown database '{meta.args[0]}'"))
            self._use(target)
            return QueryResult(message="Database changed")
        if meta is not None and meta.kind == "databases":
            names = ["information_schema", *self.backend.store.names()]
            if meta.args[0] is not None:
                pattern = compat.like_pattern(meta.args[0])
                names = [n for n in names if compat.like_match(pattern, n)]
            return QueryResult(rows=[(n,) for n in names])
        kind = statement_kind(sql)
        if kind != "read":
            self._writes += 1
        physical = self._to_physical(sql)
        if kind == "other":  # may commit, to any copy it names (db.table): redo them all
            self._dirty |= self._copies | {self.current_db}
        result = self._run(physical)
        if kind == "other":
            self._restore_limit()
        return result

    def _restore_limit(self) -> None:
        """Put the session's time limit back (a ``SET`` may have changed it)."""
        try:
            self._configure()
        except self.backend._pymysql.err.Error:
            self._reconnect()
            self._use(self.current_db)

    def _run(self, sql: str) -> QueryResult:
        errors = self.backend._pymysql.err
        deadline = time.monotonic() + self.backend.limits.timeout
        cur = self.conn.cursor(self.backend._pymysql.cursors.SSCursor)
        try:
            arm(self.conn, deadline)
            cur.execute(sql)
            if cur.description is None:
                return QueryResult(affected=cur.rowcount)
            columns = tuple(d[0] for d in cur.description)
            rows, cut = fetch_bounded(cur, self.conn, self.backend.limits.max_result_rows,
                                      deadline, convert=self._to_logical_row)
            if cut:
                self._abort(cur)
            if cut == "time":
                return QueryResult(error="Query execution was interrupted "
                                   "(max_statement_time exceeded)", timed_out=True)
            return QueryResult(rows=rows, capped=bool(cut), columns=columns)
        except errors.OperationalError as exc:
            code = exc.args[0] if exc.args else 0
            if code in TIMEOUT_ERRORS:
                return QueryResult(error=self._error(str(exc.args[-1])), timed_out=True)
            if code in LOST:
                return self._lost(deadline)
            return QueryResult(error=self._error(str(exc.args[-1])))
        except errors.Error as exc:
            return QueryResult(error=self._error(str(exc.args[-1] if exc.args else exc)))
        finally:
            self._close_cursor(cur)
            self.conn._read_timeout = self.backend.limits.timeout + 30

    def _abort(self, cur: Any) -> None:
        """Stop the statement whose rows are no longer read, and resynchronise."""
        self._kill(self.conn.thread_id(), query_only=True)
        self._close_cursor(cur)

    def _close_cursor(self, cur: Any) -> None:
        if cur.connection is not self.conn or not self.conn.open:
            cur.connection = None  # its connection was replaced
            return
        try:
            arm(self.conn, time.monotonic() + 2)
            cur.close()  # reads what is left of an unbuffered result (one row at a time)
        except self.backend._pymysql.err.OperationalError as exc:
            if (exc.args[0] if exc.args else 0) not in TIMEOUT_ERRORS:
                self._lost_quietly()
        except Exception:  # out of sync: start again
            self._lost_quietly()

    def _lost_quietly(self) -> None:
        if self.conn.open:
            thread = self.conn.thread_id()
            self.conn.close()
            self._kill(thread, query_only=False)
        self._reconnect()
        if self.current_db:
            self._use(self.current_db)

    def _lost(self, deadline: float) -> QueryResult:
        """The connection dropped (the client-side deadline): end its statement, reconnect."""
        self._kill(self.conn.thread_id(), query_only=False)
        self._reconnect()
        self._use(self.current_db)
        if time.monotonic() >= deadline:
            return QueryResult(error="the query was interrupted at the time limit and the "
                                     "connection restarted", timed_out=True)
        return QueryResult(error="the connection to the server was lost and restarted "
                                 "(the episode's changes were rolled back)")

    def _error(self, text: str) -> str:
        """A server message for the agent: logical names, at most ``MAX_ERROR_CHARS``."""
        cut = len(text) > MAX_ERROR_CHARS
        text = self._to_logical(text[:MAX_ERROR_CHARS + 200])[:MAX_ERROR_CHARS]
        return text + " [intercode: message cut at 1000 characters]" if cut else text

    def _to_physical(self, sql: str) -> str:
        literal = self.backend.literal_pattern()
        sql = compat.map_qualified(sql, self.backend.store.databases, self._physical_name)
        return literal.sub(lambda m: m.group(1) + self._physical_name(m.group(2)) + m.group(1),
                           sql)

    def _physical_name(self, db: str) -> str:
        name = self._canonical(db) or db
        physical = self._physical(name)
        self._names[physical] = name
        return physical

    def _to_logical(self, text: str) -> str:
        for physical, logical in self._names.items():
            text = re.sub(re.escape(physical), logical, text, flags=re.I)
        return text

    def _to_logical_row(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        if not any(isinstance(v, str) and v.lower() in self._names for v in row):
            return row
        return tuple(self._names.get(v.lower(), v) if isinstance(v, str) else v for v in row)

    def close(self) -> None:
        """Disconnect, drop the session's copies and its account."""
        try:
            self.conn.rollback()
            self.conn.close()
        except Exception:  # already gone
            pass
        self.current_db = ""
        if self.backend._admin is None or self.backend.accounts is None:
            return
        try:
            for state in list(self._snapshots.values()):
                state.release()
            for db in self._copies:
                target = self.backend.copy_name(self.sid, db)
                self.backend.query(f"DROP DATABASE IF EXISTS `{target}`")
            self.backend.accounts.drop(self.account)
        except self.backend._pymysql.err.Error:
            pass  # the backend's close drops what is left
        self._copies.clear()
