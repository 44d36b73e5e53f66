"""User datasets: a JSON Lines file, one task per line, for any built-in environment.

The schema of each environment is documented in ``docs/datasets.md``. Every problem
with the file (bad JSON, a missing, unknown or mistyped field, a referenced file that
is missing or unusable, a duplicate id, an empty file) is a one-line
:class:`~intercode.errors.ConfigError` naming the file, the line and the field, raised
before anything runs. Paths inside the file are relative to the file's folder.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.datasets.ctf import CtfTask, folder_entries
from intercode.datasets.mbpp import PythonTask
from intercode.datasets.spider import SqlTask
from intercode.datasets.tasks import BashTask, Dataset, Task
from intercode.errors import ConfigError, DatasetError

__all__ = ["load_user_dataset"]

ENVS = ("bash", "sql", "python", "ctf")
COMMON = ("id", "query", "gold")
FIELDS: dict[str, tuple[str, ...]] = {
    "bash": (*COMMON, "setup"),
    "sql": (*COMMON, "database", "hardness"),
    "python": (*COMMON, "tests", "setup_code"),
    "ctf": ("id", "query", "flag", "files", "gold"),
}
MAX_ID = 2**31 - 1
# bounds of what a dataset may make us read (docs/datasets.md, "Paths and sizes")
MAX_FILE = 64 << 20  # the dataset file
MAX_ROWS = 100_000  # tasks in one file
MAX_LINE = 1 << 20  # characters of one line
MAX_DEPTH = 32  # nesting of a line's JSON
MAX_SCRIPT = 1 << 20  # a bash setup script
MAX_DATABASE = 256 << 20  # a SQL database file or dump


class _Bad(Exception):
    """A problem with one field of one line (turned into a ConfigError with both)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def load_user_dataset(path: str | os.PathLike[str], env: str) -> Dataset:
    """Load a user dataset (JSON Lines) for the environment ``env``.

    The dataset's ``name`` is the file's resolved path and its ``revision`` the sha256
    of its content. Raises :class:`ConfigError` (one line: file, line, field) for any
    problem with the file or the files it references.
    """
    if env not in ENVS:
        raise ConfigError(f"unknown environment {env!r} for a user dataset "
                          f"(one of {', '.join(ENVS)})")
    shown = os.fspath(path)
    file = Path(shown)
    try:
        raw = safeio.read_bytes(file, MAX_FILE)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read the dataset file: {exc.strerror or exc}") \
            from None
    except safeio.Refused as exc:
        raise ConfigError(f"{shown}: the dataset file {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{shown}:{at}: not UTF-8 text") from None
    name = str(file.resolve())
    folder = file.resolve().parent
    parse = _PARSERS[env]
    tasks: list[Task] = []
    ids: dict[int, int] = {}
    state: dict[str, Any] = {}
    rows = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows += 1
            if rows > MAX_ROWS:
                raise _Bad(None, f"more than {MAX_ROWS} tasks in one file")
            if len(line) > MAX_LINE:
                raise _Bad(None, f"the line is longer than {MAX_LINE} characters")
            item = _json(line)
            _check_fields(item, env)
            index = len(tasks)
            tid = _id(item, index)
            if tid in ids:
                raise _Bad("id", f"duplicate id {tid} (also on line {ids[tid]})")
            ids[tid] = number
            query = _text(item, "query")
            common = {"index": index, "query": query, "dataset": name, "source": name,
                      "source_index": tid}
            tasks.append(parse(item, common, folder, state))
        except _Bad as bad:
            where = f"{shown}:{number}"
            if bad.field is not None:
                where += f': field "{bad.field}"'
            raise ConfigError(f"{where}: {_one_line(bad.message)}") from None
    if not tasks:
        raise ConfigError(f"{shown}: the dataset file has no task (one JSON object a line)")
    revision = hashlib.sha256(raw).hexdigest()
    return Dataset(name, env, tuple(tasks), revision, f"user dataset {file.name}")


