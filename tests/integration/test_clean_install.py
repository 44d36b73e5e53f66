"""A plain ``pip install intercode`` (no extras) runs every core feature: the wheel is
built from the checkout and installed into a fresh virtual environment with only the
core dependencies, where an LLM evaluation against the scripted OpenAI-compatible
server, ``show``, ``compare``, ``validate``, ``doctor`` and the Python API work, and each
feature whose extra is absent says in one line which extra to install.

Nothing of the test environment is visible there (no PYTHONPATH, no site packages), so
an import of a package that is not a core dependency fails here as it would for a user.
The core dependencies come from the package index (pip's cache keeps it quick).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from intercode.datasets import load_dataset
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import ScriptedChatServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
# the optional extras' packages: none may be installed by the plain install
EXTRAS = ("pymysql", "matplotlib", "mcp", "uvicorn", "openenv", "ray", "inspect_ai", "trl", "verifiers",
          "torch", "transformers")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The ``bin`` folder of a fresh virtual environment holding the plain install."""
    base = tmp_path_factory.mktemp("plain")
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir",
                            str(base / "dist"), str(ROOT)], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (base / "dist").glob("*.whl")
    venv.create(base / "venv", with_pip=True, clear=True)
    bin_dir = base / "venv" / "bin"
    installed = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet",
                                "--disable-pip-version-check", str(wheel)],
                               capture_output=True, text=True, timeout=600, env=clean_env())
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    return bin_dir


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"  # no packages of the user's site either
    return env


def run(bin_dir: Path, *args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(bin_dir / "intercode"), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=clean_env())
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    if ok:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def test_the_plain_install_has_no_extra(plain):
    probe = ("import importlib.util as u; "
             f"print(','.join(m for m in {EXTRAS!r} if u.find_spec(m)))")
    done = subprocess.run([str(plain / "python"), "-c", probe], capture_output=True, text=True,
                          timeout=60, env=clean_env())
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_an_llm_run_shown_compared_and_validated(plain, tmp_path):
    gold = GoldResponder(load_dataset("bash-demo"), detour=1)
    with ScriptedChatServer(gold) as server:
        run(plain, "eval", "bash", "--dataset", "bash-demo", "--tasks", "0-2", "--agent",
            "try-again", "--model", "scripted", "--base-url", server.url, "--output", "llm",
            "--no-progress", cwd=tmp_path)
        assert len(server.requests) >= 3
    records = (tmp_path / "llm" / "results.jsonl").read_text().splitlines()
    assert len(records) == 3 and all('"reward": 1.0' in r for r in records), records
    run(plain, "eval", "bash", "--dataset", "bash-demo", "--tasks", "0-2", "--agent", "gold",
        "--output", "gold", "--no-progress", cwd=tmp_path)
    shown = run(plain, "show", "llm", cwd=tmp_path)
    assert "bash-demo" in shown.stdout
    compared = run(plain, "compare", "llm", "gold", cwd=tmp_path)
    assert "losses" in compared.stdout
    validated = run(plain, "validate", "bash", "--dataset", "bash-demo", cwd=tmp_path)
    assert "8/8 gold solutions score 1.0" in validated.stdout


def test_doctor_and_the_python_api(plain, tmp_path):
    doctor = run(plain, "doctor", cwd=tmp_path)
    assert "sandbox backends that work here" in doctor.stdout
    script = ("import intercode\n"
              "env = intercode.make('sql', dataset='spider-dev', max_turns=2)\n"
              "env.reset(options={'task': 0})\n"
              "obs, reward, *_ = env.step('SELECT 1')\n"
              "print(repr(obs)[:40])\n"
              "env.close()\n")
    done = subprocess.run([str(plain / "python"), "-c", script], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=clean_env())
    assert done.returncode == 0 and "1" in done.stdout, done.stderr[-3000:]


ABSENT = [
    ("mysql", ["eval", "sql", "--backend", "mysql", "--mysql-url",
               "mysql://u:p@127.0.0.1:1", "--agent", "gold", "--output", "m", "--no-progress"]),
    ("mcp", ["serve", "mcp", "--env", "bash"]),
    ("openenv", ["serve", "openenv", "--env", "bash", "--port", "0"]),
    ("report", ["report", "run"]),
    ("ray", ["eval", "bash", "--dataset", "bash-demo", "--agent", "gold", "--executor", "ray",
             "--output", "r", "--no-progress"]),
    ("inspect", ["export", "inspect", "run", "-o", "run.eval"]),
    ("swe", ["eval", "swe", "--agent", "gold", "--output", "s", "--no-progress"]),
]


@pytest.mark.parametrize(("extra", "args"), ABSENT, ids=[" ".join(a[:2]) for _, a in ABSENT])
def test_a_feature_whose_extra_is_absent_names_it_in_one_line(plain, tmp_path, extra, args):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text(
        '{"env": "sql", "dataset": "spider-dev", "task": 0, "query": "q", "agent": "gold", '
        '"reward": 1.0, "success": true, "turns": [], "status": "ok"}\n')
    done = run(plain, *args, cwd=tmp_path, ok=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'intercode[{extra}]'" in lines[0], done.stderr
