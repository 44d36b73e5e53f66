"""The mysqldump reader: statements, literals, tables, errors, and InterCode's real dump."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from intercode.errors import DatasetError
from intercode.sql.mysqldump import Column, parse_dump, parse_values, split_statements

# -- split_statements ------------------------------------------------------------------------


def test_split_on_semicolons_outside_quotes() -> None:
    text = "SELECT ';' ; SELECT `a;b` FROM t;SELECT \"x;y\";"
    assert split_statements(text) == ["SELECT ';'", "SELECT `a;b` FROM t", 'SELECT "x;y"']


def test_split_keeps_a_last_statement_without_semicolon() -> None:
    assert split_statements("SELECT 1;\nSELECT 2\n") == ["SELECT 1", "SELECT 2"]
    assert split_statements("  ;; \n ; ") == []


def test_split_drops_dash_comments() -> None:
    text = "-- a comment; with a semicolon and it's quote\nSELECT 1;\n--\nSELECT 2; -- tail"
    assert split_statements(text) == ["SELECT 1", "SELECT 2"]


def test_double_dash_without_space_is_not_a_comment() -> None:
    assert split_statements("SELECT 1--1;") == ["SELECT 1--1"]
    assert split_statements("SELECT 4 - 2 / 1;") == ["SELECT 4 - 2 / 1"]


def test_split_drops_block_and_versioned_comments() -> None:
    text = ("/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"
            "/* a; b 'c */ SELECT 2 /*!40000 ALTER TABLE `t` DISABLE KEYS */;\n"
            "CREATE DATABASE `d` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;")
    assert split_statements(text) == ["SELECT 2", "CREATE DATABASE `d`"]


def test_split_keeps_doubled_and_escaped_quotes() -> None:
    text = "INSERT INTO `t` VALUES ('it''s; fine'),('a\\'; b'),('c\\\\');SELECT `x``;y`;"
    assert split_statements(text) == [
        "INSERT INTO `t` VALUES ('it''s; fine'),('a\\'; b'),('c\\\\')",
        "SELECT `x``;y`",
    ]


def test_comment_markers_inside_quotes_are_text() -> None:
    assert split_statements("SELECT '-- no', '/* no */';") == ["SELECT '-- no', '/* no */'"]


def test_unterminated_quote_is_an_error() -> None:
    with pytest.raises(DatasetError, match="unterminated"):
        split_statements("SELECT 'abc;")


# -- parse_values ----------------------------------------------------------------------------


def test_backslash_escapes() -> None:
    text = r"(1,'it\'s','back\\slash','line\nbreak','nul\0end','tab\there','cr\r','sub\Z','q\"')"
    assert parse_values(text, "t") == [
        (1, "it's", "back\\slash", "line\nbreak", "nul\x00end", "tab\there", "cr\r", "sub\x1a",
         'q"'),
    ]


def test_like_escapes_keep_their_backslash_and_unknown_escapes_drop_it() -> None:
    # MySQL: \% and \_ stay as two characters; \q is just q
    assert parse_values(r"('50\%','a\_b','\q')", "t") == [("50\\%", "a\\_b", "q")]


def test_doubled_quotes() -> None:
    assert parse_values("('it''s',''''),('','x')", "t") == [("it's", "'"), ("", "x")]


def test_numbers() -> None:
    rows = parse_values("(-5,0,2147483647,-2.5,1e3,-1.5E-2,.5,3.,98.0000)", "t")
    assert rows == [(-5, 0, 2147483647, -2.5, 1000.0, -0.015, 0.5, 3.0, 98.0)]
    assert [type(v) for v in rows[0]] == [int, int, int, float, float, float, float, float,
                                          float]


def test_null() -> None:
    assert parse_values("(NULL,1,NULL)", "t") == [(None, 1, None)]


def test_strings_holding_row_separators() -> None:
    assert parse_values("('a),(b',1),('(',')')", "t") == [("a),(b", 1), ("(", ")")]


def test_whitespace_between_values_and_rows() -> None:
    assert parse_values(" ( 1 , 'x' ) ,\n\t( 2,'y')", "t") == [(1, "x"), (2, "y")]
    assert parse_values("", "t") == []


def test_unreadable_values_are_errors() -> None:
    with pytest.raises(DatasetError, match=r"db\.t: unreadable value at 'abc\)'"):
        parse_values("(1,abc)", "db.t")
    with pytest.raises(DatasetError, match="unexpected '2'"):
        parse_values("(1 2)", "db.t")
    with pytest.raises(DatasetError, match="expected '\\('"):
        parse_values("1,2", "db.t")
    with pytest.raises(DatasetError, match=r"db\.t"):
        parse_values("(0x1F)", "db.t")


@pytest.mark.parametrize("text", ["(1,", "(1", "('abc", "('abc\\", "(1,2),(3"])
def test_truncated_values_are_errors(text: str) -> None:
    with pytest.raises(DatasetError, match=r"db\.t: the values end in the middle of a row"):
        parse_values(text, "db.t")


# -- parse_dump ------------------------------------------------------------------------------

DUMP = r"""-- MySQL dump 10.13  Distrib 8.0.30
CREATE USER 'admin'@'%' IDENTIFIED BY 'admin';
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
CREATE DATABASE  IF NOT EXISTS `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;
USE `shop`;

--
-- Table structure for table `customer`
--

DROP TABLE IF EXISTS `customer`;
CREATE TABLE `customer` (
  `id` int NOT NULL AUTO_INCREMENT,
  `email` varchar(80) COLLATE utf8mb4_general_ci NOT NULL,
  `name` text COLLATE utf8mb4_general_ci,
  `city` varchar(20) DEFAULT 'Paris',
  `note` char(5) NOT NULL DEFAULT '',
  `motto` varchar(20) DEFAULT 'it''s',
  `created` timestamp NULL DEFAULT CURRENT_TIMESTAMP,
  `score` double DEFAULT NULL,
  `visits` int unsigned NOT NULL DEFAULT '0',
  PRIMARY KEY (`id`),
  UNIQUE KEY `email` (`email`),
  KEY `city_idx` (`city`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

LOCK TABLES `customer` WRITE;
/*!40000 ALTER TABLE `customer` DISABLE KEYS */;
INSERT INTO `customer` VALUES (1,'ann@x.org','Ann',NULL,'','a','2020-01-01 00:00:00',1.5,3),(2,'bob@x.org','Bob O\'Neil','Lyon','vip','b;c','2021-05-06 07:08:09',-2,0);
INSERT INTO `customer` VALUES (3,'cy@x.org',NULL,'Paris','','),(','2022-01-01 00:00:00',NULL,7);
/*!40000 ALTER TABLE `customer` ENABLE KEYS */;
UNLOCK TABLES;

CREATE TABLE `orders` (
  `order_id` int NOT NULL,
  `customer_id` int NOT NULL,
  `total` decimal(10,2) DEFAULT '0.00',
  PRIMARY KEY (`order_id`,`customer_id`),
  KEY `orders_fk` (`customer_id`),
  CONSTRAINT `orders_fk` FOREIGN KEY (`customer_id`) REFERENCES `customer` (`id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE DATABASE `zoo`;
