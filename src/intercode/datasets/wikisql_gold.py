"""WikiSQL's logical forms, as InterCode wrote them, made into SQL both backends run.

InterCode's ``transform.py`` wrote each gold as ``str(Query)`` of WikiSQL's
``lib/query.py`` (``SELECT {agg} {col} FROM table WHERE {col} {op} {value} AND ...``),
with the table and column names of its dump and the white space collapsed: not SQL
(``SELECT COUNT School/Club_Team FROM table_1_10015132_11 WHERE No. = 3``). The
translation follows WikiSQL's own execution (``lib/dbengine.py``): the aggregate is one
of ``MAX MIN COUNT SUM AVG`` (or none) over the selected column; conditions are joined
by ``AND``, the operator one of ``= > <``; a value compared with a ``real`` column (a
``double`` of the dump) is a number (``parse_decimal``, else the first number in it); any
other value is a string, compared without regard to case (WikiSQL lowercases the value;
the backends compare text case-insensitively). Names are quoted with backticks, which
SQLite and MySQL both read; strings are quoted with ``'`` (doubled inside).

The dump's text values lost their non-ASCII characters (``transform.py`` wrote the rows
through ``encode('ascii', 'ignore')``), the gold's values did not: a string value loses
them too, so that it names the cell it named in WikiSQL's table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from intercode.errors import DatasetError
from intercode.sql.mysqldump import Table

__all__ = ["AGGREGATES", "OPERATORS", "LogicalForm", "parse_gold", "to_sql"]

AGGREGATES = ("MAX", "MIN", "COUNT", "SUM", "AVG")  # lib/query.py: agg_ops without ''
OPERATORS = ("=", ">", "<")  # lib/query.py: cond_ops without 'OP' (never used in a gold)
_NUMBER = re.compile(r"[-+]?\d*\.\d+|\d+")  # lib/dbengine.py: num_re
_NUMERIC_TYPES = re.compile(r"^(double|float|real|decimal|int|bigint|smallint)\b")


@dataclass(frozen=True)
class LogicalForm:
    """A WikiSQL query: the selected column, its aggregate ('' for none), the table and
    the conditions ``(column, operator, value text)``."""

    table: str
    column: str
    aggregate: str
    conditions: tuple[tuple[str, str, str], ...]


def parse_gold(gold: str, tables: dict[str, Table]) -> LogicalForm:
    """The logical form of a gold of ``ic_wikisql_dev.json``; column names are read
    against the table's (they hold no spaces: the dump wrote them with ``_``)."""
    m = re.fullmatch(r"SELECT (?:(MAX|MIN|COUNT|SUM|AVG) )?(\S+) FROM (\S+)(?: WHERE (.+))?",
                     gold, re.S)
    if m is None:
        raise DatasetError(f"not a WikiSQL logical form: {gold[:120]!r}")
    aggregate, column, table_name, where = m.group(1) or "", m.group(2), m.group(3), m.group(4)
    table = tables.get(table_name)
    if table is None:
        raise DatasetError(f"the gold names a table the dump lacks: {table_name!r}")
    names = {c.name for c in table.columns}
    if column not in names:
        raise DatasetError(f"{table_name} has no column {column!r}")
    conditions = _conditions(where, names, table_name) if where is not None else ()
    return LogicalForm(table_name, column, aggregate, conditions)


def _conditions(text: str, names: set[str], table: str) -> tuple[tuple[str, str, str], ...]:
    """``col op value AND col op value ...``: a value ends where `` AND <column> <op> ``
    begins (the first place the rest parses); none may be empty."""
    m = re.match(r"(\S+) ([=<>]) ", text)
    if m is None or m.group(1) not in names:
        raise DatasetError(f"cannot read the condition {text[:80]!r} of a gold on {table}")
    column, op, rest = m.group(1), m.group(2), text[m.end():]
    for split in re.finditer(r" AND (\S+) [=<>] ", rest):
        if split.group(1) in names and split.start() > 0:
            try:
                tail = _conditions(rest[split.start() + 5:], names, table)
            except DatasetError:
                continue
            return ((column, op, rest[:split.start()]), *tail)
    if not rest:
        raise DatasetError(f"a condition of a gold on {table} has no value")
    return ((column, op, rest),)


def to_sql(form: LogicalForm, tables: dict[str, Table]) -> str:
    """The SQL of a logical form, for SQLite and MySQL alike."""
    types = {c.name: c.mysql_type for c in tables[form.table].columns}
    selected = _name(form.column)
    if form.aggregate:
        selected = f"{form.aggregate}({selected})"
    sql = f"SELECT {selected} FROM {_name(form.table)}"
    if form.conditions:
        sql += " WHERE " + " AND ".join(
            f"{_name(col)} {op} {_value(value, types[col])}" for col, op, value in form.conditions)
    return sql


def _name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _value(value: str, mysql_type: str) -> str:
    if _NUMERIC_TYPES.match(mysql_type):
        return repr(_real(value))
    text = value.encode("ascii", "ignore").decode()
    if "\\" in text:  # MySQL reads a backslash as an escape, SQLite does not
        raise DatasetError(f"a string value with a backslash has no text both backends "
                           f"read alike: {value!r}")
    return "'" + text.replace("'", "''") + "'"


def _real(value: str) -> float:
    """WikiSQL's number of a value compared with a real column: ``float(parse_decimal(v))``
    (en_US: ``,`` groups digits), else the first number in the text."""
    try:
        number = float(Decimal(value.replace(",", "")))
    except InvalidOperation:
        found = _NUMBER.findall(value)
        if not found:
            raise DatasetError(f"no number in {value!r}, compared with a real column") from None
        number = float(found[0])
    if not math.isfinite(number):
        raise DatasetError(f"{value!r} is not a finite number")
    return number
