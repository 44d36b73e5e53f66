"""SWE-bench tasks: repository issues whose fix the tests decide.

Three sources, one task type (:class:`SweTask`):

* ``ic-swe-bench``: the seed repository's ``data/swe-bench/ic_swe_bench.json`` (made by its
  ``transform.py``: ``query``, ``task_id``, ``tests.{patch,FAIL_TO_PASS,PASS_TO_PASS}``, no gold
  patch), downloaded at the pinned revision and checked by its git blob id;
* ``swe-demo``: three small tasks on a repository the package carries (offline, no packages
  to install: the examples, the tests, ``play``);
* any file in SWE-bench's own instance format, JSON (a list) or JSON Lines
  (``instance_id``, ``repo``, ``base_commit``, ``problem_statement``, ``patch``, ``test_patch``,
  ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``version``, ``environment_setup_commit``, optional
  ``image``): SWE-bench Lite/Verified exports, SWE-Gym and SWE-smith files as they are.
  Optional fields say how to test a repository that SWE-bench's specs do not know:
  ``test_cmd``, ``log_parser`` (a parser of the ``swebench`` package: ``pytest``,
  ``django``, ...), ``install``, ``pip_packages``, ``python``.

Every field is checked on load; a bad file is one line naming the file, the row and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.datafiles import DataFile
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import ConfigError, DatasetError
from intercode.fetch import fetch_file

__all__ = ["DEMO", "IMAGE", "SEED_FILE", "SweTask", "demo_repository", "load", "load_instances"]

ENV = "swe"
DEMO = "swe-demo"
SEED = "ic-swe-bench"
SEED_FILE = DataFile("data/swe-bench/ic_swe_bench.json", "swe-bench/ic_swe_bench.json", "", 0,
                     blob="74926032583e1eab4cefacc6d7a6a2a35268b615")
MAX_FILE = 512 << 20  # a task file (SWE-bench's full test split is about 100 MB as JSON)
MAX_ROWS = 100_000
MAX_TEXT = 4 << 20  # a problem statement, a patch, a test patch
MAX_TEST_ID = 4096  # one FAIL_TO_PASS / PASS_TO_PASS name
MAX_TESTS = 50_000  # names in one list
INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
PARSER = re.compile(r"^[a-z0-9_]{1,40}$")
PYTHON = re.compile(r"^3\.[0-9]{1,2}$")
PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~ ;'\"]{0,199}$")


@dataclass(frozen=True)
class SweTask(Task):
    """A repository at ``base_commit`` with an issue (``query``) to fix.

    ``gold`` is the reference patch (empty when the file has none, as the seed's);
    ``test_patch`` adds the tests that decide; a task is resolved when every test of
    ``fail_to_pass`` and ``pass_to_pass`` passes after the agent's patch and the test
    patch. The optional fields override what SWE-bench's specs say for ``repo``/``version``.
    """

    task_id: str = ""
    repo: str = ""
    base_commit: str = ""
    test_patch: str = ""
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    version: str = ""
    environment_setup_commit: str = ""
    image: str = ""
    test_cmd: str = ""
    log_parser: str = ""
    install: str = ""
    pip_packages: tuple[str, ...] = ()
    python: str = ""

    @property
    def category(self) -> str | None:
        """The repository."""
        return self.repo or None

    def instance(self) -> dict[str, Any]:
        """The task as a SWE-bench instance (the ``swebench`` package's input)."""
        return {"instance_id": self.task_id, "repo": self.repo, "base_commit": self.base_commit,
                "problem_statement": self.query, "patch": self.gold,
                "test_patch": self.test_patch, "FAIL_TO_PASS": list(self.fail_to_pass),
                "PASS_TO_PASS": list(self.pass_to_pass), "version": self.version,
                "environment_setup_commit": self.environment_setup_commit or self.base_commit}


class _Bad(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def load(name: str) -> Dataset:
    """A registered SWE dataset: ``swe-demo`` or ``ic-swe-bench``."""
    if name == DEMO:
        doc = _demo_doc()
        return _dataset(DEMO, list(enumerate(doc["instances"], 1)), "swe-demo.json",
                        hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest(),
                        "three small issues on a bundled repository (offline)")
    if name == SEED:
        path = fetch_file(SEED_FILE)
        raw = _read(path, str(path))
        rows = _rows(raw, str(path))
        return _dataset(SEED, rows, SEED_FILE.upstream, SEED_FILE.blob,
                        "InterCode's SWE-bench file (no gold patches)")
    raise ConfigError(f"unknown SWE dataset {name!r}")


def load_instances(path: str | os.PathLike[str], env: str = ENV) -> Dataset:
    """A file of SWE-bench instances (JSON list or JSON Lines), read as it is."""
    if env != ENV:
        raise ConfigError(f"SWE-bench instances are tasks of the swe environment, not {env}")
    shown = os.fspath(path)
    file = Path(shown)
    raw = _read(file, shown)
    rows = _rows(raw, shown)
    name = str(file.resolve())
    return _dataset(name, rows, name, hashlib.sha256(raw).hexdigest(),
                    f"SWE-bench instances {file.name}")


def _read(path: Path, shown: str) -> bytes:
    try:
        return safeio.read_bytes(path, MAX_FILE)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read the task file: {exc.strerror or exc}") from None
    except safeio.Refused as exc:
        raise ConfigError(f"{shown}: the task file {exc}") from None


def _rows(raw: bytes, shown: str) -> list[tuple[int, Any]]:
    """``(line or position, row)`` of a JSON list or of JSON Lines."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{shown}:{at}: not UTF-8 text") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{shown}: not valid JSON: {_line(str(exc))}") from None
        return list(enumerate(data, 1))
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{shown}:{number}: not valid JSON: {_line(str(exc))}") from None
    return rows


def _dataset(name: str, rows: list[tuple[int, Any]], source: str, revision: str,
             description: str) -> Dataset:
    if len(rows) > MAX_ROWS:
        raise ConfigError(f"{source}: more than {MAX_ROWS} tasks in one file")
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, item in rows:
        try:
            task = _task(item, len(tasks), name, source)
        except _Bad as bad:
            where = f"{source}:{number}"
            if bad.field is not None:
                where += f': field "{bad.field}"'
            raise ConfigError(f"{where}: {_line(bad.message)}") from None
        if task.task_id in seen:
            raise ConfigError(f"{source}:{number}: duplicate instance_id {task.task_id!r} "
                              f"(also at {seen[task.task_id]})")
        seen[task.task_id] = number
        tasks.append(task)
    if not tasks:
        raise ConfigError(f"{source}: the task file has no task")
    return Dataset(name, ENV, tuple(tasks), revision, description)


def _task(item: Any, index: int, dataset: str, source: str) -> SweTask:
    if not isinstance(item, dict):
        raise _Bad(None, f"a task is a JSON object, not {type(item).__name__}")
    if "instance_id" not in item and "task_id" in item:
        item = _from_seed(item)
    task_id = _match(item, "instance_id", INSTANCE_ID)
    fields: dict[str, Any] = {
        "task_id": task_id,
        "repo": _match(item, "repo", REPO),
        "base_commit": _match(item, "base_commit", COMMIT),
        "test_patch": _text(item, "test_patch"),
        "fail_to_pass": _tests(item, "FAIL_TO_PASS"),
        "pass_to_pass": _tests(item, "PASS_TO_PASS"),
        "version": _match(item, "version", VERSION, required=False, number=True),
        "environment_setup_commit": _match(item, "environment_setup_commit", COMMIT,
                                           required=False),
        "image": (_match(item, "image", IMAGE, required=False)
                  or _match(item, "image_name", IMAGE, required=False)),  # SWE-smith's name
        "test_cmd": _text(item, "test_cmd", required=False, limit=4096),
        "log_parser": _match(item, "log_parser", PARSER, required=False),
        "install": _text(item, "install", required=False, limit=4096),
        "pip_packages": _packages(item),
        "python": _match(item, "python", PYTHON, required=False),
    }
    if not fields["fail_to_pass"]:
        raise _Bad("FAIL_TO_PASS", "names no test: nothing would decide the task")
    return SweTask(index=index, query=_text(item, "problem_statement"),
                   gold=_text(item, "patch", required=False), dataset=dataset, source=source,
                   source_index=index, **fields)


def _from_seed(item: dict[str, Any]) -> dict[str, Any]:
    """A row of the seed's ``transform.py`` output as a SWE-bench instance."""
    tests = item.get("tests")
    if not isinstance(tests, dict):
        raise _Bad("tests", "must be an object with patch, FAIL_TO_PASS and PASS_TO_PASS")
    return {"instance_id": item.get("task_id"), "repo": item.get("repo"),
            "base_commit": item.get("base_commit"), "problem_statement": item.get("query"),
            "patch": "", "test_patch": tests.get("patch"),
            "FAIL_TO_PASS": tests.get("FAIL_TO_PASS"), "PASS_TO_PASS": tests.get("PASS_TO_PASS"),
            "version": item.get("version"),
            "environment_setup_commit": item.get("environment_setup_commit")}


def _match(item: dict[str, Any], field: str, pattern: re.Pattern[str], required: bool = True,
           number: bool = False) -> str:
    value = item.get(field)
    if value is None or value == "":
        if required:
            raise _Bad(field, "is missing")
        return ""
    if number and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not pattern.match(value):
        raise _Bad(field, f"is not valid: {str(value)[:80]!r}")
    return value


def _text(item: dict[str, Any], field: str, required: bool = True, limit: int = MAX_TEXT) -> str:
    value = item.get(field)
    if value is None or value == "":
        if required:
            raise _Bad(field, "is missing")
        return ""
    if not isinstance(value, str):
        raise _Bad(field, f"must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise _Bad(field, f"is longer than {limit} characters")
    if "\0" in value:
        raise _Bad(field, "contains a NUL character")
    _utf8(field, value)
    return value


def _utf8(field: str, value: str) -> None:
    """Refuse a lone surrogate (JSON's ``\\ud800``): no file, command or record can hold it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(field, "is not UTF-8 text (a lone surrogate escape)") from None


def _tests(item: dict[str, Any], field: str) -> tuple[str, ...]:
    """A list of test names, or SWE-bench's JSON text of one."""
    value = item.get(field, [])
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except (ValueError, RecursionError):
            raise _Bad(field, "is text but not a JSON list of test names") from None
    if not isinstance(value, list):
        raise _Bad(field, "must be a list of test names")
    if len(value) > MAX_TESTS:
        raise _Bad(field, f"names more than {MAX_TESTS} tests")
    names = []
    for name in value:
        if not isinstance(name, str) or not name or len(name) > MAX_TEST_ID:
            raise _Bad(field, f"holds a test name that is not a non-empty string of at most "
                              f"{MAX_TEST_ID} characters: {str(name)[:60]!r}")
        if "\0" in name or "\n" in name or "\r" in name:
            raise _Bad(field, f"holds a test name with a line break or NUL: {name[:60]!r}")
        _utf8(field, name)
        names.append(name)
    return tuple(names)


def _packages(item: dict[str, Any]) -> tuple[str, ...]:
    value = item.get("pip_packages", [])
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or len(value) > 200:
        raise _Bad("pip_packages", "must be a list of at most 200 requirement strings")
    for name in value:
        if not isinstance(name, str) or not PACKAGE.match(name):
            raise _Bad("pip_packages", f"is not a requirement: {str(name)[:60]!r}")
    return tuple(value)


def _line(message: str) -> str:
    return " ".join(message.split())[:300]


@lru_cache(maxsize=1)
def _demo_doc() -> dict[str, Any]:
    text = resources.files("intercode.datasets.data").joinpath("swe_demo.json")
    doc: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return doc


def demo_repository() -> dict[str, Any]:
    """The bundled repository of ``swe-demo``: ``repo``, ``base_commit``, ``identity``
    (author, date, message, branch) and ``files`` (path -> text)."""
    doc = _demo_doc()
    if not isinstance(doc.get("files"), dict):
        raise DatasetError("the bundled swe-demo repository is damaged")
    return {k: doc[k] for k in ("repo", "base_commit", "identity", "files")}
