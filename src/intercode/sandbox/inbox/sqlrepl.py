"""The agent's SQLite engine: a persistent process inside the sandbox.

It is forked from the supervisor (like the Python interpreter, with a spare ready)
and holds the pristine database images the host sent once at start-up (the
supervisor's ``Shell.data``). It speaks the shell's protocol (see ``shell``): a
header ``<seq> <length> <kind>``, a JSON request, and a status record on descriptor
62; the reply (JSON) is a record ``<seq> reply\n<json>`` just before the status there.

Kinds: ``query`` runs agent SQL in the request's database (a private in-memory copy,
made on first use in the episode); ``exec`` runs SQL the host built, with parameters
(MySQL's exploration commands); ``reset`` drops every copy of the episode (after the
reply, so that the pristine copy of the next database is made while the host works).
A request may also carry ``"reset": <db>``: the reset, done before the request (the host
sends a reset with the episode's first request instead of a round trip of its own).

A copy that only ever ran read-only statements is still pristine, and the next episode
that starts on its database takes it instead of a new copy (``Engine.kept``). Read-only
is decided by the authorizer: every action a statement needs is seen when it is prepared
(connections cache no statements), and a statement that needed anything but reading,
selecting, a function or a read-only pragma, that touched the ``temp`` schema (its
first use creates it; it is also looked for after each statement), or that needed
nothing at all, makes its copy dirty for good; a dirty copy is closed at the reset. Values
cross as JSON: integers, floats, strings and null as themselves, a blob as
``{"x": "<hex>"}``. Results are bounded while they are fetched (rows and size) and
statements stop at the request's deadline (a progress handler; SIGINT from the host
is the backstop).
"""

import json
import os
import signal
import sqlite3
import struct
import time
from collections import OrderedDict

from . import pyrepl, shell, sqlconn, sqlsnap

PROGRESS_STEPS = 1000
MAX_ERROR = 2000
NUMBER_COST = 24  # an upper bound of the repr of an SQLite integer or float
SNAPSHOT_KINDS = ("snap", "restore", "drop", "export", "import")
# the authorizer's actions a read-only statement needs (a pragma only if sqlconn allows it)
READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                          sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_PRAGMA})
KEEP_BYTES = 64 * 1024 * 1024  # pristine copies kept between episodes, by their images' size


