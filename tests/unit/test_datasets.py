"""Loading the Bash datasets, and validating task files."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest

from intercode.datafiles import FILES, REVISION
from intercode.datasets import nl2bash
from intercode.datasets.fsbuild import FILE_SYSTEMS
from intercode.datasets.registry import dataset_names, load_dataset
from intercode.datasets.tasks import BashTask, Dataset
from intercode.errors import ConfigError, DatasetError

# the mirror the suite runs with (tests/conftest.py sets it)
SHARED = Path(os.environ.get("INTERCODE_DATA_MIRROR", "/nonexistent"))
pytestmark = pytest.mark.usefixtures("fresh_caches")
PARTS = {"nl2bash-fs1": ("nl2bash_fs_1", 60), "nl2bash-fs2": ("nl2bash_fs_2", 53),
         "nl2bash-fs3": ("nl2bash_fs_3", 60), "nl2bash-fs4": ("nl2bash_fs_4", 27)}
ALL_NAMES = ["bash-demo", "bash-test", "nl2bash", "nl2bash-fs1", "nl2bash-fs2",
             "nl2bash-fs3", "nl2bash-fs4"]




@pytest.fixture()
def real_mirror(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The shared mirror, read-only; a private cache so nothing else is touched."""
    if not SHARED.is_dir():
        pytest.fail(f"the shared data mirror {SHARED} is missing")
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(SHARED))
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    return SHARED