# -- lines and fields -------------------------------------------------------------------


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _json(line: str) -> dict[str, Any]:
    try:
        item = safeio.loads(line, MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise _Bad(None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:
        raise _Bad(None, f"not valid JSON: {_one_line(str(exc))}") from None
    if not isinstance(item, dict):
        raise _Bad(None, f"a task must be a JSON object, not {_kind(item)}")
    return item


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _check_fields(item: dict[str, Any], env: str) -> None:
    allowed = FIELDS[env]
    unknown = [k for k in item if k not in allowed]
    if unknown:
        names = ", ".join(f'"{k}"' for k in unknown)
        raise _Bad(unknown[0], f"unknown field{'s' if len(unknown) > 1 else ''} {names} "
                   f"(a {env} task has: {', '.join(allowed)})")


def _id(item: dict[str, Any], index: int) -> int:
    if "id" not in item:
        return index
    value = item["id"]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
        raise _Bad("id", f"must be a non-negative integer, got {_kind(value)}")
    return value


def _text(item: dict[str, Any], field: str, required: bool = True) -> str:
    if field not in item:
        if required:
            raise _Bad(field, "missing (required)")
        return ""
    value = item[field]
    if not isinstance(value, str):
        raise _Bad(field, f"must be a string, got {_kind(value)}")
    if required and not value.strip():
        raise _Bad(field, "must not be empty")
    if "\0" in value:
        raise _Bad(field, "must not contain NUL characters")
    return value


def _file(item: dict[str, Any], field: str, folder: Path, kind: str = "file",
          max_size: int = MAX_SCRIPT) -> Path | None:
    """A path field: relative to the dataset's folder (``folder``, resolved), naming an
    existing regular file of at most ``max_size`` bytes, or a folder, that is inside
    ``folder`` once every symbolic link is followed. Returns the resolved path."""
    if field not in item:
        return None
    rel = _text(item, field)
    try:
        os.fsencode(rel)
    except UnicodeEncodeError:  # a lone surrogate: no file can have that name
        raise _Bad(field, "is not a valid file name") from None
    if os.path.isabs(rel):
        raise _Bad(field, f"must be a path relative to the dataset file, got {rel!r}")
    path = Path(os.path.realpath(folder / rel))
    if os.path.commonpath([path, folder]) != str(folder):
        raise _Bad(field, f"{rel!r} leads out of the dataset file's folder (paths and their "
                   "symbolic links must stay inside it)")
    if not os.path.lexists(path):
        raise _Bad(field, f"no {kind} {rel!r} next to the dataset file")
    try:
        if kind == "folder":
            if not path.is_dir():
                raise _Bad(field, f"{rel!r} is not a folder")
            return path
        if path.is_dir():
            raise _Bad(field, f"{rel!r} is not a file")
        with safeio.open_regular(path, max_size) as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                raise _Bad(field, f"{rel!r} is empty")
    except safeio.Refused as exc:
        raise _Bad(field, f"{rel!r} {exc}") from None
    except OSError as exc:
        raise _Bad(field, f"cannot read {rel!r}: {exc.strerror or exc}") from None
    return path


def _read(path: Path, field: str, max_size: int) -> bytes:
    try:
        return safeio.read_bytes(path, max_size)
    except safeio.Refused as exc:
        raise _Bad(field, f"{path.name} {exc}") from None
    except OSError as exc:
        raise _Bad(field, f"cannot read {path.name}: {exc.strerror or exc}") from None


def _python(source: str, field: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise _Bad(field, f"not valid Python: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _Bad(field, f"not valid Python: {exc}") from None


# -- per environment --------------------------------------------------------------------

Common = dict[str, Any]
State = dict[str, Any]


def _bash(item: dict[str, Any], common: Common, folder: Path, _state: State) -> Task:
    gold = _text(item, "gold")
    setup = _file(item, "setup", folder)
    if setup is None:
        return BashTask(**common, gold=gold)
    digest = hashlib.sha256(_read(setup, "setup", MAX_SCRIPT)).hexdigest()
    return BashTask(**common, gold=gold, fs=item["setup"], setup_path=str(setup),
                    setup_sha256=digest)


def _sql(item: dict[str, Any], common: Common, folder: Path, state: State) -> Task:
    from intercode.sql.userdb import read_database

    gold = _text(item, "gold")
    hardness = _text(item, "hardness", required=False)
    path = _file(item, "database", folder, max_size=MAX_DATABASE)
    if path is None:
        raise _Bad("database", "missing (required)")
    try:
        db = read_database(path)
    except DatasetError as exc:
        raise _Bad("database", str(exc)) from None
    names: dict[str, Path] = state.setdefault("databases", {})
    other = names.setdefault(db.name.lower(), path.resolve())
    if other != path.resolve():
        raise _Bad("database", f"another file of the dataset ({other.name}) gives the database "
                   f"name {db.name!r} too (the name is the file's, without extension)")
    return SqlTask(**common, gold=gold, db=db.name, hardness=hardness,
                   database_path=str(path), database_sha256=db.sha256)


def _python_task(item: dict[str, Any], common: Common, _folder: Path, _state: State) -> Task:
    gold = _text(item, "gold")
    functions = [n.name for n in _python(gold, "gold").body
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not functions:
        raise _Bad("gold", "must define a function at top level (def name(...):)")
    if "tests" not in item:
        raise _Bad("tests", "missing (required)")
    tests = item["tests"]
    if not isinstance(tests, list) or not tests:
        raise _Bad("tests", "must be a list of assert statements")
    for i, test in enumerate(tests):
        if not isinstance(test, str):
            raise _Bad("tests", f"must be a list of assert statements (item {i} is "
                       f"{_kind(test)})")
        body = _python(test, "tests").body
        if len(body) != 1 or not isinstance(body[0], ast.Assert):
            raise _Bad("tests", f"must be a list of assert statements (item {i} is not one "
                       "assert statement)")
    setup = _text(item, "setup_code", required=False)
    _python(setup, "setup_code")
    return PythonTask(**common, gold=gold, tests=tuple(tests), test_setup_code=setup,
                      task_id=common["source_index"], entry_point=functions[0])


_FLAG = re.compile(r"^\S+$")


def _ctf(item: dict[str, Any], common: Common, folder: Path, _state: State) -> Task:
    flag = _text(item, "flag")
    if not _FLAG.match(flag):
        raise _Bad("flag", "must not contain spaces (it is submitted as `submit <flag>`)")
    solution = _text(item, "gold", required=False)
    files = _file(item, "files", folder, kind="folder")
    if files is not None:
        try:
            folder_entries(str(files), "ctf")
        except DatasetError as exc:
            raise _Bad("files", str(exc)) from None
    return CtfTask(**common, gold=flag, task_id=common["source_index"],
                   files_path=str(files) if files is not None else "", solution=solution)


_PARSERS: dict[str, Callable[[dict[str, Any], Common, Path, State], Task]] = {
    "bash": _bash, "sql": _sql, "python": _python_task, "ctf": _ctf}
