"""A hardened SQLite connection, and the MySQL functions that SQLite lacks.

It runs inside the sandbox (the agent's engine, see ``sqlrepl``) and on the host
(the gold's trusted session), so it uses only the standard library and stays
compatible with Python 3.9. Hardening, in layers:

- an authorizer refuses ``ATTACH``/``DETACH``, every ``PRAGMA`` but read-only schema
  ones, writes to ``information_schema``, the functions ``load_extension`` and
  ``fts3_tokenizer`` (which leaks and takes native pointers), and virtual tables of
  any module but the full-text and R-tree ones;
- ``fts3_tokenizer`` is also replaced by a function that refuses;
- the connection is put in defensive mode, with the FTS3 tokenizer interface,
  extension loading and untrusted schemas off (``sqlite3_db_config``);
- strings and blobs are limited to ``MAX_LENGTH`` bytes, and no database can be
  attached beyond the ones the backend attaches itself.
"""

import datetime
import random
import re
import sqlite3
import sys

INFO_SCHEMA = "information_schema"
MAX_LENGTH = 64 * 1024 * 1024
READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info",
                          "index_xinfo", "foreign_key_list", "table_list", "database_list",
                          "collation_list", "function_list"})
WRITE_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE,
                           sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_DROP_TABLE,
                           sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_DROP_INDEX,
                           sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_CREATE_VIEW,
                           sqlite3.SQLITE_DROP_VIEW, sqlite3.SQLITE_CREATE_TRIGGER,
                           sqlite3.SQLITE_DROP_TRIGGER})
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
VTABLE_MODULES = frozenset({"fts4", "fts5", "rtree", "rtree_i32"})
# sqlite3_db_config verbs (sqlite3.h): (verb, value)
DB_CONFIG = ((1004, 0),   # SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER
             (1005, 0),   # SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION
             (1010, 1),   # SQLITE_DBCONFIG_DEFENSIVE
             (1011, 0),   # SQLITE_DBCONFIG_WRITABLE_SCHEMA
             (1017, 0))   # SQLITE_DBCONFIG_TRUSTED_SCHEMA
SQLITE_LIMIT_LENGTH = 0
SQLITE_LIMIT_ATTACHED = 7
_config_fn = []


def authorize(action, arg1, arg2, db, source):
    """The authorizer of every connection that runs agent SQL."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_CREATE_VTABLE and (arg2 or "").lower() not in VTABLE_MODULES:
        return sqlite3.SQLITE_DENY
    if action in WRITE_ACTIONS and (db or "").lower() == INFO_SCHEMA:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _refuse(*_args):
    raise sqlite3.OperationalError("not authorized")


def open_image(image, info_schema, current_db, cached_statements=128):
    """A hardened in-memory connection holding a copy of ``image``.

    ``info_schema`` (an image, or ``None``) is attached as ``information_schema``;
    ``current_db`` is a function naming the database ``DATABASE()`` returns;
    ``cached_statements`` is the size of its prepared-statement cache.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False,
                           cached_statements=cached_statements)
    harden(conn)
    load_image(conn, image, "main")
    if info_schema is not None:
        conn.execute("ATTACH ':memory:' AS %s" % INFO_SCHEMA)
        load_image(conn, info_schema, INFO_SCHEMA)
    register_functions(conn, current_db)
    conn.create_function("fts3_tokenizer", 1, _refuse)
    conn.create_function("fts3_tokenizer", 2, _refuse)
    conn.set_authorizer(authorize)
    _setlimit(conn, SQLITE_LIMIT_ATTACHED, 1 if info_schema is not None else 0)
    _setlimit(conn, SQLITE_LIMIT_LENGTH, MAX_LENGTH)
    return conn


def _setlimit(conn, category, value):
    if hasattr(conn, "setlimit"):  # Python 3.11+; before, the authorizer alone holds
        conn.setlimit(category, value)


