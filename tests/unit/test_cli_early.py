"""``intercode eval`` starts its workers' fork server before it parses its arguments."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercode.benchmarks import builtin
from intercode.cli import early
from intercode.runner import workerserver


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(workerserver, "start", calls.append)
    return calls


@pytest.mark.parametrize("argv", [
    ["eval", "bash"],
    ["eval", "bash", "--dataset", "nl2bash", "--workers", "2", "--tasks", "0-9"],
    ["eval", "sql", "--agent", "gold", "--executor", "local"],
    ["eval", "python", "--agent=replay", "--trajectories", "t.jsonl"],
])
def test_a_local_eval_of_a_built_in_environment_starts_it(started: list[str],
                                                           argv: list[str]) -> None:
    assert early.start_workers_early(argv)
    assert started == [argv[1]]


@pytest.mark.parametrize("argv", [
    [], ["eval"], ["validate", "bash"], ["serve", "bash"], ["-v", "eval", "bash"],
    ["eval", "my-plugin-env"], ["eval", "--dataset", "nl2bash"],
    ["eval", "bash", "--help"], ["eval", "bash", "-h"], ["eval", "bash", "--he"],
    ["eval", "bash", "--agent", "human"], ["eval", "bash", "--agent=human"],
    ["eval", "bash", "--ag", "human"],
    ["eval", "bash", "--executor", "ray"], ["eval", "bash", "--executor=ray"],
    ["eval", "bash", "--exec", "ray", "--ray-address", "auto"],
])
def test_nothing_is_started_where_it_would_be_wasted_or_unsure(started: list[str],
                                                               argv: list[str]) -> None:
    assert not early.start_workers_early(argv)
    assert started == []


def test_the_built_in_environments_modules_are_the_registrys() -> None:
    modules = {b.name: str(b.env).split(":", 1)[0] for b in builtin.BENCHMARKS}
    assert modules == workerserver.BUILTIN_ENV_MODULES


FIRST = """
import sys
from intercode.runner import workerserver

def start(env):
    print("app imported" if "intercode.cli.app" in sys.modules else "first", env)
    raise SystemExit(0)

workerserver.start = start
from intercode.cli import main
main(["eval", "bash", "--dataset", "nl2bash"])
"""


def test_the_server_starts_before_the_command_line_is_imported() -> None:
    proc = subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["first", "bash"]
