"""A host that runs intercode under lower limits of its own (``ulimit -v``, a batch
system's memory cap) keeps them: the sandbox takes the lower of its limit and the
host's, instead of failing every episode because no process may raise a hard limit."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
CAP = 1 << 30  # below the sandbox's own address-space limit


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def test_episodes_run_under_a_hosts_lower_memory_limit(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC, "OPENBLAS_NUM_THREADS": "1"}
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "intercode", "eval", "bash", "--dataset",
                           "bash-demo", "--agent", "gold", "--output", str(out)],
                          env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=_cap)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "ok" and r["reward"] == 1.0 for r in records), [
        r.get("error") for r in records]