class Engine:
    """Connections of the current episode, and the pristine images."""

    def __init__(self, images):
        self.sqlite3 = sqlite3
        self.images = images
        self.conns = {}
        self.clean = set()  # names in conns whose copy only ran read-only statements
        self.kept = OrderedDict()  # name -> a pristine copy left clean by an episode
        self.actions = 0  # authorizer calls of the statement being prepared
        self.current = ""
        self.deadline = 0.0
        self.busy = False
        self.stale = []  # connections of the last episode, to close
        self.pending = None  # the database the next episode starts in
        self.snaps = {}  # id -> (current database, {name: captured connection})
        # {name: captured connection} of the last restore, opened on first use (see snapshot)
        self.restored = {}

    def idle(self):
        """Between requests: close the last episode's copies, make the next one's."""
        stale, self.stale = self.stale, []
        for conn in stale:
            conn.close()
        size = 0
        for name in list(self.kept):  # the most recently used first: they stay
            own = len(self.images.get(name, b""))
            if size + own > KEEP_BYTES:
                self.kept.pop(name).close()
            else:
                size += own
        name, self.pending = self.pending, None
        if name in self.images:
            self.conn(name)

    def conn(self, name):
        """This episode's connection to database ``name`` (a pristine copy at first)."""
        conn = self.conns.get(name)
        if conn is None:
            saved = self.restored.get(name)
            if saved is not None:  # kept until it opens: a failure fails each use alike
                conn = sqlsnap.open_copy(saved, self.images.get(sqlconn.INFO_SCHEMA),
                                         lambda: self.current)
                del self.restored[name]
            elif name not in self.images:
                raise KeyError("unknown database %r" % (name,))
            elif name in self.kept:
                conn = self.kept.pop(name)
                self.clean.add(name)
            else:
                conn = sqlconn.open_image(self.images[name],
                                          self.images.get(sqlconn.INFO_SCHEMA),
                                          lambda: self.current, cached_statements=0)
                conn.set_authorizer(self._watcher(name))
                self.clean.add(name)
            self._adopt(name, conn)
        return conn

    def _adopt(self, name, conn):
        conn.set_progress_handler(self._expired, PROGRESS_STEPS)
        self.conns[name] = conn

    def _watcher(self, name):
        """The authorizer of a pristine copy: ``sqlconn.authorize``, and a copy asked
        for anything but reading becomes dirty."""
        def watch(action, arg1, arg2, db, source):
            self.actions += 1
            verdict = sqlconn.authorize(action, arg1, arg2, db, source)
            if action not in READ_ACTIONS or verdict != sqlite3.SQLITE_OK or (
                    db is not None and db.lower() == "temp"):  # (its first use creates it)
                self.clean.discard(name)
            return verdict
        return watch

    def _end_episode(self):
        """Every copy of the episode goes: a clean one is kept for the next episode on
        its database, the others are closed in ``idle``."""
        for name, conn in self.conns.items():
            if name in self.clean:
                self.kept[name] = conn
                self.kept.move_to_end(name, last=False)
            else:
                self.stale.append(conn)
        self.conns = {}
        self.clean = set()

    def snapshot(self, kind, request):
        """``snap``/``restore``/``drop``/``export``/``import`` of snapshot ``id``.

        A restore opens no connection: the snapshot's databases are opened (copies of
        its images) when first used, so that a restore costs a reply and a snapshot
        of a database not used since shares the restored one's capture (captures are
        never changed in place)."""
        ident = int(request["id"])
        if kind == "snap":
            saved = dict(self.restored)
            saved.update((name, sqlsnap.capture(conn)) for name, conn in self.conns.items())
            self.snaps[ident] = (self.current, saved)
            return {}
        if kind == "drop":
            self.snaps.pop(ident, None)
            return {}
        if kind == "export":
            current, saved = self.snaps[ident]
            return {"current": current,
                    "conns": {name: sqlsnap.export(s) for name, s in saved.items()}}
        if kind == "import":
            saved = {str(name): sqlsnap.load(s) for name, s in request["conns"].items()}
            self.snaps[ident] = (str(request["current"]), saved)
            return {}
        current, saved = self.snaps[ident]  # restore
        self._end_episode()
        self.restored = dict(saved)
        self.current = current
        return {}

    def _expired(self):
        return 1 if time.monotonic() > self.deadline else 0

    def handle(self, kind, request):
        """The reply to one request (a dict). Any request first forgets the snapshots
        its ``drop`` lists (released on the host since its last request: a release
        costs no round trip of its own)."""
        for dropped in request.get("drop", ()):
            self.snaps.pop(int(dropped), None)
        if kind == "reset" or "reset" in request:  # see idle for the rest of the work
            self._end_episode()
            self.restored = {}
            self.snaps = {}
            self.current = ""
            if kind == "reset":
                self.pending = request.get("db") or None
                return {}
        if kind in SNAPSHOT_KINDS:
            return self.snapshot(kind, request)
        if kind == "query":
            self.current = request["db"]
        self.deadline = time.monotonic() + float(request.get("timeout", 10.0))
        db = request["db"]
        conn = self.conn(db)
        for name in request.get("attach", ()):
            if name not in self.images:
                raise KeyError("unknown database %r" % (name,))
            self.clean.discard(db)  # (the plain authorizer is back after an attach)
            sqlconn.attach_image(conn, name, self.images[name])
        self.actions = 0
        try:
            if kind == "exec":
                cursor = conn.execute(request["sql"], request.get("params", ()))
            else:
                cursor = conn.execute(request["sql"])
        finally:
            # no authorizer call to judge by (REINDEX, or nothing), or a temp schema
            # that one of them opened unseen (a pragma can)
            if not self.actions or (db in self.clean and _has_temp(conn)):
                self.clean.discard(db)
        if cursor.description is None:
            return {"n": cursor.rowcount}
        rows, cut = fetch(cursor, int(request["max_rows"]), int(request["max_chars"]))
        return {"c": [str(d[0]) for d in cursor.description], "r": rows, "cut": cut}

    def answer(self, kind, payload):
        """``handle`` with every failure turned into an error reply."""
        self.busy = True
        try:
            return self.handle(kind, json.loads(payload.decode("utf-8", "surrogatepass")))
        except KeyboardInterrupt:
            return {"e": "interrupted", "t": True}
        except self.sqlite3.Warning as exc:
            return {"e": short(str(exc))}
        except self.sqlite3.Error as exc:
            message = str(exc)
            return {"e": short(message), "t": message == "interrupted"}
        except (OverflowError, ValueError, MemoryError, KeyError, TypeError,
                RecursionError, UnicodeError) as exc:
            return {"e": short("%s: %s" % (type(exc).__name__, exc))}
        finally:
            self.busy = False


