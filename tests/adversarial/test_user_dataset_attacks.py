"""A user dataset (``--dataset FILE``) is hostile input: every path it names must stay
inside the dataset file's folder once symbolic links are followed, no file it names may
block or exhaust the loader (FIFO, ``/dev/zero``, huge files), sizes and counts are
bounded, and no error echoes the content of a file it should not have read."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from intercode.datasets import ctf, user
from intercode.datasets.user import load_user_dataset
from intercode.errors import ConfigError

SRC = str(Path(__file__).resolve().parents[2] / "src")
SECRET = "S3CRET-TOKEN"


def scene(tmp_path: Path) -> tuple[Path, Path]:
    """``data/`` (the dataset's folder) and ``host/`` beside it, with a secret file."""
    data, host = tmp_path / "data", tmp_path / "host"
    data.mkdir()
    host.mkdir()
    (host / "secret.sh").write_text(f"echo {SECRET}\n")
    (host / "secret.sql").write_text(f"{SECRET}( not sql\n")
    (host / "gold").mkdir()
    (host / "gold" / "answer").write_text(SECRET)
    return data, host


def load(data: Path, env: str, row: dict) -> None:
    (data / "tasks.jsonl").write_text(json.dumps({"query": "q", **row}) + "\n")
    load_user_dataset(data / "tasks.jsonl", env)


@pytest.mark.parametrize("env,row", [
    ("bash", {"gold": "ls", "setup": "../host/secret.sh"}),
    ("bash", {"gold": "ls", "setup": "link.sh"}),  # link.sh -> ../host/secret.sh
    ("bash", {"gold": "ls", "setup": "middle/secret.sh"}),  # middle -> ../host
    ("bash", {"gold": "ls", "setup": "./../data/../host/secret.sh"}),
    ("ctf", {"flag": "f", "files": "../host/gold"}),
    ("ctf", {"flag": "f", "files": "middle/gold"}),
    ("ctf", {"flag": "f", "files": "linkdir"}),  # linkdir -> ../host/gold
    ("sql", {"gold": "SELECT 1", "database": "../host/secret.sql"}),
    ("sql", {"gold": "SELECT 1", "database": "middle/secret.sql"}),
])
def test_a_path_that_leaves_the_dataset_folder_is_refused_without_echo(tmp_path, env, row):
    data, host = scene(tmp_path)
    (data / "link.sh").symlink_to(host / "secret.sh")
    (data / "middle").symlink_to("../host")
    (data / "linkdir").symlink_to(host / "gold")
    field = next(k for k in ("setup", "files", "database") if k in row)
    with pytest.raises(ConfigError) as err:
        load(data, env, row)
    message = str(err.value)
    assert f'tasks.jsonl:1: field "{field}"' in message and "leads out" in message
    assert SECRET not in message and "\n" not in message


@pytest.mark.parametrize("env,field", [("bash", "setup"), ("ctf", "files"),
                                        ("sql", "database")])
def test_a_path_with_a_lone_surrogate_is_one_line(tmp_path, env, field):
    """A JSON escape of half a surrogate pair names no file: realpath raised
    UnicodeEncodeError out of the loader (a traceback)."""
    data, _ = scene(tmp_path)
    row = {"bash": {"gold": "ls"}, "ctf": {"flag": "f"}, "sql": {"gold": "SELECT 1"}}[env]
    (data / "tasks.jsonl").write_text(
        json.dumps({"query": "q", **row})[:-1] + f', "{field}": "\\ud800x"}}\n')
    with pytest.raises(ConfigError) as err:
        load_user_dataset(data / "tasks.jsonl", env)
    assert f'field "{field}"' in str(err.value) and "\n" not in str(err.value)


def test_a_symlinked_dataset_folder_is_fine_while_its_contents_stay_inside(tmp_path):
    data, _host = scene(tmp_path)
    (data / "setup.sh").write_text("mkdir /x\n")
    (data / "files").mkdir()
    (data / "files" / "a").write_text("a")
    alias = tmp_path / "alias"
    alias.symlink_to(data)
    (data / "tasks.jsonl").write_text(json.dumps({"query": "q", "gold": "ls",
                                                  "setup": "setup.sh"}) + "\n")
    task = load_user_dataset(alias / "tasks.jsonl", "bash").tasks[0]
    assert task.setup_path == str(data / "setup.sh")
    (data / "ctf.jsonl").write_text(json.dumps({"query": "q", "flag": "f",
                                                "files": "files"}) + "\n")
    assert load_user_dataset(alias / "ctf.jsonl", "ctf").tasks[0].files_path == str(
        data / "files")
    with pytest.raises(ConfigError, match="leads out"):
        load(alias, "bash", {"gold": "ls", "setup": "../host/secret.sh"})


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _load_in_child(path: Path, env: str) -> subprocess.CompletedProcess[str]:
    code = ("import sys\nfrom intercode.datasets.user import load_user_dataset\n"
            "from intercode.errors import ConfigError\n"
            "try:\n    load_user_dataset(sys.argv[1], sys.argv[2])\n"
            "except ConfigError as exc:\n    print(exc)\n    sys.exit(2)\n")
    try:
        return subprocess.run([sys.executable, "-c", code, str(path), env],
                              env={**os.environ, "PYTHONPATH": SRC}, capture_output=True,
                              text=True, timeout=120, preexec_fn=_limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} hung")


def test_a_dataset_file_that_is_a_fifo_or_dev_zero_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    for name, kind in (("fifo.jsonl", "FIFO"), ("zero.jsonl", "character device")):
        proc = _load_in_child(tmp_path / name, "bash")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert kind in proc.stdout and len(proc.stdout.strip().splitlines()) == 1


def test_files_a_row_names_may_not_block_or_be_devices(tmp_path):
    data, _host = scene(tmp_path)
    os.mkfifo(data / "fifo.sh")
    (data / "zero.sh").symlink_to("/dev/zero")
    (data / "files").mkdir()
    os.mkfifo(data / "files" / "pipe")
    for row, env in (({"gold": "ls", "setup": "fifo.sh"}, "bash"),
                     ({"gold": "ls", "setup": "zero.sh"}, "bash"),
                     ({"gold": "SELECT 1", "database": "zero.sh"}, "sql"),
                     ({"flag": "f", "files": "files"}, "ctf")):
        with pytest.raises(ConfigError) as err:
            load(data, env, row)
        assert "tasks.jsonl:1: field" in str(err.value)


def test_sizes_and_counts_are_bounded(tmp_path, monkeypatch):
    data, _host = scene(tmp_path)
    (data / "big.sh").write_bytes(b"#" * (user.MAX_SCRIPT + 1))
    with pytest.raises(ConfigError, match=r'field "setup": .big.sh. is larger than 1 MiB'):
        load(data, "bash", {"gold": "ls", "setup": "big.sh"})
    with open(data / "huge.sql", "wb") as fh:  # sparse: never written, never read
        fh.truncate(user.MAX_DATABASE + 1)
    with pytest.raises(ConfigError, match=r'field "database": .huge.sql. is larger than'):
        load(data, "sql", {"gold": "SELECT 1", "database": "huge.sql"})
    (data / "files").mkdir()
    with open(data / "files" / "asset", "wb") as fh:
        fh.truncate(ctf.MAX_ASSET + 1)
    with pytest.raises(ConfigError, match=r'field "files": .*asset is larger than 64 MiB'):
        load(data, "ctf", {"flag": "f", "files": "files"})
    (data / "files" / "asset").write_bytes(b"x" * 10)
    for i in range(4):
        (data / "files" / f"f{i}").write_bytes(b"y" * 10)
    monkeypatch.setattr(ctf, "MAX_TOTAL", 40)
    with pytest.raises(ConfigError, match="larger than 40 bytes in all"):
        load(data, "ctf", {"flag": "f", "files": "files"})
    monkeypatch.setattr(ctf, "MAX_FILES", 3)
    with pytest.raises(ConfigError, match="more than 3 files"):
        load(data, "ctf", {"flag": "f", "files": "files"})
    monkeypatch.setattr(user, "MAX_ROWS", 3)
    row = json.dumps({"query": "q", "gold": "ls"}) + "\n"
    (data / "rows.jsonl").write_text(row * 4)
    with pytest.raises(ConfigError, match=r"rows.jsonl:4: more than 3 tasks"):
        load_user_dataset(data / "rows.jsonl", "bash")
    with pytest.raises(ConfigError, match=r"tasks.jsonl:1: the line is longer than"):
        load(data, "bash", {"gold": "ls " + "x" * user.MAX_LINE})
    deep = '{"query": "q", "gold": "ls", "id": ' + "[" * 40 + "]" * 40 + "}\n"
    (data / "deep.jsonl").write_text(deep)
    with pytest.raises(ConfigError, match=r"deep.jsonl:1: not valid JSON: nested deeper"):
        load_user_dataset(data / "deep.jsonl", "bash")
