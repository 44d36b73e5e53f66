"""The SWE environment end to end on the bundled repository, on each sandbox backend:
gold patches resolve, empty and wrong ones do not, resets are exact, the test-file policy
holds, and every failure of the handed-in patch is a score of 0 with its reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from backends import backends, need
from swe_helpers import NEEDS_SWEBENCH, step, swe_env

from intercode.benchmarks.swe import apply_gold
from intercode.datasets.swe import SweTask, load, load_instances
from intercode.envs.swe import SweEnv

pytestmark = NEEDS_SWEBENCH


@pytest.fixture(scope="module", params=backends())
def env(request: pytest.FixtureRequest) -> Iterator[SweEnv]:
    yield from swe_env(request.param)


def test_gold_patches_resolve_and_the_empty_patch_does_not(env: SweEnv) -> None:
    for index in range(len(env.dataset)):
        env.reset(options={"task": index})
        assert step(env, "submit")[1] == 0.0
        env.reset(options={"task": index})
        obs, _, _ = step(env, apply_gold(env.task))  # type: ignore[arg-type]
        assert "cleanly" in obs
        _, reward, info = step(env, "submit")
        assert reward == 1.0, info
        assert info["fail_to_pass"] == 1.0 and info["pass_to_pass"] == 1.0


def test_a_wrong_fix_scores_zero_with_the_fractions(env: SweEnv) -> None:
    env.reset(options={"task": 0})
    # a half fix: runs of spaces, but not tabs or newlines
    step(env, "sed -i 's/return len(text.split(\" \"))/return len([w for w in "
              "text.split(\" \") if w])/' textkit/words.py")
    _, reward, info = step(env, "submit")
    assert reward == 0.0 and info["status"] == "RESOLVED_PARTIAL"
    assert info["fail_to_pass"] == 0.5 and info["pass_to_pass"] == 1.0
    assert any("test_newlines_and_tabs" in name for name in info["failing_tests"])
    # and a "fix" that breaks what worked (scored by evaluate(): the episode goes on)
    env.reset(options={"task": 0})
    step(env, "sed -i 's/if not text:/if text:/' textkit/words.py")
    scored = env.evaluate()
    assert scored.reward == 0.0 and scored.info["pass_to_pass"] < 1.0
    assert step(env, "echo still here")[0].strip() == "still here"


def test_reset_is_exact_after_edits_deletes_new_files_and_git(env: SweEnv) -> None:
    env.reset(options={"task": 1})
    before = step(env, "find /testbed /opt -xdev | sort | xargs -d '\\n' ls -ld --time-style=+%s "
                       "| md5sum; git -C /testbed log --oneline | wc -l")[0]
    for action in ("echo junk >> textkit/words.py", "rm -f README.md tests/test_numbers.py",
                   "mkdir -p new/deep && echo x > new/deep/f.py && chmod 700 new",
                   "git add -A && git commit -qm wip && git checkout -qb other",
                   "rm -rf .git/objects/pack", "mkdir -p /opt/venv && touch /opt/venv/x"):
        step(env, action)
    env.reset(options={"task": 1})
    after = step(env, "find /testbed /opt -xdev | sort | xargs -d '\\n' ls -ld --time-style=+%s "
                      "| md5sum; git -C /testbed log --oneline | wc -l")[0]
    assert after == before
    assert step(env, "git status --short; pwd")[0].strip() == "/testbed"


def test_history_holds_the_base_commit_alone(env: SweEnv) -> None:
    env.reset(options={"task": 0})
    task = env.task
    out = step(env, "git log --all --format=%H; git remote; git tag")[0].split()
    assert out == [task.base_commit]  # type: ignore[union-attr]


def test_edits_to_tests_are_not_handed_in(env: SweEnv) -> None:
    env.reset(options={"task": 2})
    # the agent makes the new test pass by rewriting the test file instead of the code
    step(env, "printf 'import unittest\\n' > tests/test_words.py")
    step(env, "printf 'import sys\\n' > sitecustomize.py; echo 'import os' > evil.pth")
    _, reward, info = step(env, "submit")
    assert reward == 0.0
    assert {"tests/test_words.py", "sitecustomize.py", "evil.pth"} <= set(info["dropped_paths"])
    assert info["fail_to_pass"] == 0.0


def test_a_patch_that_does_not_apply_scores_zero_with_the_reason(env: SweEnv) -> None:
    env.reset(options={"task": 0})
    bad = ("diff --git a/textkit/words.py b/textkit/words.py\n--- a/textkit/words.py\n"
           "+++ b/textkit/words.py\n@@ -1,3 +1,3 @@\n-nothing like this\n+x\n context\n")
    result = env.score_patch(bad)
    assert result.reward == 0.0 and "does not apply" in result.info["reason"]
    garbage = env.score_patch("this is not a diff at all\n\x01\x02")
    assert garbage.reward == 0.0 and garbage.info["reason"]


def test_the_scoring_tree_is_pristine_whatever_the_agent_did(env: SweEnv) -> None:
    """The agent's sandbox is not the scorer's: breaking its python, its git or its
    tests does not reach the scoring (the gold patch still resolves)."""
    env.reset(options={"task": 0})
    step(env, apply_gold(env.task))  # type: ignore[arg-type]
    step(env, "rm -rf tests; git config alias.diff '!echo hacked'; "
              "echo 'exit 0' > /tmp/python3; chmod +x /tmp/python3")
    _, reward, info = step(env, "submit")
    assert reward == 1.0, info
    assert "tests/__init__.py" in info["dropped_paths"]


def task_file(tmp_path: Path, **override: Any) -> Path:
    rows = []
    for task in load("swe-demo"):
        inst = task.instance()  # type: ignore[attr-defined]
        inst.update({"test_cmd": task.test_cmd, "log_parser": task.log_parser})  # type: ignore[attr-defined]
        inst.update(override)
        rows.append(inst)
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("backend", backends())
def test_a_hanging_test_command_scores_zero_in_time(tmp_path: Path, backend: str) -> None:
    need(backend)
    ds = load_instances(task_file(tmp_path, test_cmd="python3 -m unittest -v; sleep 600"))
    env = SweEnv(ds, backend=backend, test_timeout=3)
    try:
        env.reset(options={"task": 0})
        step(env, apply_gold(env.task))  # type: ignore[arg-type]
        _, reward, info = step(env, "submit")
        assert reward == 0.0 and "ran out of time" in info["reason"]
    finally:
        env.close()


def test_hostile_test_names_only_fail_to_match(tmp_path: Path) -> None:
    names = ["$(touch /tmp/pwned)", "`id`; rm -rf /", "' OR 1=1 --", "x" * 4000]
    ds = load_instances(task_file(tmp_path, FAIL_TO_PASS=names))
    env = SweEnv(ds)
    try:
        env.reset(options={"task": 0})
        step(env, apply_gold(env.task))  # type: ignore[arg-type]
        _, reward, info = step(env, "submit")
        assert reward == 0.0 and info["fail_to_pass_passed"] == "0/4"
        scorer = env._scorer
        assert scorer is not None
        assert scorer.exec(["/bin/ls", "/tmp/pwned"]).exit_code != 0
    finally:
        env.close()


def test_snapshot_restore_and_fork_keep_the_repository_state(env: SweEnv) -> None:
    env.reset(options={"task": 0})
    step(env, "echo 'EDITED = 1' >> textkit/words.py")
    snap = env.snapshot()
    step(env, "rm -rf textkit")
    env.restore(snap)
    assert "EDITED = 1" in step(env, "tail -n 1 textkit/words.py")[0]
    child = env.fork()
    try:
        assert "EDITED = 1" in child.step("tail -n 1 textkit/words.py")[0]
        child.step("sed -i 's/text.split(\" \")/text.split()/' textkit/words.py")
        assert child.step("submit")[1] == 1.0
    finally:
        child.close()
    assert env.evaluate().reward == 0.0  # the parent kept its own tree
    snap.release()


def test_outcomes_and_verdicts_equal_the_official_graders(env: SweEnv, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The same logs, read by swebench's own grading (its parser, get_logs_eval,
    get_eval_tests_report, get_resolution_status): the same per-test outcomes and the
    same verdict, for a gold, an empty and a half fix."""
    from swebench.harness import grading as official
    from swebench.harness.constants import (
        END_TEST_OUTPUT,
        MAP_REPO_VERSION_TO_SPECS,
        START_TEST_OUTPUT,
    )
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
    from swebench.harness.log_parsers.python import parse_log_django

    from intercode.swe.grading import PASSED

    task = env.dataset[0]
    assert isinstance(task, SweTask)
    monkeypatch.setitem(MAP_REPO_TO_PARSER, task.repo, parse_log_django)
    monkeypatch.setitem(official.MAP_REPO_TO_PARSER, task.repo, parse_log_django)
    monkeypatch.setitem(MAP_REPO_VERSION_TO_SPECS, task.repo,
                        {task.version: {"test_cmd": task.test_cmd, "python": "3.11"}})
    half = task.gold.replace("text.split()", "[w for w in text.split(\" \") if w]")
    env.reset(options={"task": 0})
    for patch in (task.gold, "", half):
        ours = env.score_patch(patch)
        log = tmp_path / "run.log"
        log.write_text(f"+ : '{START_TEST_OUTPUT}'\n{env.last_log}\n+ : '{END_TEST_OUTPUT}'\n")
        spec = SimpleNamespace(repo=task.repo, version=task.version, instance_id=task.task_id)
        status_map, found = official.get_logs_eval(spec, str(log))
        report = official.get_eval_tests_report(
            status_map, {"FAIL_TO_PASS": list(task.fail_to_pass),
                         "PASS_TO_PASS": list(task.pass_to_pass)})
        assert found and official.get_resolution_status(report) == ours.info["status"]
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for name in report[key]["success"]:
                assert ours.info["tests"][name] in PASSED
            for name in report[key]["failure"]:
                assert ours.info["tests"][name] not in PASSED