def attach_image(conn, name, image):
    """Attach a copy of ``image`` as schema ``name`` (the authorizer forbids it to SQL)."""
    attached = [row[1] for row in conn.execute("PRAGMA database_list")]
    if name in attached:
        return
    conn.set_authorizer(None)
    _setlimit(conn, SQLITE_LIMIT_ATTACHED, len(attached))
    try:
        conn.execute("ATTACH ':memory:' AS \"%s\"" % name.replace('"', '""'))
        load_image(conn, image, name)
    finally:
        _setlimit(conn, SQLITE_LIMIT_ATTACHED, len(attached) - 1)
        conn.set_authorizer(authorize)


def load_image(conn, image, name):
    """Replace schema ``name`` of ``conn`` by a copy of a serialised database."""
    if hasattr(conn, "deserialize"):  # Python 3.11+
        conn.deserialize(image, name=name)
        return
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".sqlite") as fh:
        fh.write(image)
        fh.flush()
        source = sqlite3.connect(fh.name)
        try:
            source.backup(conn, name=name)
        finally:
            source.close()


def harden(conn):
    """Apply ``DB_CONFIG``; return whether every setting took effect."""
    setconfig = getattr(conn, "setconfig", None)
    if setconfig is not None:  # Python 3.12+
        for verb, value in DB_CONFIG:
            setconfig(verb, bool(value))
        return all(conn.getconfig(verb) == bool(value) for verb, value in DB_CONFIG)
    return _harden_ctypes(conn)


def _harden_ctypes(conn):
    """``sqlite3_db_config`` through ctypes for Pythons without ``setconfig``.

    CPython's connection object starts with ``PyObject_HEAD`` and the ``sqlite3 *``
    handle; only a release build of CPython is trusted with that layout.
    """
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        return False
    try:
        import ctypes

        fn = _db_config_function(ctypes)
        if fn is None:
            return False
        handle = ctypes.c_void_p.from_address(id(conn) + 2 * ctypes.sizeof(ctypes.c_void_p))
        ok = True
        for verb, value in DB_CONFIG:
            out = ctypes.c_int(-1)
            rc = fn(handle, verb, value, ctypes.byref(out))
            ok = ok and rc == 0 and out.value == value
        return ok
    except (OSError, AttributeError, ValueError, ImportError):
        return False


def _db_config_function(ctypes):
    if not _config_fn:
        import _sqlite3

        try:
            fn = ctypes.CDLL(_sqlite3.__file__).sqlite3_db_config
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _config_fn.append(fn)
    return _config_fn[0]


# -- MySQL functions missing from SQLite -------------------------------------------------


def _date_part(index):
    def part(value):
        if value is None:
            return None
        m = re.match(r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})", str(value))
        return int(m.group(index)) if m else None
    return part


def concat(*args):
    """MySQL's ``CONCAT``: NULL if any argument is NULL."""
    if any(a is None for a in args):
        return None
    return "".join(str(a) for a in args)


def concat_ws(sep, *args):
    """MySQL's ``CONCAT_WS``: NULL arguments are skipped."""
    if sep is None:
        return None
    return str(sep).join(str(a) for a in args if a is not None)


_LEADING_NUMBER = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def truth(value):
    """MySQL's truth of a value: a string counts by its leading number (``'abc'`` is 0)."""
    if value is None:
        return False
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        m = _LEADING_NUMBER.match(value)
        return m is not None and float(m.group(0)) != 0
    return value != 0


def if_(cond, yes, no):
    """MySQL's ``IF(cond, yes, no)``."""
    return yes if truth(cond) else no


def register_functions(conn, current_db):
    """Add YEAR, MONTH, DAY, CONCAT, CONCAT_WS, IF, RAND, DATABASE, NOW, CURDATE."""
    conn.create_function("year", 1, _date_part(1), deterministic=True)
    conn.create_function("month", 1, _date_part(2), deterministic=True)
    conn.create_function("day", 1, _date_part(3), deterministic=True)
    conn.create_function("concat", -1, concat, deterministic=True)
    conn.create_function("concat_ws", -1, concat_ws, deterministic=True)
    conn.create_function("if", 3, if_, deterministic=True)
    conn.create_function("rand", 0, random.random)
    conn.create_function("database", 0, current_db)
    conn.create_function("now", 0,
                         lambda: datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"))
    conn.create_function("curdate", 0, lambda: datetime.date.today().isoformat())