USE `zoo`;
CREATE TABLE `animal` (
  `name` varchar(10) NOT NULL,
  `legs` int DEFAULT NULL,
  `keeper` varchar(10) DEFAULT NULL,
  `keeper_shift` int DEFAULT NULL,
  PRIMARY KEY (`name`),
  UNIQUE KEY `keeper_pair` (`keeper`,`keeper_shift`),
  CONSTRAINT `animal_fk` FOREIGN KEY (`keeper`, `keeper_shift`) REFERENCES `staff` (`who`, `shift`)
);
INSERT INTO `animal` VALUES ('cat',4,NULL,NULL),('snake',0,'Eve',2);
USE `shop`;
INSERT INTO `orders` VALUES (10,1,9.99),(11,2,100.00);
"""


@pytest.fixture(scope="module")
def dump() -> dict:
    return parse_dump(DUMP, source="hand.sql")


def test_databases_and_tables_in_dump_order(dump: dict) -> None:
    assert list(dump) == ["shop", "zoo"]
    assert list(dump["shop"].tables) == ["customer", "orders"]
    assert list(dump["zoo"].tables) == ["animal"]
    assert dump["shop"].name == "shop"


def test_columns(dump: dict) -> None:
    columns = dump["shop"].tables["customer"].columns
    assert columns == [
        Column("id", "int", nullable=False, default=None, auto_increment=True),
        Column("email", "varchar(80)", nullable=False),
        Column("name", "text", nullable=True),
        Column("city", "varchar(20)", nullable=True, default="Paris"),
        Column("note", "char(5)", nullable=False, default=""),
        Column("motto", "varchar(20)", nullable=True, default="it's"),
        Column("created", "timestamp", nullable=True, default="CURRENT_TIMESTAMP"),
        Column("score", "double", nullable=True, default=None),
        Column("visits", "int unsigned", nullable=False, default="0"),
    ]
    assert dump["shop"].tables["orders"].columns[2] == Column("total", "decimal(10,2)", True,
                                                              default="0.00")


def test_keys(dump: dict) -> None:
    customer = dump["shop"].tables["customer"]
    assert customer.primary_key == ["id"]
    assert customer.unique_keys == [["email"]]
    assert customer.keys == [["city"]]
    assert customer.foreign_keys == []
    orders = dump["shop"].tables["orders"]
    assert orders.primary_key == ["order_id", "customer_id"]
    assert orders.keys == [["customer_id"]]
    assert orders.foreign_keys == [(["customer_id"], "customer", ["id"])]
    animal = dump["zoo"].tables["animal"]
    assert animal.unique_keys == [["keeper", "keeper_shift"]]
    assert animal.foreign_keys == [(["keeper", "keeper_shift"], "staff", ["who", "shift"])]


def test_rows(dump: dict) -> None:
    assert dump["shop"].tables["customer"].rows == [
        (1, "ann@x.org", "Ann", None, "", "a", "2020-01-01 00:00:00", 1.5, 3),
        (2, "bob@x.org", "Bob O'Neil", "Lyon", "vip", "b;c", "2021-05-06 07:08:09", -2, 0),
        (3, "cy@x.org", None, "Paris", "", "),(", "2022-01-01 00:00:00", None, 7),
    ]
    # inserted after going back to shop with a second USE
    assert dump["shop"].tables["orders"].rows == [(10, 1, 9.99), (11, 2, 100.0)]
    assert dump["zoo"].tables["animal"].rows == [("cat", 4, None, None), ("snake", 0, "Eve", 2)]


def test_row_with_the_wrong_number_of_values() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  `a` int,\n  `b` int\n);\nINSERT INTO `t` VALUES (1,2),(3);"
    with pytest.raises(DatasetError, match=r"x\.sql: a row of d\.t has 1 values for 2 columns"):
        parse_dump(text, source="x.sql")


def test_insert_into_an_unknown_table() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  `a` int\n);\nINSERT INTO `nosuch` VALUES (1);"
    with pytest.raises(DatasetError, match=r"x\.sql: INSERT INTO unknown table nosuch"):
        parse_dump(text, source="x.sql")
    # a table of another database does not count
    text = ("USE `d`;\nCREATE TABLE `t` (\n  `a` int\n);\nUSE `e`;\n"
            "INSERT INTO `t` VALUES (1);")
    with pytest.raises(DatasetError, match="unknown table t"):
        parse_dump(text, source="x.sql")


def test_insert_or_create_before_any_database() -> None:
    with pytest.raises(DatasetError, match="unknown table t"):
        parse_dump("INSERT INTO `t` VALUES (1);", source="x.sql")
    with pytest.raises(DatasetError, match="CREATE TABLE t before any USE"):
        parse_dump("CREATE TABLE `t` (\n  `a` int\n);", source="x.sql")


def test_unreadable_value_in_a_dump() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  `a` int\n);\nINSERT INTO `t` VALUES (1),(oops);"
    with pytest.raises(DatasetError, match=r"x\.sql: d\.t: unreadable value at 'oops\)'"):
        parse_dump(text, source="x.sql")


def test_truncated_insert_in_a_dump() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  `a` int\n);\nINSERT INTO `t` VALUES (1),(2"
    with pytest.raises(DatasetError, match=r"x\.sql: d\.t"):
        parse_dump(text, source="x.sql")


def test_unreadable_table_line() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  `a` text,\n  FULLTEXT KEY `ft` (`a`)\n);"
    with pytest.raises(DatasetError, match="cannot read this line of table t: 'FULLTEXT KEY"):
        parse_dump(text, source="x.sql")


def test_table_without_columns() -> None:
    text = "USE `d`;\nCREATE TABLE `t` (\n  PRIMARY KEY (`a`)\n);"
    with pytest.raises(DatasetError, match="table t has no columns"):
        parse_dump(text, source="x.sql")


def test_other_statements_are_skipped() -> None:
    text = ("SET NAMES utf8;\nLOCK TABLES `t` WRITE;\nUSE `d`;\nCREATE TABLE `t` (\n  `a` int\n);"
            "\nUNLOCK TABLES;\nGRANT ALL PRIVILEGES ON *.* TO 'admin'@'%';\nFLUSH PRIVILEGES;")
    parsed = parse_dump(text)
    assert list(parsed) == ["d"]
    assert parsed["d"].tables["t"].rows == []


# -- the real dump ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_dump_text() -> str:
    mirror = os.environ.get("INTERCODE_DATA_MIRROR")
    if not mirror:
        pytest.fail("INTERCODE_DATA_MIRROR must point at a copy of the InterCode data")
    return (Path(mirror) / "sql" / "ic_spider_dbs.sql").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def real_dump(real_dump_text: str) -> dict:
    return parse_dump(real_dump_text, source="ic_spider_dbs.sql")


def count_tuples(values: str) -> int:
    """Top-level '(' outside quoted strings: an independent count of a VALUES list's rows."""
    depth = count = 0
    quote = None
    i = 0
    while i < len(values):
        c = values[i]
        if quote:
            if c == "\\":
                i += 1  # skip the escaped character
            elif c == quote:
                quote = None
        elif c == "'":
            quote = c
        elif c == "(":
            if depth == 0:
                count += 1
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    assert depth == 0 and quote is None
    return count


