"""The agent's SQLite session: its engine runs inside a bubblewrap sandbox.

The host keeps only bookkeeping (the current database, MySQL's command emulation,
``db.table`` rewriting); every statement, the agent's and the ones the emulation
builds, runs in the sandbox's engine (``inbox/sqlrepl.py``), which holds the pristine
images and a private copy per database used in the episode. Replies are JSON with
typed values, parsed defensively: whatever comes back, a malformed reply is an
error observation of the agent, never an exception of the host. A statement that
outlives the time limit is interrupted in the engine; if the engine does not
answer, the sandbox kills it and starts a fresh one (the episode goes on).
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any

from intercode.errors import SnapshotError
from intercode.execstate import ExecState
from intercode.sandbox import Sandbox, create_sandbox
from intercode.sandbox.inbox import sqlrepl
from intercode.sandbox.limits import Limits, MiB
from intercode.sql.backend import SqlSession
from intercode.sql.results import MAX_RESULT_CHARS, QueryResult, Row
from intercode.sql.sqlite_session import SqliteSessionBase, timeout_message

if TYPE_CHECKING:
    from intercode.sql.sqlite_backend import SqliteBackend

__all__ = ["SandboxedSqliteSession"]

KILL_MARGIN = 1.0  # seconds past the time limit before the engine itself is killed
LOST = "; the SQL engine was restarted and the changes of this episode were lost"


class EngineError(Exception):
    """The engine failed to answer (restarted, or a malformed reply)."""


def sandbox_limits(timeout: float) -> Limits:
    """The sandbox of an engine: Bash's limits, output sized for the largest result."""
    return Limits(timeout=timeout + KILL_MARGIN, output=2 * MAX_RESULT_CHARS + MiB,
                  output_hard=3 * MAX_RESULT_CHARS)


