"""``intercode serve PROTOCOL`` takes its environment as ``eval`` does (``ENV``) or as
``--env ENV``; a missing or contradictory one is a one-line error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercode.cli import build_parser, main
from intercode.cli.options import chosen_env


@pytest.mark.parametrize("argv, env", [
    (["serve", "mcp", "bash"], "bash"),
    (["serve", "mcp", "--env", "sql"], "sql"),
    (["serve", "openenv", "python", "--port", "0"], "python"),
    (["serve", "openenv", "--env", "bash", "--port", "0"], "bash"),
    (["serve", "mcp", "ctf", "--env", "ctf"], "ctf"),
])
def test_the_environment_is_an_argument_or_an_option(argv: list[str], env: str) -> None:
    args = build_parser().parse_args(argv)
    assert chosen_env(args) == env and args.env == env


@pytest.mark.parametrize("argv, says", [
    (["serve", "mcp"], "name the environment"),
    (["serve", "openenv", "--port", "0"], "name the environment"),
    (["serve", "mcp", "bash", "--env", "sql"], "two environments: bash and --env sql"),
])
def test_a_missing_or_contradictory_environment_is_one_line(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_a_stdio_server_named_by_its_argument_serves_until_its_input_ends() -> None:
    pytest.importorskip("mcp")
    proc = subprocess.run([sys.executable, "-m", "intercode", "serve", "mcp", "bash",
                           "--dataset", "bash-demo"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "serving bash (bash-demo) over stdio" in proc.stderr
