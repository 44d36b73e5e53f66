"""The Bash gold cache (issue 18 item 9): same rewards with and without it; a damaged,
foreign or unsafe entry is ignored and recomputed; tasks that are not a function of
their pristine tree are never stored; the opt-outs store nothing; no sandbox sees it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from intercode.datasets.known_issues import known_issues
from intercode.envs import gold_cache
from intercode.envs.bash import BashEnv

TASKS = range(0, 30)
ACTIONS = ("{gold}", "true", "{gold}; touch /testbed/zz")


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    monkeypatch.delenv("INTERCODE_GOLD_CACHE", raising=False)
    return tmp_path / "gold"


def entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.json")) if root.is_dir() else []


def scores(env: BashEnv, tasks) -> dict:
    out = {}
    for task in tasks:
        for action in ACTIONS:
            env.reset(options={"task": task})
            env.step(action.format(gold=env.task.gold))
            result = env.evaluate()
            out[task, action] = (result.reward, json.dumps(result.info, sort_keys=True))
    return out


def test_rewards_are_the_same_with_and_without_the_cache(cache):
    skip = {i for i, issue in known_issues("nl2bash-fs1").items()
            if issue.kind in gold_cache.UNCACHEABLE_KINDS}
    tasks = [t for t in TASKS if t not in skip]
    live, filling, cached = (BashEnv("nl2bash-fs1", gold_cache=False), BashEnv("nl2bash-fs1"),
                             BashEnv("nl2bash-fs1"))
    try:
        expected = scores(live, tasks)
        assert scores(filling, tasks) == expected
        stored = entries(cache)
        assert len(stored) >= len(tasks) // 2  # most are stored (not the timed-out ones)
        assert scores(cached, tasks) == expected
    finally:
        for env in (live, filling, cached):
            env.close()


@pytest.mark.parametrize("damage", ["truncate", "payload", "key", "group_writable",
                                    "symlink"])
def test_a_damaged_or_unsafe_entry_is_ignored_and_recomputed(cache, damage):
    env = BashEnv("nl2bash-fs1")
    try:
        env.reset(options={"task": 44})  # gold: touch /testbed/dir1/abc.txt
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
        (path,) = entries(cache)
        body = json.loads(path.read_text())
        if damage == "truncate":
            path.write_text(path.read_text()[:50])
        elif damage == "payload":  # a lie without a matching checksum
            body["payload"]["changes"] = []
            path.write_text(json.dumps(body))
        elif damage == "key":  # another task's entry under this name
            body["key"]["task"]["source_index"] = 45
            path.write_text(json.dumps(body))
        elif damage == "group_writable":
            body["payload"]["changes"] = []
            body["sha256"] = __import__("hashlib").sha256(gold_cache._canonical(
                body["payload"])).hexdigest()
            path.write_text(json.dumps(body))
            os.chmod(path, 0o664)
        else:
            target = path.with_suffix(".real")
            path.rename(target)
            path.symlink_to(target)
        env.reset(options={"task": 44})
        env.step("true")  # wrong: had the entry been trusted, "no changes" would match
        wrong = env.evaluate()
        assert wrong.reward < 1.0
        assert wrong.info["diff_miss"] == [["testbed/dir1/abc.txt", "??"]]
    finally:
        env.close()


def test_known_issue_tasks_are_never_stored(cache):
    issues = known_issues("nl2bash-fs1")
    task = next(i for i, issue in issues.items() if issue.kind == "nondeterministic")
    env = BashEnv("nl2bash-fs1")
    try:
        env.reset(options={"task": task})
        env.step(env.task.gold)
        env.evaluate()
        assert entries(cache) == []
    finally:
        env.close()


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_opt_outs_store_nothing(cache, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("INTERCODE_GOLD_CACHE", "0")
    env = BashEnv("nl2bash-fs1", gold_cache=how != "argument")
    try:
        env.reset(options={"task": 44})
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
        assert entries(cache) == []
    finally:
        env.close()


def test_no_sandbox_sees_the_cache(cache):
    env = BashEnv("nl2bash-fs1")
    try:
        env.reset(options={"task": 44})
        env.step(env.task.gold)
        env.evaluate()
        (path,) = entries(cache)
        obs, *_ = env.step(f"ls -la {path.parent} {cache}; cat {path}; echo rc=$?")
        assert "rc=0" not in obs and "payload" not in obs
    finally:
        env.close()


def test_warm_up_leaves_the_gold_sandbox_to_the_first_miss(cache):
    """With the cache on, a worker's warm-up starts only the agent's sandbox: a run whose
    golds are all stored never starts the gold's; the first miss starts it."""
    warm = BashEnv("nl2bash-fs1")
    try:
        warm.reset(options={"task": 44})
        warm.step(warm.task.gold)
        assert warm.evaluate().reward == 1.0  # stores task 44's gold
    finally:
        warm.close()
    env, live = BashEnv("nl2bash-fs1"), BashEnv("nl2bash-fs1", gold_cache=False)
    try:
        env.warm_up()
        live.warm_up()
        assert env._agent is not None and env._gold is None
        assert live._gold is not None  # without the cache both start, as before
        env.reset(options={"task": 44})
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
        assert env._gold is None  # a stored gold: still never started
        env.reset(options={"task": 45})
        env.step(env.task.gold)
        assert env.evaluate().reward == 1.0
        assert env._gold is not None and env._gold.alive  # a miss started it
    finally:
        env.close()
        live.close()