def independent_counts(text: str) -> dict[tuple[str, str], int]:
    """(database, table) -> rows, from the dump's lines (each INSERT is one line there)."""
    counts: dict[tuple[str, str], int] = {}
    db = None
    for line in text.splitlines():
        if m := re.match(r"USE `([^`]+)`;", line):
            db = m.group(1)
        elif m := re.match(r"INSERT INTO `([^`]+)` VALUES (.*);$", line):
            key = (db, m.group(1))
            counts[key] = counts.get(key, 0) + count_tuples(m.group(2))
    return counts


def test_real_dump_databases_and_tables(real_dump: dict, real_dump_text: str) -> None:
    assert len(real_dump) == 20
    assert sum(len(db.tables) for db in real_dump.values()) == 81
    assert len(re.findall(r"^CREATE TABLE `", real_dump_text, re.M)) == 81
    assert {"world_1", "car_1", "flight_2", "wta_1", "concert_singer"} <= set(real_dump)


def test_real_dump_row_counts_match_an_independent_count(real_dump: dict,
                                                         real_dump_text: str) -> None:
    expected = independent_counts(real_dump_text)
    assert len(expected) == 77  # 81 tables, the 4 of wta_1 without INSERT
    got = {(db.name, t.name): len(t.rows) for db in real_dump.values()
           for t in db.tables.values() if t.rows}
    assert got == expected
    assert sum(expected.values()) == sum(len(t.rows) for db in real_dump.values()
                                         for t in db.tables.values())


