"""Hostile values reaching ``sandbox="intercode"`` and the readers of hostile files.

A model's tool call is text the agent chose: Inspect's ``bash()`` tool puts it in the
argv of ``exec`` as it is, so a NUL byte or a lone surrogate in it reached the sandbox's
pid 1, whose failure came back as intercode's ``SandboxError`` and ended the sample as
an error. The provider must fail such a call as Inspect's own sandboxes do (a
``ValueError`` Inspect turns into a tool error the model sees), and the sandbox must
go on serving.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from backends import backends, need
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState
from inspect_ai.tool import bash
from inspect_ai.util import sandbox
from provider_sandbox import provider_sandbox, submit, tool_call

from intercode import safeio
from intercode.errors import IntercodeError
from intercode.integrations.inspectai.sandbox import IntercodeSandboxConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=backends())
def env(request: pytest.FixtureRequest) -> Any:
    with provider_sandbox(request.param, "hostile") as box:
        yield box


async def test_nul_bytes_and_lone_surrogates_fail_the_call_not_the_sandbox(env: Any) -> None:
    calls = [lambda: env.exec(["bash", "-c", "echo a\0b"]), lambda: env.exec(["ec\0ho"]),
             lambda: env.exec(["true"], cwd="a\0b"),
             lambda: env.exec(["true"], env={"A": "\0"}),
             lambda: env.exec(["true"], env={"A=B": "c"}), lambda: env.read_file("a\0b"),
             lambda: env.write_file("a\0b", "x"), lambda: env.exec(["echo", "\ud800"]),
             lambda: env.read_file("\ud800"), lambda: env.write_file("\ud800", "x")]
    for call in calls:
        with pytest.raises(ValueError) as caught:
            await call()
        assert not isinstance(caught.value, IntercodeError), caught.value
    # a name that is only bytes (not UTF-8) is still a name
    await env.write_file("\udcff", "raw")
    assert await env.read_file("\udcff") == "raw"
    done = await env.exec(["echo", "alive"])
    assert (done.returncode, done.stdout) == (0, "alive\n")



@scorer(metrics=[accuracy()])
def answer_is_42() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        text = await sandbox().read_file("answer.txt")
        return Score(value=CORRECT if text == "42\n" else INCORRECT)

    return score


@pytest.mark.parametrize("backend", backends())
def test_a_tool_call_with_a_nul_byte_is_a_tool_error_not_a_failed_sample(
        backend: str, tmp_path: Any) -> None:
    need(backend)
    replies = iter([tool_call("echo 42 > answer.txt\0"), tool_call("echo 42 > answer.txt"),
                    submit()])
    task = Task(dataset=[Sample(input="write 42 to answer.txt", target="42")],
                sandbox=("intercode", IntercodeSandboxConfig(backend=backend)),
                solver=react(tools=[bash(timeout=60)]), scorer=answer_is_42())
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=replies),
                       display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success", log.error
    (sample,) = log.samples or []
    assert sample.error is None, sample.error
    assert sample.scores is not None
    (result,) = sample.scores.values()
    assert result.value == CORRECT


# -- run folders: a JSON line small on disk but huge in memory ---------------------------

SRC = str(Path(__file__).resolve().parents[2] / "src")
MEMORY = 1 << 30  # the child's address space: far above what reading a run needs


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _intercode(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    try:
        return subprocess.run([sys.executable, "-m", "intercode", *argv], env=env,
                              capture_output=True, text=True, timeout=300, preexec_fn=_limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"intercode {' '.join(argv)} hung")


def _record(task: int, **more: object) -> dict[str, object]:
    return {"env": "bash", "dataset": "bash-demo", "task": task, "source": "bash-demo",
            "source_index": task, "query": "q", "agent": "gold", "status": "ok",
            "reward": 1.0, "success": True, "turns": [], "schema": 2, "extra": {}, **more}


def test_a_line_of_millions_of_empty_lists_is_malformed_not_out_of_memory(
        tmp_path: Path) -> None:
    # 24 MiB on disk, within the line bound; parsed, 8 million lists took over 1 GiB
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        {"env": "bash", "dataset": "bash-demo", "agent": "gold", "tasks": [0, 1]}))
    wide = "[" + "[]," * (8 << 20) + "[]]"
    with (folder / "results.jsonl").open("w") as fh:
        fh.write(json.dumps(_record(0)) + "\n")
        fh.write(json.dumps(_record(1))[:-1] + ', "x": ' + wide + "}\n")
    (folder / "messages.jsonl").write_text('{"task": 1, "messages": ' + wide + "}\n")
    proc = _intercode("show", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    data = json.loads(proc.stdout)
    assert data["summary"]["success"] == 1 and data["summary"]["finished"] == 1
    assert any("1 line(s)" in n and "[2]" in n for n in data["notes"]), data["notes"]


def test_json_with_too_many_lists_and_objects_is_refused() -> None:
    with pytest.raises(ValueError, match="lists and objects"):
        safeio.loads("[" + "{}," * safeio.MAX_CONTAINERS + "{}]")
    assert safeio.loads('{"a": "[[[{{{"}') == {"a": "[[[{{{"}