def _has_temp(conn):
    """Whether ``conn``'s ``temp`` schema exists (a new copy has none)."""
    return any(row[1] == "temp" for row in conn.execute("PRAGMA database_list"))


def short(text):
    """``text``, cut to ``MAX_ERROR`` characters (a statement may be megabytes)."""
    if len(text) <= MAX_ERROR:
        return text
    return text[:MAX_ERROR] + "... (%d characters in all)" % len(text)


def cost(value):
    """An upper bound of the characters ``value`` takes in ``str(rows)`` and in the reply."""
    if isinstance(value, str):
        if value.isascii() and value.isprintable():
            return len(value) + 2 + value.count("\\") + value.count("'") + value.count('"')
        return len(repr(value)) + len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return 4 * len(value) + 3
    return NUMBER_COST


def fetch(cursor, max_rows, max_chars):
    """Rows as JSON-ready lists, at most ``max_rows`` of them and ``max_chars`` in size.

    Returns the rows and why they were cut (``""``, ``"rows"`` or ``"size"``).
    """
    rows = []
    size = 0
    for row in cursor:  # one row at a time: a row may be megabytes
        if len(rows) >= max_rows:
            return rows, "rows"
        size += 4 + sum(map(cost, row))
        if size > max_chars:
            return rows, "size"
        rows.append([{"x": v.hex()} if isinstance(v, bytes) else v for v in row])
    return rows, ""


class Reader:
    """Buffered reads of the action descriptor."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()

    def _fill(self):
        data = os.read(self.fd, 1 << 16)
        if not data:
            os._exit(0)
        self.buf += data

    def line(self):
        """The next line, without its newline."""
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[:end + 1]
                return line
            self._fill()

    def exact(self, n):
        """The next ``n`` bytes."""
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data


def write_all(fd, data):
    """Write everything (the host reads the pipe while it waits)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(engine):
    """Answer requests until the action pipe closes."""
    reader = Reader(shell.ACTION_FD)
    while True:
        parts = reader.line().split()
        seq, length = parts[0], int(parts[1])
        kind = parts[2].decode("ascii") if len(parts) > 2 else "query"
        payload = reader.exact(length)
        if length <= shell.SHORT_ACTION:
            reader.exact(1)
        reply = engine.answer(kind, payload)
        try:
            data = json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode(
                "utf-8", "surrogatepass")
        except (ValueError, TypeError, OverflowError, MemoryError) as exc:
            data = json.dumps({"e": "the result cannot be sent: %s" % exc}).encode("ascii")
        # the reply, then the status, in one write on the status descriptor (JSON
        # escapes NUL, so the record's terminator cannot occur inside it)
        write_all(shell.STATUS_FD, seq + b" reply\n" + data + b"\0" + seq + b" 0 /\0")
        engine.idle()


def parse_images(blob):
    """``{name: image}`` from the blob the host sent (see ``pack_images``)."""
    (index_len,) = struct.unpack(">I", blob[:4])
    index = json.loads(blob[4:4 + index_len].decode("utf-8"))
    images, offset = {}, 4 + index_len
    for name, size in index:
        images[name] = blob[offset:offset + size]
        offset += size
    return images


def pack_images(images):
    """The blob of ``{name: image}``: a JSON index of names and sizes, then the bytes."""
    index = json.dumps([[name, len(data)] for name, data in images.items()]).encode("utf-8")
    return struct.pack(">I", len(index)) + index + b"".join(images.values())


def start(fds, env, go_fd, data):
    """Entry of the forked engine (never returns); a spare waits on ``go_fd``."""
    try:
        pyrepl.child_setup(fds, env, extra_keep=() if go_fd is None else (go_fd,))
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(null, 2)  # standard output carries replies only
        os.close(null)
        engine = Engine(parse_images(data) if data else {})

        def on_interrupt(*_):
            if engine.busy:
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_interrupt)
        if go_fd is not None:
            Reader(go_fd).line()
        pyrepl.dumpable()
        serve(engine)
    finally:
        os._exit(1)
