"""The Bash gold cache: same rewards with and without it; a damaged,
foreign or unsafe entry is ignored and recomputed; tasks that are not a function of
their pristine tree are never stored; the opt-outs store nothing; no sandbox sees it."""

from __future__ import annotations

import json
import os
import re

import pytest
from gold_helpers import entries, resealed

from intercode.datasets.known_issues import known_issues
from intercode.envs import gold_cache
from intercode.envs.bash import BashEnv

TASKS = range(0, 30)
ACTIONS = ("{gold}", "true", "{gold}; touch /testbed/zz")


@pytest.fixture()
def cache(gold_cache_dir):
    return gold_cache_dir


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
    # (host-dependent ones race on /proc: their rewards may differ from run to run)
    skip = {i for i, issue in known_issues("nl2bash-fs1").items()
            if issue.kind in gold_cache.UNCACHEABLE_KINDS | gold_cache.CONFIRMED_KINDS}
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
            body["sha256"] = resealed(body)
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


@pytest.mark.parametrize(("dataset", "kind"), [("nl2bash-fs1", "nondeterministic"),
                                               ("nl2bash-fs3", "host_dependent")])
def test_known_issue_tasks_are_never_stored(cache, dataset, kind):
    """Nondeterministic (and time-dependent, network) tasks; host-dependent ones whose
    gold does not score 1.0 against itself (fs3#26 lists mount times)."""
    issues = known_issues(dataset)
    task = next(i for i, issue in issues.items() if issue.kind == kind
                and (kind != "host_dependent" or issue.gold_scores_one is None))
    env = BashEnv(dataset)
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


HOST_DEPENDENT = 38  # fs1#38 reads the sandbox's /etc/networks (host-dependent, stable)


def evaluate_gold(env: BashEnv, task: int) -> float:
    env.reset(options={"task": task})
    env.step(env.task.gold)
    return env.evaluate().reward


def test_a_host_dependent_gold_is_used_only_once_a_second_run_confirms_it(cache):
    assert known_issues("nl2bash-fs1")[HOST_DEPENDENT].kind in gold_cache.CONFIRMED_KINDS
    first, second, third = (BashEnv("nl2bash-fs1") for _ in range(3))
    try:
        assert evaluate_gold(first, HOST_DEPENDENT) == 1.0
        (path,) = entries(cache)
        assert json.loads(path.read_text())["confirmed"] is False  # a candidate
        second.warm_up()
        assert evaluate_gold(second, HOST_DEPENDENT) == 1.0
        assert second._gold is not None  # the candidate was not used: the gold ran again
        assert json.loads(path.read_text())["confirmed"] is True  # ... and agreed
        third.warm_up()
        assert evaluate_gold(third, HOST_DEPENDENT) == 1.0
        assert third._gold is None  # confirmed: used, the gold's sandbox never started
    finally:
        for env in (first, second, third):
            env.close()


def test_a_gold_that_shows_when_its_sandbox_started_is_never_stored(cache):
    """``ls -ald `which c++``` where no c++ is installed lists the working directory,
    dated when the sandbox started: a result stored in one minute would score a right
    answer of a later one below 1.0 (two runs of a run agree, so confirming does not
    catch it)."""
    task = 2  # nl2bash-fs4
    assert known_issues("nl2bash-fs4")[task].kind in gold_cache.UNCACHEABLE_KINDS
    envs = [BashEnv("nl2bash-fs4") for _ in range(2)]
    try:
        for env in envs:
            env.reset(options={"task": task})
            observation = env.step(env.task.gold)[0]
            assert re.search(r" \d\d:\d\d \.$", observation.strip())  # a time of day
            # the gold runs (in a sandbox of its own, started now: its date may be
            # another minute's, so the reward is not always 1.0) and is never stored
            assert env.evaluate().info["gold_exit_code"] == 0
        assert entries(cache) == []
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("forgery", ["flag_only", "other_result"])
def test_a_candidate_is_not_confirmed_by_a_forger_or_by_a_different_run(cache, forgery):
    env = BashEnv("nl2bash-fs1")
    try:
        assert evaluate_gold(env, HOST_DEPENDENT) == 1.0
        (path,) = entries(cache)
        body = json.loads(path.read_text())
        if forgery == "flag_only":  # confirmed without the checksum that goes with it
            body["confirmed"] = True
        else:  # a sealed candidate that another (different) run of the gold left
            body["payload"]["result"]["output"] += "something else\n"
            body["sha256"] = resealed(body)
        path.write_text(json.dumps(body))
        again = BashEnv("nl2bash-fs1")
        try:
            again.warm_up()
            assert evaluate_gold(again, HOST_DEPENDENT) == 1.0
            assert again._gold is not None  # not used: the gold ran
        finally:
            again.close()
        stored = json.loads(path.read_text())
        # the forged flag was ignored (the file is rewritten as a candidate of this run);
        # a different candidate is replaced by this run's result, still unconfirmed
        assert stored["confirmed"] is False
        assert "something else" not in stored["payload"]["result"]["output"]
    finally:
        env.close()


def test_every_key_names_the_kernel(cache):
    env = BashEnv("nl2bash-fs1")
    try:
        evaluate_gold(env, 44)
        (path,) = entries(cache)
        assert json.loads(path.read_text())["key"]["kernel"] == gold_cache.kernel_identity()
        assert os.uname().release in gold_cache.kernel_identity()
    finally:
        env.close()
