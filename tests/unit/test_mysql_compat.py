"""MySQL exploration commands, LIKE patterns, db.table mapping, UDFs, and the schema helpers."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from intercode.sql.mysql_compat import (
    Meta,
    like_match,
    like_sql,
    map_qualified,
    parse_meta,
    register_functions,
)
from intercode.sql.mysqldump import Column, Database, Table, parse_dump
from intercode.sql.schema import column_key, show_columns, show_create_table, sqlite_type

# -- parse_meta ------------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "expected"), [
    ("SHOW TABLES", Meta("tables", (None, None, None))),
    ("show tables;", Meta("tables", (None, None, None))),
    ("  SHOW    TABLES   ;; ", Meta("tables", (None, None, None))),
    ("SHOW TABLES FROM world_1", Meta("tables", (None, "world_1", None))),
    ("Show Tables In `world_1`;", Meta("tables", (None, "world_1", None))),
    ("SHOW TABLES LIKE 'c%'", Meta("tables", (None, None, "c%"))),
    ("SHOW TABLES FROM `car_1` LIKE '%s'", Meta("tables", (None, "car_1", "%s"))),
    ("SHOW DATABASES", Meta("databases", (None,))),
    ("show schemas like 'w%';", Meta("databases", ("w%",))),
    ("SHOW DATABASES LIKE 'car\\_%'", Meta("databases", ("car\\_%",))),
    ("SHOW COLUMNS FROM city", Meta("columns", ("city", None))),
    ("show fields in `city`", Meta("columns", ("city", None))),
    ("SHOW COLUMNS FROM city FROM world_1;", Meta("columns", ("city", "world_1"))),
    ("SHOW FULL FIELDS IN `city` IN `world_1`", Meta("columns", ("city", "world_1"))),
    ("DESCRIBE city", Meta("describe", ("city",))),
    ("desc `city`;", Meta("describe", ("city",))),
    ("Explain   city ;", Meta("describe", ("city",))),
    ("USE world_1", Meta("use", ("world_1",))),
    ("use `world_1` ; ", Meta("use", ("world_1",))),
    ("SHOW CREATE TABLE `city`", Meta("create", ("city",))),
    ("show create table City;", Meta("create", ("City",))),
])
def test_parse_meta(sql: str, expected: Meta) -> None:
    assert parse_meta(sql) == expected


def test_parse_meta_full_tables() -> None:
    meta = parse_meta("show FULL tables from `world_1` like 'c%';")
    assert meta is not None
    assert meta.kind == "tables"
    full, db, like = meta.args
    assert full is not None and full.strip().upper() == "FULL"
    assert (db, like) == ("world_1", "c%")


@pytest.mark.parametrize("sql", [
    "SELECT name FROM city ORDER BY name DESC",
    "SELECT * FROM city ORDER BY id DESC;",
    "DESC",
    "DESC;",
    "EXPLAIN SELECT 1",
    "EXPLAIN SELECT * FROM city",
    "USE",
    "USE world_1; SELECT 1",
    "SHOW TABLES; DROP TABLE city",
    "SHOW TABLE STATUS",
    "SHOW INDEX FROM city",
    "SHOW CREATE DATABASE world_1",
    "SELECT 'SHOW TABLES'",
    "",
])
def test_parse_meta_other_statements(sql: str) -> None:
    assert parse_meta(sql) is None


# -- like_match ---------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "matches", "misses"), [
    ("c%", ["city", "COUNTRY", "c"], ["acity", ""]),
    ("%s", ["cars", "s"], ["cars_data"]),
    ("%_%", ["a", "abc"], [""]),
    ("_at", ["cat", "Bat"], ["at", "coat"]),
    ("%", ["", "anything at all"], []),
    ("a.b", ["a.b", "A.B"], ["axb"]),  # regex characters are literal
    ("x+(y)", ["x+(y)"], ["xx(y)", "xy"]),
    ("car\\_%", ["car_1", "car_names"], ["cars", "carx1"]),  # \_ is a literal underscore
    ("50\\%", ["50%"], ["500", "50"]),  # \% is a literal percent sign
    ("a\\\\b", ["a\\b"], ["ab", "a\\\\b"]),  # \\ is a backslash
    ("%a%b", ["ab", "xaxxb", "abab"], ["ba", "a", "abx"]),
    ("a%%%_", ["ab", "abc"], ["a"]),
    ("x\\", ["x\\"], ["x"]),  # a trailing backslash stands for itself
    ("İ%", ["İx", "i̇x"], ["ix"]),
])
def test_like_match(pattern: str, matches: list[str], misses: list[str]) -> None:
    for name in matches:
        assert like_match(pattern, name), (pattern, name)
    for name in misses:
        assert not like_match(pattern, name), (pattern, name)


@pytest.mark.parametrize(("pattern", "sql"), [
    ("c%", "c%"), ("car\\_%", "car\\_%"), ("50\\%", "50\\%"), ("a\\\\b", "a\\\\b"),
    ("%%%x", "%x"), ("A\\b", "Ab"), ("x\\", "x\\\\"),
])
def test_like_sql_is_sqlite_escaped(pattern: str, sql: str) -> None:
    assert like_sql(pattern) == sql


# -- map_qualified ---------------------------------------------------------------------------


def _table(name: str) -> Table:
    return Table(name, [Column("id", "int", False)])


@pytest.fixture()
def databases() -> dict[str, Database]:
    return {
        "singer": Database("singer", {"singer": _table("singer"), "song": _table("song")}),
        "concert_singer": Database("concert_singer", {"singer": _table("singer"),
                                                      "concert": _table("concert")}),
        "world_1": Database("world_1", {"city": _table("city"), "country": _table("country")}),
        "car_1": Database("car_1", {"CARS_DATA": _table("CARS_DATA")}),
    }


def _mapped(sql: str, databases: dict[str, Database]) -> tuple[str, list[str]]:
    seen: list[str] = []

    def rename(db: str) -> str:
        seen.append(db)
        return f"X_{db}"

    return map_qualified(sql, databases, rename), seen


@pytest.mark.parametrize(("sql", "expected", "renamed"), [
    # table.column where the table has the database's name: left alone
    ("SELECT singer.Singer_ID FROM singer", "SELECT singer.Singer_ID FROM singer", []),
    ("SELECT * FROM world_1.city", "SELECT * FROM X_world_1.city", ["world_1"]),
    ("SELECT * FROM `world_1`.`city`", "SELECT * FROM `X_world_1`.`city`", ["world_1"]),
    ("SELECT * FROM WORLD_1 . City", "SELECT * FROM X_world_1 . City", ["world_1"]),
    ("SELECT singer.Name FROM singer.singer",
     "SELECT singer.Name FROM X_singer.singer", ["singer"]),
    ("SELECT * FROM concert_singer.singer JOIN concert_singer.concert",
     "SELECT * FROM X_concert_singer.singer JOIN X_concert_singer.concert",
     ["concert_singer", "concert_singer"]),
    ("SELECT * FROM car_1.cars_data", "SELECT * FROM X_car_1.cars_data", ["car_1"]),
    # not a table of that database, or not the database's whole name
    ("SELECT * FROM world_1.nosuch", "SELECT * FROM world_1.nosuch", []),
    ("SELECT my_world_1.city FROM t", "SELECT my_world_1.city FROM t", []),
    ("SELECT world_10.city FROM t", "SELECT world_10.city FROM t", []),
    ("SELECT * FROM singer.concert", "SELECT * FROM singer.concert", []),
    # a table and its column named as the database: the column stays a column
    ("SELECT singer.Name FROM singer ORDER BY singer.singer",
     "SELECT singer.Name FROM singer ORDER BY singer.singer", []),
    ("SELECT singer.singer FROM singer.singer WHERE singer.singer > 0",
     "SELECT singer.singer FROM X_singer.singer WHERE singer.singer > 0", ["singer"]),
    ("SELECT `singer`.`singer` FROM `singer`", "SELECT `singer`.`singer` FROM `singer`", []),
    # db.table.column in an expression names the database
    ("SELECT singer.singer.Name FROM singer.singer",
     "SELECT X_singer.singer.Name FROM X_singer.singer", ["singer", "singer"]),
    ("SELECT world_1.city.* FROM city", "SELECT X_world_1.city.* FROM city", ["world_1"]),
    # table positions: JOIN lists, commas, subqueries, DML and DDL
    ("SELECT a.x FROM world_1.city a, world_1.country b WHERE a.c = b.c",
     "SELECT a.x FROM X_world_1.city a, X_world_1.country b WHERE a.c = b.c",
     ["world_1", "world_1"]),
    ("SELECT * FROM t WHERE x IN (SELECT id FROM world_1.city) AND singer.song = 1",
     "SELECT * FROM t WHERE x IN (SELECT id FROM X_world_1.city) AND singer.song = 1",
     ["world_1"]),
    ("UPDATE world_1.city SET city.id = 1", "UPDATE X_world_1.city SET city.id = 1",
     ["world_1"]),
    ("INSERT INTO world_1.city (id) SELECT singer.song FROM singer",
     "INSERT INTO X_world_1.city (id) SELECT singer.song FROM singer", ["world_1"]),
    ("CREATE TABLE IF NOT EXISTS world_1.city (id INT)",
     "CREATE TABLE IF NOT EXISTS X_world_1.city (id INT)", ["world_1"]),
    ("CREATE INDEX i ON world_1.city (id)", "CREATE INDEX i ON X_world_1.city (id)",
     ["world_1"]),
    ("DESCRIBE world_1.city", "DESCRIBE X_world_1.city", ["world_1"]),
    ("SELECT a FROM t ORDER BY a DESC, singer.song", "SELECT a FROM t ORDER BY a DESC, "
     "singer.song", []),
    ("SELECT TRIM('x' FROM singer.song) FROM singer.song",
     "SELECT TRIM('x' FROM singer.song) FROM X_singer.song", ["singer"]),
    # strings, comments and quoted names are single tokens
    ("SELECT 'FROM world_1.city' FROM t", "SELECT 'FROM world_1.city' FROM t", []),
    ("SELECT 1 /* FROM world_1.city */ FROM t", "SELECT 1 /* FROM world_1.city */ FROM t", []),
    ("SELECT * FROM t -- FROM world_1.city", "SELECT * FROM t -- FROM world_1.city", []),
])
def test_map_qualified(databases: dict[str, Database], sql: str, expected: str,
                       renamed: list[str]) -> None:
    assert _mapped(sql, databases) == (expected, renamed)


def test_statements_past_the_size_bound_are_passed_on_as_written(
        databases: dict[str, Database]) -> None:
    """The rewrite runs on the host: beyond MAX_CHARS it is skipped (never a boundary)."""
    from intercode.sql.qualify import MAX_CHARS

    sql = "SELECT * FROM world_1.city WHERE 1 = 1" + " " * (MAX_CHARS - 38)
    assert _mapped(sql, databases) == (sql.replace("world_1", "X_world_1"), ["world_1"])
    longer = sql + " "
    assert _mapped(longer, databases) == (longer, [])


def test_backslashes_escape_only_where_the_dialect_says_so(
        databases: dict[str, Database]) -> None:
    sql = "SELECT 'a\\' FROM world_1.city WHERE 'b' = 'c'"  # SQLite: 'a\' ends the string
    assert map_qualified(sql, databases, lambda db: "X", backslash_escapes=False) == \
        sql.replace("world_1", "X")
    mysql = "SELECT 'a\\' FROM world_1.city'"  # MySQL: \' does not end it
    assert map_qualified(mysql, databases, lambda db: "X") == mysql


# -- functions -------------------------------------------------------------------------------


@pytest.fixture()
def current() -> list[str]:
    """The current database, as the backend would hold it."""
    return ["world_1"]


@pytest.fixture()
def conn(current: list[str]):
    connection = sqlite3.connect(":memory:")
    register_functions(connection, lambda: current[0])
    yield connection
    connection.close()


def one(conn: sqlite3.Connection, sql: str) -> object:
    return conn.execute(sql).fetchone()[0]


def test_date_parts(conn: sqlite3.Connection) -> None:
    assert one(conn, "SELECT YEAR('2019-03-07 10:00:00')") == 2019
    assert one(conn, "SELECT MONTH('2019-03-07 10:00:00')") == 3
    assert one(conn, "SELECT DAY('2019-03-07 10:00:00')") == 7
    assert one(conn, "SELECT month('2019-3-7')") == 3
    assert one(conn, "SELECT year(NULL)") is None
    assert one(conn, "SELECT year('March 2019')") is None


def test_concat(conn: sqlite3.Connection) -> None:
    assert one(conn, "SELECT CONCAT('a', 1, 'b')") == "a1b"
    assert one(conn, "SELECT CONCAT('a', NULL)") is None
    assert one(conn, "SELECT CONCAT()") == ""


def test_concat_ws(conn: sqlite3.Connection) -> None:
    assert one(conn, "SELECT CONCAT_WS('-', 'a', NULL, 'b', 3)") == "a-b-3"
    assert one(conn, "SELECT CONCAT_WS(', ', NULL, NULL)") == ""
    assert one(conn, "SELECT CONCAT_WS(NULL, 'a', 'b')") is None


def test_if(conn: sqlite3.Connection) -> None:
    assert one(conn, "SELECT IF(1, 'yes', 'no')") == "yes"
    assert one(conn, "SELECT IF(2 > 1, 'yes', 'no')") == "yes"
    assert one(conn, "SELECT IF(0, 'yes', 'no')") == "no"
    assert one(conn, "SELECT IF(NULL, 'yes', 'no')") == "no"
    assert one(conn, "SELECT IF('0', 'yes', 'no')") == "no"
    assert one(conn, "SELECT IF(0.0, 'yes', 'no')") == "no"


def test_database_calls_back(conn: sqlite3.Connection, current: list[str]) -> None:
    assert one(conn, "SELECT DATABASE()") == "world_1"
    current[0] = "car_1"
    assert one(conn, "SELECT database()") == "car_1"


def test_rand_now_curdate(conn: sqlite3.Connection) -> None:
    value = one(conn, "SELECT RAND()")
    assert isinstance(value, float) and 0.0 <= value < 1.0
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", one(conn, "SELECT NOW()"))
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", one(conn, "SELECT CURDATE()"))


# -- schema ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("mysql_type", "expected"), [
    ("int", "INTEGER"),
    ("int(11)", "INTEGER"),
    ("INT", "INTEGER"),
    ("integer", "INTEGER"),
    ("tinyint(1)", "INTEGER"),
    ("smallint", "INTEGER"),
    ("mediumint", "INTEGER"),
    ("bigint unsigned", "INTEGER"),
    ("float", "REAL"),
    ("float(10,2)", "REAL"),
    ("double", "REAL"),
    ("decimal(10,2)", "REAL"),
    ("real", "REAL"),
    ("numeric(5)", "REAL"),
    ("char(3)", "TEXT COLLATE NOCASE"),
    ("varchar(255)", "TEXT COLLATE NOCASE"),
    ("VARCHAR(20)", "TEXT COLLATE NOCASE"),
    ("text", "TEXT COLLATE NOCASE"),
    ("tinytext", "TEXT COLLATE NOCASE"),
    ("mediumtext", "TEXT COLLATE NOCASE"),
    ("longtext", "TEXT COLLATE NOCASE"),
    ("enum('a','b')", "TEXT COLLATE NOCASE"),
    ("set('x','y')", "TEXT COLLATE NOCASE"),
    ("date", "TEXT"),
    ("datetime", "TEXT"),
    ("timestamp", "TEXT"),
    ("year", "TEXT"),
    ("blob", "TEXT"),
    ("interval", "TEXT"),  # starts with 'int' but is not an integer type
    ("character", "TEXT"),  # starts with 'char' likewise
])
def test_sqlite_type(mysql_type: str, expected: str) -> None:
    assert sqlite_type(mysql_type) == expected


@pytest.fixture()
def customer() -> Table:
    return Table(
        "customer",
        [
            Column("id", "int", nullable=False, auto_increment=True),
            Column("shop", "int", nullable=False),
            Column("email", "varchar(80)", nullable=False),
            Column("city", "varchar(20)", nullable=True, default="Paris"),
            Column("first", "varchar(10)", nullable=True),
            Column("last", "varchar(10)", nullable=True),
            Column("referrer", "int", nullable=True),
            Column("note", "char(5)", nullable=False, default=""),
            Column("motto", "text", nullable=True, default="it's"),
            Column("created", "timestamp", nullable=False, default="CURRENT_TIMESTAMP"),
        ],
        primary_key=["id", "shop"],
        unique_keys=[["email"], ["first", "last"]],
        keys=[["city"]],
        foreign_keys=[(["referrer"], "customer", ["id"])],
    )


def test_show_columns(customer: Table) -> None:
    assert show_columns(customer) == [
        ("id", "int", "NO", "PRI", None, "auto_increment"),
        ("shop", "int", "NO", "PRI", None, ""),  # every column of the primary key
        ("email", "varchar(80)", "NO", "UNI", None, ""),  # a one-column unique key
        ("city", "varchar(20)", "YES", "MUL", "Paris", ""),  # an index
        ("first", "varchar(10)", "YES", "MUL", None, ""),  # first of a composite unique key
        ("last", "varchar(10)", "YES", "", None, ""),  # second of it: no key shown
        ("referrer", "int", "YES", "MUL", None, ""),  # a foreign key
        ("note", "char(5)", "NO", "", "", ""),
        ("motto", "text", "YES", "", "it's", ""),
        ("created", "timestamp", "NO", "", "CURRENT_TIMESTAMP", "DEFAULT_GENERATED"),
    ]


def test_column_key_prefers_primary(customer: Table) -> None:
    customer.unique_keys.append(["id"])
    assert column_key(customer, customer.columns[0]) == "PRI"


def test_show_create_table_quotes_defaults(customer: Table) -> None:
    text = show_create_table(customer)
    lines = text.splitlines()
    assert lines[0] == "CREATE TABLE `customer` ("
    assert "  `id` int NOT NULL AUTO_INCREMENT," in lines
    assert "  `city` varchar(20) DEFAULT 'Paris'," in lines
    assert "  `first` varchar(10) DEFAULT NULL," in lines
    assert "  `note` char(5) NOT NULL DEFAULT ''," in lines
    assert "  `motto` text DEFAULT 'it''s'," in lines
    assert "  `created` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP," in lines
    assert "  PRIMARY KEY (`id`,`shop`)," in lines
    assert lines[-1].startswith(") ENGINE=InnoDB")


def test_map_qualified_on_the_real_dump() -> None:
    mirror = os.environ.get("INTERCODE_DATA_MIRROR")
    if not mirror:
        pytest.fail("INTERCODE_DATA_MIRROR must point at a copy of the InterCode data")
    text = (Path(mirror) / "sql" / "ic_spider_dbs.sql").read_text(encoding="utf-8")
    databases = parse_dump(text)

    def mapped(sql: str) -> str:
        return map_qualified(sql, databases, lambda db: "X")

    # database singer has a table singer; Singer_ID is a column, not a table
    assert mapped("SELECT singer.Singer_ID FROM singer") == "SELECT singer.Singer_ID FROM singer"
    assert mapped("SELECT * FROM singer.song") == "SELECT * FROM X.song"
    assert mapped("SELECT count(*) FROM world_1.city") == "SELECT count(*) FROM X.city"
    assert mapped("SELECT * FROM `world_1`.`country`") == "SELECT * FROM `X`.`country`"
    # flight_2's tables are upper case in the dump
    assert mapped("SELECT * FROM flight_2.flights") == "SELECT * FROM X.flights"
    assert mapped("SELECT city.Name FROM city") == "SELECT city.Name FROM city"
    # Spider tasks 218 and 478: table orchestra's column Orchestra, in database orchestra
    sql = ("SELECT conductor.Name, orchestra.Orchestra FROM conductor JOIN orchestra ON "
           "conductor.Conductor_ID = orchestra.Conductor_ID ORDER BY orchestra.Orchestra")
    assert mapped(sql) == sql
