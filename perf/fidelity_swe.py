"""SWE scoring against the official grader: per-test outcomes and verdicts, same logs.

Run by hand:  python perf/fidelity_swe.py FILE [--repo-mirror DIR] [--json out.json]

For every instance of FILE (SWE-bench instance format) with a gold patch, the environment
scores the gold patch and the empty patch. Each test log is then written as the official
harness writes it (between its ``>>>>> Start Test Output`` / ``End`` markers) and read
back by the ``swebench`` package's own grading (``get_logs_eval``,
``get_eval_tests_report``, ``get_resolution_status``). Reported per instance and patch:
whether the per-test outcomes of FAIL_TO_PASS and PASS_TO_PASS agree with ours
(passed / not passed, test by test) and both verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def official(task: Any, log: str) -> tuple[dict[str, bool], str]:
    """Per-test "passed" and the resolution status as swebench grades ``log``."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
    from swebench.harness.grading import (
        get_eval_tests_report,
        get_logs_eval,
        get_resolution_status,
    )

    spec = SimpleNamespace(repo=task.repo, version=task.version, instance_id=task.task_id)
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(f"+ : '{START_TEST_OUTPUT}'\n{log}\n+ : '{END_TEST_OUTPUT}'\n")
    try:
        status_map, found = get_logs_eval(spec, fh.name)
    finally:
        os.unlink(fh.name)
    gold = {"FAIL_TO_PASS": list(task.fail_to_pass), "PASS_TO_PASS": list(task.pass_to_pass)}
    report = get_eval_tests_report(status_map, gold)
    passed = {}
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        for name in report[key]["success"]:
            passed[name] = True
        for name in report[key]["failure"]:
            passed[name] = False
    return passed, get_resolution_status(report) if found else "NO_LOG"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--repo-mirror", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from intercode.datasets.swe import load_instances
    from intercode.envs.swe import SweEnv
    from intercode.swe.grading import PASSED

    ds = load_instances(args.file)
    env = SweEnv(ds, repo_mirror=args.repo_mirror)
    rows = []
    try:
        for task in ds:
            if not task.gold:
                continue
            env.reset(options={"task": task.index})
            for label, patch in (("gold", task.gold), ("empty", "")):
                result = env.score_patch(patch)
                ours = {name: status in PASSED or (status == "SKIPPED"
                                                   and name not in task.fail_to_pass)
                        for name, status in result.info.get("tests", {}).items()}
                theirs, verdict = official(task, env.last_log)
                differ = sorted(n for n in theirs if theirs[n] != ours.get(n))
                rows.append({"instance": task.task_id, "patch": label,
                             "tests": len(theirs), "outcomes_differ": differ,
                             "ours": result.info.get("status"), "official": verdict,
                             "test_seconds": result.info.get("test_seconds")})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        env.close()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(not r["outcomes_differ"] and r["ours"] == r["official"] for r in rows) \
        else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