class SandboxedSqliteSession(SqliteSessionBase):
    """An episode's session whose engine is a process in its own sandbox."""

    def __init__(self, backend: SqliteBackend) -> None:
        super().__init__(backend.store, backend.limits)
        self.backend = backend
        self._box: Sandbox | None = None
        self._drops: list[int] = []  # snapshots released, forgotten with the next request
        self._booting = False  # the engine's sandbox was begun by prestart()
        self._reset_to: str | None = None  # a reset the next request carries

    def prestart(self) -> bool:
        """Begin the engine's sandbox without waiting for it (a fork's spare)."""
        if self._box is None:
            box = create_sandbox(self.backend.sandbox_backend,
                                 sandbox_limits(self.limits.timeout), shell="sqlite",
                                 shell_data=self.backend.images())
            box.begin()
            self._box, self._booting = box, True
        return True

    def alive(self) -> bool:
        """Whether the engine's sandbox runs."""
        return self._box is not None and self._box.alive

    def detach_box(self) -> Sandbox | None:
        """The engine's sandbox, taken out of this session (``None``: none, or still
        booting); the session forgets its databases."""
        box = self._box
        if box is None or self._booting:
            return None
        self._box, self._drops, self.current_db, self._reset_to = None, [], "", None
        return box

    def adopt_box(self, box: Sandbox) -> None:
        """``box`` (another session's, reset) becomes this session's engine sandbox."""
        if self._box is not None:
            self._box.close()
        self._box, self._booting, self._drops, self._reset_to = box, False, [], None

    def _sandbox(self) -> Sandbox:
        box = self._box
        if self._booting and box is not None:  # begun by prestart(): finish it
            self._booting = False
            box.finish_begun(box.reset)  # (died while booting: a new one starts below)
        if box is None or not box.alive:
            if box is not None:
                box.close()
            self._box = None
            box = create_sandbox(self.backend.sandbox_backend,
                                 sandbox_limits(self.limits.timeout), shell="sqlite",
                                 shell_data=self.backend.images())
            box.start()
            box.reset()
            self._box = box
        return box

    def _call(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        """One request to the engine; EngineError if it did not answer properly. The
        snapshots released since the last request are dropped with it, and a reset not
        sent yet is done first."""
        box = self._sandbox()
        if self._drops:
            request = {**request, "drop": self._drops}
            self._drops = []
        reset, self._reset_to = self._reset_to, None
        if reset is not None:
            request = {**request, "reset": reset}
        try:
            result = box.run(json.dumps(request), kind=kind)
        except BaseException:  # (maybe never sent: the next request carries the reset)
            self._reset_to = self._reset_to or reset
            raise
        if result.exit_code != 0:  # the engine died during the request, or hung
            if result.timed_out:
                raise EngineError(timeout_message(self.limits.timeout) + LOST)
            raise EngineError("the SQL engine stopped" + LOST)
        reply = parse_reply(result.reply or "")
        if reply is None:
            self._sandbox().reset()
            raise EngineError("the SQL engine sent a malformed reply" + LOST)
        if result.shell_restarted and reset is None:  # it had died before: the request
            reply["restarted"] = True  # ran in a new one (after a reset, nothing was lost)
        return reply

    def _drop(self, db: str) -> None:
        """The reset goes with the next request (one round trip less an episode)."""
        self._reset_to = db

    def _request(self, sql: str, db: str, **extra: Any) -> dict[str, Any]:
        return {"db": db, "sql": sql, "timeout": self.limits.timeout,
                "max_rows": self.limits.max_result_rows, "max_chars": MAX_RESULT_CHARS,
                **extra}

    def _run(self, sql: str, attach: list[str]) -> QueryResult:
        try:
            reply = self._call("query", self._request(sql, self.current_db, attach=attach))
        except EngineError as exc:
            return QueryResult(error=str(exc), timed_out=str(exc).startswith("the query was"))
        return to_result(reply, self.limits.timeout)

    def _connection(self, name: str) -> RemoteConnection:
        return RemoteConnection(self, name)

    def _snap_call(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self._call(kind, request)
        except EngineError as exc:
            raise SnapshotError(f"the SQL engine lost the snapshot: {exc}") from None
        if "e" in reply or reply.get("restarted"):
            raise SnapshotError("the SQL engine could not use the snapshot (it was restarted "
                                f"since it was taken): {reply.get('e', 'restarted')}"[:300])
        return reply

    def save(self) -> EngineSnapshot:
        """Every database of the episode, held in the engine (see ``inbox/sqlsnap``)."""
        state = EngineSnapshot(self, self._sandbox(), self.current_db)
        self._snap_call("snap", {"id": state.ident})
        return state

    def load(self, state: ExecState) -> None:
        """Copies of the snapshot's databases become the episode's."""
        state = self._own(state)
        self._snap_call("restore", {"id": state.ident})
        self.current_db = state.current_db

    def transfer(self, state: ExecState, other: SqlSession) -> None:
        """Copy the snapshot's databases into ``other``'s engine and restore them there."""
        state = self._own(state)
        if not isinstance(other, SandboxedSqliteSession):
            raise SnapshotError("a SQLite snapshot forks only into a SQLite session")
        data = self._snap_call("export", {"id": state.ident})
        copy = EngineSnapshot(other, other._sandbox(), state.current_db)
        try:
            other._snap_call("import", {"id": copy.ident, **data})
            other.load(copy)
        finally:
            copy.release()

    def _own(self, state: ExecState) -> EngineSnapshot:
        if not isinstance(state, EngineSnapshot) or state.session is not self:
            raise SnapshotError("not a snapshot of this SQL session")
        if state.box is not self._box or not state.box.alive:
            raise SnapshotError("the SQL engine was restarted since the snapshot was taken; "
                                "its state is lost")
        return state

    def close(self) -> None:
        """Stop the engine and its sandbox."""
        if self._box is not None:
            self._box.close()
            self._box = None
        self._drops = []
        self._reset_to = None
        self.current_db = ""


class EngineSnapshot:
    """A snapshot held in a session's engine, named by a number."""

    _next = itertools.count(1)

    def __init__(self, session: SandboxedSqliteSession, box: Sandbox, current_db: str) -> None:
        self.session = session
        self.box = box
        self.current_db = current_db
        self.ident = next(self._next)
        self.released = False

    def release(self) -> None:
        """Drop it in the engine with the session's next request (if that engine still
        runs; idempotent; no round trip of its own)."""
        if self.released:
            return
        self.released = True
        if self.session._box is self.box and self.box.alive:
            self.session._drops.append(self.ident)


class RemoteConnection:
    """What MySQL's command emulation needs of a connection, served by the engine."""

    def __init__(self, session: SandboxedSqliteSession, db: str) -> None:
        self.session = session
        self.db = db

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> RemoteCursor:
        """Run host-built SQL with parameters; errors raise ``sqlite3.OperationalError``."""
        import sqlite3

        try:
            reply = self.session._call("exec", self.session._request(sql, self.db,
                                                                     params=list(params)))
        except EngineError as exc:
            raise sqlite3.OperationalError(str(exc)) from None
        result = to_result(reply, self.session.limits.timeout)
        if result.error is not None:
            raise sqlite3.OperationalError(result.error)
        return RemoteCursor(result.rows or [])


class RemoteCursor:
    """Rows already fetched, with the two cursor methods the emulation uses."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def fetchall(self) -> list[Row]:
        """Every row."""
        return list(self.rows)

    def fetchone(self) -> Row | None:
        """The first row, or ``None``."""
        return self.rows[0] if self.rows else None


def parse_reply(text: str) -> dict[str, Any] | None:
    """The engine's reply as a checked dict, or ``None`` if it is malformed."""
    try:
        reply = json.loads(text)
        if not isinstance(reply, dict):
            return None
        if "r" in reply:
            reply["r"] = [_row(row) for row in reply["r"]]
            if not isinstance(reply.get("c"), list) or not all(
                    isinstance(c, str) for c in reply["c"]):
                return None
        for key, kind in (("e", str), ("t", bool), ("n", int), ("cut", str)):
            if key in reply and not isinstance(reply[key], kind):
                return None
        return reply
    except (ValueError, TypeError, RecursionError, MemoryError):
        return None


_PLAIN = frozenset({int, float, str, type(None)})  # exact types: a bool is refused


def _row(row: object) -> Row:
    if type(row) is not list:
        raise TypeError("a row is not a list")
    if all(type(v) in _PLAIN for v in row):
        return tuple(row)
    return tuple(_value(v) for v in row)


def _value(value: object) -> object:
    if type(value) in _PLAIN:
        return value
    if type(value) is dict and len(value) == 1 and type(value.get("x")) is str:
        return bytes.fromhex(value["x"])
    raise TypeError(f"a value of type {type(value).__name__}")


def to_result(reply: dict[str, Any], timeout: float) -> QueryResult:
    """A checked reply as the backend's result."""
    error = reply.get("e")
    if error is not None:
        if reply.get("t"):
            return QueryResult(error=timeout_message(timeout), timed_out=True)
        return QueryResult(error=sqlrepl.short(error))
    if "r" not in reply:
        note = "the SQL engine had stopped" + LOST if reply.get("restarted") else ""
        return QueryResult(affected=int(reply.get("n", -1)), note=note)
    notes = []
    if reply.get("restarted"):
        notes.append("the SQL engine had stopped" + LOST)
    cut = reply.get("cut", "")
    if cut == "size":
        notes.append(f"the result was cut after {len(reply['r'])} rows: more than "
                     f"{MAX_RESULT_CHARS} characters")
    return QueryResult(rows=reply["r"], capped=bool(cut), columns=tuple(reply["c"]),
                       note="\n[intercode] ".join(notes))
