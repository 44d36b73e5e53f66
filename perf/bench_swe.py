"""SWE environment: reset, step and scoring times, on a 6,000-file repository and on real
SWE-bench instances.

Run by hand:  python perf/bench_swe.py [--files 6000] [--repeat 50] [--backend bwrap]
              [--real FILE --repo-mirror DIR] [--json out.json]

The synthetic repository (made in a temporary folder, served as a local mirror) has
``--files`` Python files in 60 packages and one test. Measured on it:

- ``reset_ms``: median of ``reset()`` after an action that edits one file (the goal:
  at most 10 ms for 6,000 files);
- ``reset_100_ms``: median of ``reset()`` after an action that edits 100 files, deletes 10
  and adds 10;
- ``step_ms``: median of a ``true`` action;
- ``diff_ms``: median of making the working tree's diff (one edited file);
- ``score_ms``: median of scoring a one-file patch in the warm scoring sandbox (reset,
  apply, test patch, test command, parse), and ``score_fresh_ms`` the same in a new
  sandbox each time (the official harness's approach: a fresh container per
  evaluation; on ``--backend docker`` a new container).

With ``--real FILE``, the same ``reset_ms``, ``step_ms``, ``score_ms`` and
``score_fresh_ms`` (gold patch) for each instance of FILE with a gold patch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

IDENT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
         "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid",
         "GIT_AUTHOR_DATE": "2023-06-01T00:00:00+00:00",
         "GIT_COMMITTER_DATE": "2023-06-01T00:00:00+00:00"}


def make_repo(root: Path, files: int) -> tuple[str, dict[str, Any]]:
    """A repository of ``files`` small modules and one failing test, as a SWE instance."""
    work = root / "bench__big"
    for i in range(files):
        pkg = work / "pkg" / f"p{i % 60:02d}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / f"m{i:05d}.py").write_text(f"VALUE = {i}\n\ndef f(x):\n    return x + {i}\n")
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "core.py").write_text("def answer():\n    return 41\n")
    (work / "tests").mkdir()
    (work / "tests" / "__init__.py").write_text("")
    env = {**os.environ, **IDENT}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "big"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True,
                          text=True, check=True).stdout.strip()
    test = ("diff --git a/tests/test_core.py b/tests/test_core.py\nnew file mode 100644\n"
            "--- /dev/null\n+++ b/tests/test_core.py\n@@ -0,0 +1,7 @@\n+import unittest\n+\n"
            "+from pkg.core import answer\n+\n+\n+class T(unittest.TestCase):\n"
            "+    def test_answer(self):\n+        self.assertEqual(answer(), 42)\n")
    test = test.replace("@@ -0,0 +1,7 @@", "@@ -0,0 +1,8 @@")
    gold = ("diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n"
            "@@ -1,2 +1,2 @@\n def answer():\n-    return 41\n+    return 42\n")
    inst = {"instance_id": "bench__big-1", "repo": "bench/big", "base_commit": base,
            "problem_statement": "answer() should be 42", "patch": gold, "test_patch": test,
            "FAIL_TO_PASS": ["test_answer (tests.test_core.T.test_answer)"],
            "PASS_TO_PASS": [], "version": "1", "test_cmd": "python3 -m unittest -v",
            "log_parser": "django"}
    return base, inst


def ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def timed(fn: Any, repeat: int, before: Any = None) -> list[float]:
    out = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def measure(env: Any, index: int, repeat: int, edit: str, many: str | None) -> dict[str, Any]:
    env.reset(options={"task": index})
    env.reset(options={"task": index})
    row: dict[str, Any] = {}
    row["reset_ms"] = ms(timed(lambda: env.reset(options={"task": index}), repeat,
                               lambda: env.step(edit)))
    if many is not None:
        row["reset_100_ms"] = ms(timed(lambda: env.reset(options={"task": index}), repeat,
                                       lambda: env.step(many)))
    row["step_ms"] = ms(timed(lambda: env.step("true"), repeat))
    env.step(edit)
    row["diff_ms"] = ms(timed(env.current_patch, max(3, repeat // 5)))
    gold = env.task.gold

    def score() -> None:
        env._last = None
        result = env.score_patch(gold)
        assert result.reward == 1.0, result.info

    row["score_ms"] = ms(timed(score, max(3, repeat // 10)))

    def fresh() -> None:
        if env._scorer is not None:
            env._scorer.close()
            env._scorer = None

    row["score_fresh_ms"] = ms(timed(score, max(3, repeat // 10), fresh))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--real", default=None)
    parser.add_argument("--repo-mirror", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from intercode.datasets.swe import load_instances
    from intercode.envs.swe import SweEnv

    results: dict[str, Any] = {"backend": args.backend}
    with tempfile.TemporaryDirectory(prefix="bench-swe.") as tmp:
        root = Path(tmp)
        _, inst = make_repo(root, args.files)
        (root / "tasks.jsonl").write_text(json.dumps(inst) + "\n")
        env = SweEnv(load_instances(root / "tasks.jsonl"), backend=args.backend,
                     repo_mirror=str(root))
        try:
            many = ("for i in $(seq 0 99); do echo '# x' >> pkg/p$(printf %02d $((i % 60)))"
                    "/m$(printf %05d $i).py; done; rm -f pkg/p0[0-9]/m0010[0-9].py; "
                    "for i in $(seq 10); do echo y > pkg/new$i.py; done")
            row = measure(env, 0, args.repeat, "echo '# edit' >> pkg/core.py", many)
            row["files"] = args.files
            results["synthetic"] = row
            print(json.dumps({"synthetic": row}), flush=True)
        finally:
            env.close()
    if args.real:
        ds = load_instances(args.real)
        env = SweEnv(ds, backend=args.backend, repo_mirror=args.repo_mirror, limits=None)
        try:
            for task in ds:
                if not task.gold:
                    continue
                try:
                    row = measure(env, task.index, max(10, args.repeat // 5),
                                  "echo '# edit' >> README.rst 2>/dev/null || true", None)
                except AssertionError as exc:
                    row = {"error": f"the gold did not resolve: {str(exc)[:200]}"}
                results[task.task_id] = row
                print(json.dumps({task.task_id: row}), flush=True)
        finally:
            env.close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
