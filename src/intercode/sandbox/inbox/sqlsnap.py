"""Snapshots of the SQL engine's episode: every connection's databases, held in the engine.

A snapshot of a connection is the serialised image of its ``main`` schema, of each
database attached to it (their copies may have been changed), and the contents of its
``temp`` schema (which SQLite cannot deserialise: its objects are created again and
their rows copied). ``information_schema`` is read-only and taken from the pristine
image again. Restoring opens hardened connections on copies of the images, so a
snapshot survives any number of restores. Runs inside the sandbox (standard library
only, Python 3.9 compatible; serialising needs Python 3.11).
"""

import re

from . import sqlconn

SKIP = ("temp", sqlconn.INFO_SCHEMA)
_TEMP_CREATE = re.compile(r"^\s*CREATE\s+(TABLE|VIEW|TRIGGER)\b", re.I)


def _schemas(conn):
    return [row[1] for row in conn.execute("PRAGMA database_list")]


def _quote(name):
    return '"%s"' % name.replace('"', '""')


def capture(conn):
    """What restores ``conn``: ``(main, {attached: image}, temp)``."""
    if not hasattr(conn, "serialize"):
        raise RuntimeError("snapshots need Python 3.11 or later in the sandbox")
    attached = {name: conn.serialize(name=name) for name in _schemas(conn)
                if name not in SKIP and name != "main"}
    return conn.serialize(name="main"), attached, _temp(conn)


def _temp(conn):
    """The ``temp`` schema's objects (their SQL, tables first) and tables' rows."""
    objects = conn.execute("SELECT type, name, sql FROM temp.sqlite_master WHERE sql IS NOT "
                           "NULL AND name NOT LIKE 'sqlite%' "
                           "ORDER BY type = 'table' DESC, rowid").fetchall()
    rows = {name: conn.execute("SELECT * FROM temp.%s" % _quote(name)).fetchall()
            for kind, name, _sql in objects if kind == "table"}
    return objects, rows


def open_copy(saved, info_schema, current_db):
    """A hardened connection holding a copy of what :func:`capture` returned."""
    main, attached, (objects, rows) = saved
    conn = sqlconn.open_image(main, info_schema, current_db)
    for name, image in attached.items():
        sqlconn.attach_image(conn, name, image)
    for kind, name, sql in objects:
        if kind != "index":
            sql = _TEMP_CREATE.sub(lambda m: "CREATE TEMP " + m.group(1), sql, count=1)
        conn.execute(sql)
        data = rows.get(name)
        if data:
            marks = ", ".join("?" * len(data[0]))
            conn.executemany("INSERT INTO temp.%s VALUES (%s)" % (_quote(name), marks), data)
    return conn


def export(saved):
    """A JSON-ready form of a captured connection (for a fork in another sandbox)."""
    main, attached, (objects, rows) = saved
    return {"main": main.hex(), "attached": {k: v.hex() for k, v in attached.items()},
            "objects": [list(o) for o in objects],
            "rows": {k: [[{"x": v.hex()} if isinstance(v, bytes) else v for v in r]
                         for r in rs] for k, rs in rows.items()}}


def load(data):
    """The inverse of :func:`export` (its input is as hostile as the agent's SQL)."""
    def value(v):
        return bytes.fromhex(v["x"]) if isinstance(v, dict) else v

    rows = {str(k): [tuple(value(v) for v in r) for r in rs] for k, rs in data["rows"].items()}
    objects = [(str(o[0]), str(o[1]), str(o[2])) for o in data["objects"]]
    attached = {str(k): bytes.fromhex(v) for k, v in data["attached"].items()}
    return bytes.fromhex(data["main"]), attached, (objects, rows)