def _raw(key: str) -> list[dict]:
    return json.loads((SHARED / FILES[key].mirror).read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the registry


def test_dataset_names() -> None:
    from intercode.benchmarks import benchmarks

    python = ["apps", "mbpp", "mbpp-prompt", "mbpp-test", "mbpp-train", "mbpp-validation"]
    SQL = ["bird-dev", "bird-dev-no-evidence", "spider-dev", "wikisql-dev"]
    # installed plugins (CI installs examples/intercode-node) add their own datasets
    plugins = {name for b in benchmarks() if b.name not in ("bash", "sql", "python", "ctf")
               for name in b.datasets}
    assert [n for n in dataset_names() if n not in plugins] == sorted(
        [*ALL_NAMES, *SQL, "intercode-ctf", *python])
    assert dataset_names("bash") == ALL_NAMES
    assert dataset_names("sql") == SQL
    assert dataset_names("python") == python
    assert dataset_names("ctf") == ["intercode-ctf"]


def test_unknown_dataset_lists_known_names() -> None:
    with pytest.raises(ConfigError) as info:
        load_dataset("nl2bash-fs5")
    msg = str(info.value)
    assert "'nl2bash-fs5'" in msg
    for name in ALL_NAMES:
        assert name in msg
    assert isinstance(info.value, ValueError)


def test_load_dataset_is_cached(real_mirror: Path) -> None:
    first = load_dataset("nl2bash-fs4")
    assert load_dataset("nl2bash-fs4") is first


# ---------------------------------------------------------------- the real data


@pytest.mark.parametrize("name", list(PARTS))
def test_nl2bash_parts(name: str, real_mirror: Path) -> None:
    key, count = PARTS[name]
    ds = load_dataset(name)
    assert isinstance(ds, Dataset)
    assert (ds.name, ds.env, ds.revision) == (name, "bash", REVISION)
    assert len(ds) == count
    raw = _raw(key)
    assert len(raw) == count
    for i, task in enumerate(ds):
        assert isinstance(task, BashTask)
        assert task.index == i == task.source_index
        assert (task.dataset, task.source, task.fs) == (name, name, name)
        assert task.fs in FILE_SYSTEMS
        assert task.query == raw[i]["query"]
        assert task.gold == raw[i]["gold"]
    assert ds[count - 1] is ds.tasks[-1]


def test_bash_test(real_mirror: Path) -> None:
    ds = load_dataset("bash-test")
    assert len(ds) == 24
    raw = _raw("bash_test_queries")
    assert [t.query for t in ds] == [r["query"] for r in raw]
    assert [t.gold for t in ds] == [r["gold"] for r in raw]
    assert all(isinstance(t, BashTask) and t.fs == "bash-test" for t in ds)
    assert "bash-test" in FILE_SYSTEMS
    assert [t.index for t in ds] == list(range(24))


def test_nl2bash_all_in_order(real_mirror: Path) -> None:
    ds = load_dataset("nl2bash")
    assert (ds.name, ds.env, ds.revision) == ("nl2bash", "bash", REVISION)
    assert len(ds) == 200
    assert [t.index for t in ds] == list(range(200))
    assert all(isinstance(t, BashTask) and t.dataset == "nl2bash" for t in ds)
    start = 0
    for part, (key, count) in PARTS.items():
        chunk = ds.tasks[start:start + count]
        raw = _raw(key)
        assert [t.source for t in chunk] == [part] * count
        assert [t.fs for t in chunk] == [part] * count
        assert [t.source_index for t in chunk] == list(range(count))
        assert [(t.query, t.gold) for t in chunk] == [(r["query"], r["gold"]) for r in raw]
        start += count
    assert start == 200
    # spot checks at the boundaries
    assert (ds[59].source, ds[59].source_index) == ("nl2bash-fs1", 59)
    assert (ds[60].source, ds[60].source_index) == ("nl2bash-fs2", 0)
    assert (ds[173].source, ds[173].source_index) == ("nl2bash-fs4", 0)
    assert (ds[199].source, ds[199].source_index) == ("nl2bash-fs4", 26)


def test_bash_demo_needs_no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("INTERCODE_DATA_MIRROR", raising=False)
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("INTERCODE_DATA_URL", f"http://127.0.0.1:{port}/")

    def forbidden(key: str) -> Path:
        raise AssertionError(f"bash-demo fetched {key}")

    monkeypatch.setattr(nl2bash, "data_file", forbidden)
    ds = load_dataset("bash-demo")
    assert (ds.name, ds.env, ds.revision) == ("bash-demo", "bash", "embedded")
    assert len(ds) == 8
    for i, task in enumerate(ds):
        assert isinstance(task, BashTask)
        assert task.fs == "bash-demo"
        assert (task.index, task.source, task.source_index) == (i, "bash-demo", i)
        assert task.query.strip() and task.gold.strip()
    assert not (tmp_path / "cache").exists()


def test_tasks_are_immutable(real_mirror: Path) -> None:
    task = load_dataset("nl2bash-fs4")[0]
    with pytest.raises(AttributeError):
        task.gold = "rm -rf /"  # type: ignore[misc]


# ---------------------------------------------------------------- parse_tasks


def _task_index(msg: str) -> int:
    found = re.search(r"\btask (\d+)\b", msg)
    assert found, msg
    return int(found.group(1))


GOOD = {"query": "list files", "gold": "ls"}


def test_parse_tasks_good() -> None:
    raw = [GOOD, {"query": "where am I", "gold": "pwd", "extra": 1}]
    assert nl2bash.parse_tasks(raw, "x.json") == [("list files", "ls"), ("where am I", "pwd")]
    assert nl2bash.parse_tasks([], "x.json") == []


@pytest.mark.parametrize("raw, kind", [
    ({"query": "q", "gold": "g"}, "dict"),
    ("[]", "str"),
    (None, "NoneType"),
    (7, "int"),
])
def test_parse_tasks_not_a_list(raw: object, kind: str) -> None:
    with pytest.raises(DatasetError) as info:
        nl2bash.parse_tasks(raw, "where.json")
    msg = str(info.value)
    assert msg.startswith("where.json:")
    assert "list" in msg
    assert kind in msg


@pytest.mark.parametrize("bad", ["ls", ["q", "g"], None, 3])
def test_parse_tasks_item_not_an_object(bad: object) -> None:
    with pytest.raises(DatasetError) as info:
        nl2bash.parse_tasks([GOOD, GOOD, bad], "f.json")
    msg = str(info.value)
    assert msg.startswith("f.json:")
    assert _task_index(msg) == 2
    assert "not an object" in msg


@pytest.mark.parametrize("item", [
    {"gold": "ls"},
    {"query": "", "gold": "ls"},
    {"query": "  \n\t", "gold": "ls"},
    {"query": None, "gold": "ls"},
    {"query": 5, "gold": "ls"},
    {"query": ["list", "files"], "gold": "ls"},
])
def test_parse_tasks_bad_query(item: dict) -> None:
    raw = [GOOD] * 11 + [item]
    with pytest.raises(DatasetError) as info:
        nl2bash.parse_tasks(raw, "f.json")
    msg = str(info.value)
    assert msg.startswith("f.json:")
    assert _task_index(msg) == 11
    assert "'query'" in msg


@pytest.mark.parametrize("item", [
    {"query": "list files"},
    {"query": "list files", "gold": ""},
    {"query": "list files", "gold": "   "},
    {"query": "list files", "gold": None},
    {"query": "list files", "gold": 0},
    {"query": "list files", "gold": []},
    {"query": "list files", "gold": ["ls", 3]},
    {"query": "list files", "gold": {"cmd": "ls"}},
])
def test_parse_tasks_bad_gold(item: dict) -> None:
    with pytest.raises(DatasetError) as info:
        nl2bash.parse_tasks([GOOD, item, GOOD], "f.json")
    msg = str(info.value)
    assert msg.startswith("f.json:")
    assert _task_index(msg) == 1
    assert "'gold'" in msg


def test_parse_tasks_gold_list_is_joined_with_semicolons() -> None:
    raw = [{"query": "q", "gold": ["cd /tmp", "ls -l"]}, {"query": "r", "gold": ["pwd"]}]
    assert nl2bash.parse_tasks(raw, "f.json") == [("q", "cd /tmp;ls -l"), ("r", "pwd")]


def test_parse_tasks_first_error_wins() -> None:
    with pytest.raises(DatasetError) as info:
        nl2bash.parse_tasks([GOOD, {"gold": "ls"}, "oops"], "f.json")
    assert _task_index(str(info.value)) == 1


# ---------------------------------------------------------------- read_json


def test_read_json_good(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text('[{"query": "caf\u00e9", "gold": "ls"}]', encoding="utf-8")
    assert nl2bash.read_json(path, "ok") == [{"query": "caf\u00e9", "gold": "ls"}]


@pytest.mark.parametrize("content", [
    b'[{"query": "q", "gold": "g"',  # cut off
    b"",  # empty
    b"not json at all",
    b'[{"query": "q", "gold": "g"}] trailing',
], ids=["truncated", "empty", "text", "trailing"])
def test_read_json_invalid_json(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(DatasetError) as info:
        nl2bash.read_json(path, "my-dataset")
    msg = str(info.value)
    assert msg.startswith("my-dataset:")
    assert str(path) in msg
    assert "JSON" in msg


def test_read_json_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"query": "caf\u00e9", "gold": "ls"}]'.encode("latin-1"))
    with pytest.raises(DatasetError) as info:
        nl2bash.read_json(path, "my-dataset")
    assert str(path) in str(info.value)
    assert isinstance(info.value.__cause__, UnicodeDecodeError)


def test_read_json_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(DatasetError) as info:
        nl2bash.read_json(path, "my-dataset")
    assert str(path) in str(info.value)
