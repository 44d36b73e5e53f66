"""`inspect eval intercode/<env>` from Inspect's own command line, against a local
OpenAI-compatible server (Inspect's openai provider on Chat Completions, the scripted gold model): the
task is found through the entry point, runs offline, and scores 1.0."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from backends import backends, need
from inspect_ai.log import list_eval_logs, read_eval_log

from intercode.datasets import load_dataset
from intercode.llm.gold_responder import GoldResponder
from intercode.llm.scripted_server import ScriptedChatServer


@pytest.mark.parametrize("sandbox", backends())
def test_inspect_eval_from_the_command_line(sandbox, tmp_path):
    need(sandbox)
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent)) or \
        shutil.which("inspect")
    assert inspect, "inspect-ai's command line is not installed"
    logs = tmp_path / "logs"
    with ScriptedChatServer(GoldResponder(load_dataset("spider-dev"), detour=0)) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-local", "INSPECT_LOG_DIR": str(logs)}
        proc = subprocess.run(
            [inspect, "eval", "intercode/sql", "--model", "openai/scripted",
             "--model-base-url", server.url, "-M", "responses_api=false",
             "-T", "tasks=[0,1,2]", "-T", "turns=3", "-T", f"sandbox={sandbox}",
             "--display", "plain", "--log-dir", str(logs)],
            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (info,) = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success" and log.eval.task.endswith("sql")
    assert log.eval.metadata["intercode"]["sandbox"] == sandbox
    values = {int(s.id): float(s.scores["intercode_scorer"].value) for s in log.samples}
    assert values == {0: 1.0, 1: 1.0, 2: 1.0}
    assert pytest.approx(1.0) == log.results.scores[0].metrics["mean"].value


def test_the_documented_offline_recipe_runs(tmp_path):
    """docs/inspect.md's offline script, as written there, runs Inspect's command line
    against the scripted server and every task scores 1.0."""
    doc = (Path(__file__).parents[2] / "docs" / "inspect.md").read_text()
    section = doc.split("### Without a network", 1)[1]
    script = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert script.startswith("# offline_smoke.py")
    (tmp_path / "offline_smoke.py").write_text(script)
    logs = tmp_path / "logs"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = subprocess.run([sys.executable, "offline_smoke.py", "--log-dir", str(logs),
                           "--display", "plain"], capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (info,) = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success"
    values = {int(s.id): float(s.scores["intercode_scorer"].value) for s in log.samples}
    assert values == {0: 1.0, 1: 1.0, 2: 1.0}