def _table(db, name: str):
    matches = [t for n, t in db.tables.items() if n.lower() == name.lower()]
    assert len(matches) == 1, list(db.tables)
    return matches[0]


def test_real_dump_known_facts(real_dump: dict) -> None:
    wta = real_dump["wta_1"]
    assert len(wta.tables) == 4
    assert all(t.rows == [] for t in wta.tables.values())
    assert len(_table(real_dump["flight_2"], "flights").rows) == 50
    assert len(_table(real_dump["car_1"], "cars_data").rows) == 27
    assert len(_table(real_dump["world_1"], "city").rows) == 4079
    assert len(_table(real_dump["world_1"], "country").rows) == 239


def test_real_dump_values(real_dump: dict) -> None:
    museum = real_dump["museum_visit"].tables["museum"]
    assert museum.rows[0] == (1, "Plaza Museum", 62, "2000")
    assert museum.primary_key == ["Museum_ID"]
    assert museum.columns[0] == Column("Museum_ID", "int", False, None, auto_increment=True)
    # 'Do They Know It\'s Christmas' in the dump
    song = real_dump["singer"].tables["song"]
    assert song.rows[0][1] == "Do They Know It's Christmas"
    city = real_dump["world_1"].tables["city"]
    assert city.rows[0] == (1, "Kabul", "AFG", "Kabol", 1780000)
    assert [c.default for c in city.columns] == [None, "", "", "", "0"]
    assert city.foreign_keys == [(["CountryCode"], "country", ["Code"])]
    votes = real_dump["voter_1"].tables["votes"]
    assert votes.columns[4] == Column("created", "timestamp", False, "CURRENT_TIMESTAMP")
    for db in real_dump.values():
        for t in db.tables.values():
            assert all(len(row) == len(t.columns) for row in t.rows), (db.name, t.name)
