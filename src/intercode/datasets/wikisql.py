"""The WikiSQL dataset: InterCode's 196 WikiSQL dev tasks on 50 tables, golds made SQL.

``ic_wikisql_dev.json`` holds WikiSQL's logical forms as text, not SQL; each is read
against the tables of ``ic_wikisql_dev.sql`` and written as SQL both backends run
(:mod:`intercode.datasets.wikisql_gold`). The reward is WikiSQL's execution accuracy
(:mod:`intercode.rewards.execution`).
"""

from __future__ import annotations

from intercode.datafiles import REVISION
from intercode.datasets.spider import SqlTask, task_list
from intercode.datasets.tasks import Dataset
from intercode.datasets.wikisql_gold import parse_gold, to_sql
from intercode.errors import DatasetError
from intercode.fetch import data_file
from intercode.sql.mysqldump import Table, parse_dump

__all__ = ["DUMP", "load", "tables"]

DUMP = "wikisql_dbs"


def tables(db: str) -> dict[str, Table]:
    """The tables (columns and types) of database ``db`` of the WikiSQL dump."""
    path = data_file(DUMP)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read the SQL dump {path}: {exc}") from exc
    database = parse_dump(text, source=path.name).get(db)
    if database is None:
        raise DatasetError(f"{path.name} has no database {db!r}")
    return database.tables


def load(name: str) -> Dataset:
    """``wikisql-dev``: every task of ``ic_wikisql_dev.json``, in its order, its gold as SQL."""
    path = data_file("wikisql_dev")
    schemas: dict[str, dict[str, Table]] = {}
    tasks = []
    for i, fields in enumerate(task_list(path, name, ("query", "gold", "db"))):
        db = fields["db"]
        if db not in schemas:
            schemas[db] = tables(db)
        try:
            gold = to_sql(parse_gold(fields["gold"], schemas[db]), schemas[db])
        except DatasetError as exc:
            raise DatasetError(f"{path.name}: task {i}: {exc}") from None
        tasks.append(SqlTask(index=i, query=fields["query"], gold=gold, dataset=name,
                             source=name, source_index=i, db=db, dump=DUMP, metric="wikisql"))
    return Dataset(name, "sql", tuple(tasks), REVISION,
                   "WikiSQL dev (InterCode's 196 tasks on 50 tables), golds as SQL")
