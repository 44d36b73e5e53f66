"""Run folders someone hands us are hostile input for every command that reads them
(`show`, `show --task`, `show --json`, `compare`, `report`, `eval --resume`): a FIFO
must not hang them, a link to `/dev/zero` must not exhaust memory, deep nesting must
not be a traceback, and forged values (a NaN reward, success "yes") must not change a
score. Each command runs in a child process with a time-out and an address-space limit,
so that a regression fails instead of hanging or swapping the test suite."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from intercode.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
EXAMPLE_SQL = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "sql" / "tasks.jsonl"
MEMORY = 1 << 30  # the child's address space: far above what reading a run needs


def record(task: int, reward: object = 1.0, success: object = True, **more: object) -> dict:
    return {"env": "bash", "dataset": "bash-demo", "task": task, "source": "bash-demo",
            "source_index": task, "query": "q", "agent": "gold", "status": "ok",
            "reward": reward, "success": success, "turns": [], "schema": 2, "extra": {},
            **more}


def good_run(folder: Path, tasks: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"env": "bash", "dataset": "bash-demo",
                                                    "agent": "gold",
                                                    "tasks": list(range(tasks))}))
    (folder / "results.jsonl").write_text("".join(json.dumps(record(t)) + "\n"
                                                  for t in range(tasks)))
    return folder


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def intercode(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command line in a child with bounded memory; a hang fails after 120 s."""
    env = {**os.environ, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    try:
        return subprocess.run([sys.executable, "-m", "intercode", *argv], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=_limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"intercode {' '.join(argv)} hung")


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("intercode: error:"), proc.stderr[-2000:]
    for word in words:
        assert word in lines[0]


def commands(folder: Path, other: Path, tmp: Path) -> list[list[str]]:
    return [["show", str(folder)], ["show", str(folder), "--json"],
            ["show", str(folder), "--task", "0"], ["compare", str(folder), str(other)],
            ["compare", str(folder), str(other), "--json"],
            ["report", str(folder), "-o", str(tmp / "r.html")]]


def test_results_linked_to_dev_zero_is_refused_without_reading_it(tmp_path):
    folder, other = good_run(tmp_path / "run"), good_run(tmp_path / "other")
    (folder / "results.jsonl").unlink()
    (folder / "results.jsonl").symlink_to("/dev/zero")
    for argv in commands(folder, other, tmp_path):
        one_line_error(intercode(*argv), "results.jsonl")


def test_a_named_results_file_or_upstream_file_linked_to_dev_zero_is_refused(tmp_path):
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    one_line_error(intercode("show", str(tmp_path / "zero.jsonl")), "character device")
    one_line_error(intercode("show", str(tmp_path / "zero.json")), "character device")


@pytest.mark.parametrize("name", ["config.json", "messages.jsonl"])
def test_a_fifo_in_the_run_folder_never_blocks_and_the_run_is_still_shown(tmp_path, name):
    folder, other = good_run(tmp_path / "run"), good_run(tmp_path / "other")
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    for argv in commands(folder, other, tmp_path):
        proc = intercode(*argv)
        assert proc.returncode == 0, proc.stderr[-2000:]
    shown = intercode("show", str(folder), "--json")
    data = json.loads(shown.stdout)
    assert any(name in n and "FIFO" in n for n in data["notes"])
    assert data["summary"]["success"] == 2


def test_a_fifo_for_results_or_an_upstream_file_is_one_line(tmp_path):
    folder = good_run(tmp_path / "run")
    (folder / "results.jsonl").unlink()
    os.mkfifo(folder / "results.jsonl")
    one_line_error(intercode("show", str(folder)), "FIFO")
    os.mkfifo(tmp_path / "upstream.json")
    one_line_error(intercode("show", str(tmp_path / "upstream.json")), "FIFO")


def test_eval_resume_into_a_folder_with_a_fifo_never_blocks(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    (folder / "results.jsonl").write_text(json.dumps(record(0)) + "\n")
    proc = intercode("eval", "sql", "--dataset", str(EXAMPLE_SQL), "--agent", "gold",
                     "--output", str(folder), "--resume")
    one_line_error(proc, "config.json", "FIFO")
    (folder / "config.json").unlink()
    (folder / "results.jsonl").unlink()
    os.mkfifo(folder / "results.jsonl")
    proc = intercode("eval", "sql", "--dataset", str(EXAMPLE_SQL), "--agent", "gold",
                     "--output", str(folder), "--resume")
    one_line_error(proc, "results.jsonl", "FIFO")


def test_eval_resume_reads_its_own_files_at_any_size_and_refuses_a_fifo(tmp_path):
    """The bounds meant for folders someone hands us do not stop a run from resuming
    itself: its own results past the 1 GiB bound are read (a 1 GiB hole of a torn line
    here), and a messages.jsonl that is a FIFO is one line (it was a traceback)."""
    folder = tmp_path / "run"
    argv = ("eval", "sql", "--dataset", str(EXAMPLE_SQL), "--agent", "gold",
            "--output", str(folder))
    first = intercode(*argv)
    assert first.returncode == 0, first.stderr[-2000:]
    results = folder / "results.jsonl"
    done = results.read_bytes()
    with results.open("ab") as fh:  # a line of a GiB of zeros (sparse), then the records
        fh.truncate(len(done) + (1 << 30) + 16)
        fh.seek(0, os.SEEK_END)
        fh.write(b"\n" + done)
    resumed = intercode(*argv, "--resume")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr[-2000:]
    results.write_bytes(done)
    messages = folder / "messages.jsonl"
    if messages.exists():
        messages.unlink()
    os.mkfifo(messages)
    one_line_error(intercode(*argv, "--resume"), "messages.jsonl", "FIFO")


def test_a_record_nested_100000_deep_is_a_malformed_line_not_a_traceback(tmp_path, capsys):
    folder, other = good_run(tmp_path / "run"), good_run(tmp_path / "other")
    deep = '{"task": 5, "status": "ok", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    near = record(6, extra={"x": json.loads("[" * 500 + "]" * 500)})  # parses, too deep
    with (folder / "results.jsonl").open("a") as fh:
        fh.write(deep + json.dumps(near) + "\n")
    (folder / "messages.jsonl").write_text(deep)
    (folder / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for argv in commands(folder, other, tmp_path):
        assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["show", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["success"] == 2 and data["summary"]["finished"] == 2
    assert any("2 line(s)" in n and "[3, 4]" in n for n in data["notes"])
    assert any("config.json is unreadable" in n for n in data["notes"])
    upstream = tmp_path / "upstream.json"
    upstream.write_text('{"0": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["show", str(upstream)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("forged", [
    '"reward": NaN, "success": true', '"reward": 1e999, "success": true',
    '"reward": Infinity, "success": true', '"reward": 2.0, "success": true',
    '"reward": 1.0, "success": "yes"', '"reward": "1", "success": true',
    '"reward": true, "success": true', '"reward": 1.0, "success": 1',
    '"reward": 1.0, "success": true, "best_turn": "0"',
    '"reward": 1.0, "success": true, "turns": 5',
    '"reward": 1.0, "success": true, "turns": [{"reward": NaN}]',
    '"reward": 1.0, "success": true, "llm": {"calls": "many"}'])
def test_forged_values_are_malformed_lines_and_never_a_success(tmp_path, capsys, forged):
    folder = good_run(tmp_path / "run", tasks=1)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "tasks": [0, 1]}))
    with (folder / "results.jsonl").open("a") as fh:
        fh.write('{"task": 1, "status": "ok", "env": "bash", ' + forged + "}\n")
    for argv in commands(folder, good_run(tmp_path / "other"), tmp_path):
        assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["show", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["success"] == 1 and data["summary"]["success_rate"] == 0.5
    assert data["summary"]["mean_reward"] == 0.5
    assert any("1 line(s)" in n and "[2]" in n for n in data["notes"])
    assert main(["show", str(folder)]) == 0
    assert "nan" not in capsys.readouterr().out.lower()


def test_upstream_episodes_with_forged_rewards_are_left_out(tmp_path, capsys):
    def episode(reward: object) -> dict:
        return {"environment": "ic_bash", "dataset": "nl2bash_fs_1", "query": "q",
                "turn_history": {"actions": ["ls"], "observations": ["x"],
                                 "rewards": [reward], "valid_action": [True]},
                "summary": {"max_reward": reward, "max_reward_idx": 0}}

    upstream = tmp_path / "upstream.json"
    upstream.write_text(json.dumps({"0": episode(1.0), "1": episode("nan"), "2": episode(5),
                                    "3": episode("inf"), "4": {**episode(1.0),
                                                               "task_id": float("inf")}}))
    assert main(["show", str(upstream), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["success"] == 1 and data["summary"]["finished"] == 1
    assert any("4 episode(s)" in n for n in data["notes"])


def test_a_symlink_out_of_the_run_folder_is_not_read(tmp_path, capsys):
    secret = tmp_path / "host" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"env": "bash", "token": "s3cr3t-token"}))
    folder = good_run(tmp_path / "run")
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(secret)
    (folder / "messages.jsonl").symlink_to(secret)
    assert main(["report", str(folder), "-o", str(tmp_path / "r.html")]) == 0
    assert main(["show", str(folder), "--json"]) == 0
    out = capsys.readouterr().out
    assert "s3cr3t" not in out and "leads out of the run folder" in out
    page = (tmp_path / "r.html").read_text()
    assert "s3cr3t" not in page
    # a link that stays inside the folder is read
    (folder / "config.json").unlink()
    (folder / "real-config.json").write_text(json.dumps({"env": "bash", "tasks": [0, 1]}))
    (folder / "config.json").symlink_to("real-config.json")
    assert main(["show", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == {"env": "bash", "tasks": [0, 1]}
