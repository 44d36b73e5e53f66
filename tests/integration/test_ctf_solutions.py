"""Every offline CTF task is solvable here: a reference solution recovers its flag in the sandbox.

The solutions (``tests/ctf_solutions/<id>.sh``) run as one agent action in the task's
sandbox; the last line they print is submitted and must score 1.0. Tasks without a
solution must say why in ``tests/ctf_solutions/unproven.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercode.datasets import load_dataset
from intercode.sandbox.limits import Limits

SOLUTIONS = Path(__file__).resolve().parents[1] / "ctf_solutions"
TIMEOUT = 120.0


def _offline_tasks() -> list[int]:
    return [t.task_id for t in load_dataset("intercode-ctf")
            if not t.needs_network and not t.missing_assets]


def _unproven() -> dict[int, str]:
    raw = json.loads((SOLUTIONS / "unproven.json").read_text(encoding="utf-8"))
    return {int(k): v for k, v in raw.items() if not k.startswith("_")}


def _solved() -> list[int]:
    return sorted(int(p.stem) for p in SOLUTIONS.glob("*.sh"))


@pytest.fixture(scope="module")
def ctf_env():
    from intercode.envs.ctf import CtfEnv

    env = CtfEnv(limits=Limits(timeout=TIMEOUT))
    yield env
    env.close()


def test_every_offline_task_is_proven_or_explained():
    offline = set(_offline_tasks())
    solved, unproven = set(_solved()), _unproven()
    assert not solved & set(unproven), "a task is both solved and listed as unproven"
    assert offline - solved - set(unproven) == set(), "tasks with neither proof nor reason"
    assert (solved | set(unproven)) - offline == set(), "solutions for tasks that cannot run"
    assert all(len(reason) > 20 for reason in unproven.values())


@pytest.mark.slow
@pytest.mark.parametrize("task_id", _solved())
def test_reference_solution_recovers_the_flag(ctf_env, task_id):
    script = (SOLUTIONS / f"{task_id}.sh").read_text(encoding="utf-8")
    task = next(t for t in load_dataset("intercode-ctf") if t.task_id == task_id)
    assert task.gold.lower() not in script.lower(), "the script contains the flag"
    ctf_env.reset(options={"task": task.index})
    observation, _, _, _, info = ctf_env.step(script)
    assert not info["timed_out"], observation[-2000:]
    lines = [line.strip() for line in observation.splitlines() if line.strip()]
    assert lines, "the solution printed nothing"
    flag = lines[-1]
    _, reward, terminated, _, info = ctf_env.step(f"submit {flag}")
    assert reward == 1.0, f"recovered {flag!r}; output:\n{observation[-2000:]}"
    assert terminated and info["success"]
