"""A stored Python gold outcome that is damaged, unsafe, unconfirmed or not an outcome list
is never used: the gold's tests run again, and a wrong answer still scores 0 (had a
forged entry that says every gold test fails been trusted, it would have matched)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gold_helpers import entries, resealed

from intercode.envs import gold_cache
from intercode.envs.python import PythonEnv

FAILING = "def min_cost(*args, **kwargs):\n    raise ValueError('no')\n"
POISON = {"output": "poison", "error": ""}  # a test that passed, printing what none prints


@pytest.fixture()
def cache(gold_cache_dir):
    return gold_cache_dir


def submit(env: PythonEnv, code: str) -> float:
    env.reset(options={"task": 0})
    env.step(code)
    return env.step("submit min_cost")[1]


@pytest.mark.parametrize("damage", ["truncate", "flag_only", "group_writable", "symlink",
                                    "wrong_count", "timed_out", "other_key"])
def test_a_damaged_or_unsafe_entry_is_never_used(cache, damage):
    env = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        assert submit(env, env.dataset[0].gold) == 1.0
    finally:
        env.close()
    (path,) = entries(cache)
    body = json.loads(path.read_text())
    assert body["confirmed"] is False
    # what the forger wants believed: every gold test printed something no answer prints
    body["payload"]["outcomes"] = [POISON] * 3
    body["confirmed"] = True
    if damage == "truncate":
        path.write_text(json.dumps(body)[:60])
    elif damage == "flag_only":  # confirmed, without the checksum that goes with it
        path.write_text(json.dumps(body))
    elif damage == "group_writable":
        body["sha256"] = resealed(body)
        path.write_text(json.dumps(body))
        os.chmod(path, 0o664)
    elif damage == "symlink":
        body["sha256"] = resealed(body)
        target = path.with_suffix(".real")
        target.write_text(json.dumps(body))
        path.unlink()
        path.symlink_to(target)
    elif damage == "wrong_count":  # sealed, but not one outcome per test
        body["payload"]["outcomes"] = [POISON] * 2
        body["sha256"] = resealed(body)
        path.write_text(json.dumps(body))
    elif damage == "timed_out":  # sealed, but a test ran out of its time: never kept
        body["payload"]["outcomes"][0] = {"error": "Error: the test took more than 2 s"}
        body["sha256"] = resealed(body)
        path.write_text(json.dumps(body))
    else:  # another task's request under this name
        body["key"]["request"] = "0" * 64
        body["sha256"] = resealed(body)
        path.write_text(json.dumps(body))
    again = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        assert submit(again, again.dataset[0].gold) == 1.0  # trusted, it would be 0
        assert submit(again, FAILING) == 0.0
    finally:
        again.close()


def test_an_answer_cannot_make_the_gold_outcomes_it_is_judged_with(cache):
    """The first scoring of a task runs the gold's tests and the judge in one request:
    the gold's outcomes are decided before the answer's values are read, so an answer
    that raises in every test leaves the gold's outcomes (the candidate, then the entry)
    as the gold's."""
    envs = [PythonEnv("mbpp-prompt", test_timeout=2.0) for _ in range(3)]
    try:
        assert submit(envs[0], FAILING) == 0.0
        assert submit(envs[1], FAILING) == 0.0
        (path,) = entries(cache)
        body = json.loads(path.read_text())
        assert body["confirmed"] is True
        assert all("error" in o and not o["error"] for o in body["payload"]["outcomes"])
        assert submit(envs[2], FAILING) == 0.0
        assert submit(envs[2], envs[2].dataset[0].gold) == 1.0
    finally:
        for env in envs:
            env.close()


def test_entries_of_other_code_or_settings_are_not_shared(cache):
    """The key names the sandbox's limits and the code that runs the tests: an entry made
    under other limits is another file."""
    from intercode.sandbox.limits import Limits

    envs = [PythonEnv("mbpp-prompt", test_timeout=2.0),
            PythonEnv("mbpp-prompt", test_timeout=2.0, limits=Limits(processes=200))]
    try:
        for env in envs:
            assert submit(env, env.dataset[0].gold) == 1.0
        paths = entries(cache)
        assert len(paths) == 2
        keys = [json.loads(Path(p).read_text())["key"] for p in paths]
        assert {k["limits"]["processes"] for k in keys} == {Limits().processes, 200}
        assert all(k["code"] == gold_cache.code_digest(
            ("intercode.envs.core.python", "intercode.envs.outcome_store",
             "intercode.envs.outcome_memo", "intercode.rewards.python")) for k in keys)
    finally:
        for env in envs:
            env.close()


def test_a_user_datasets_entries_are_its_own(cache):
    """A dataset's golds run one after the other in one gold's sandbox, where a hostile
    gold may change what a later gold's tests give: entries are keyed by the dataset's
    digest too, so that a copy of a task in another dataset never decides the original's
    score (here the copy's entry, confirmed, then rewritten sealed to say every test
    fails as FAILING's do)."""
    import dataclasses

    from intercode.datasets.tasks import Dataset

    original = PythonEnv("mbpp-prompt", test_timeout=2.0)
    copy = dataclasses.replace(original.dataset[0], dataset="copied")
    hostile = PythonEnv(Dataset("copied", "python", (copy,), "test"), test_timeout=2.0)
    try:
        for _ in range(2):
            assert submit(hostile, copy.gold) == 1.0
        (path,) = entries(cache)
        body = json.loads(path.read_text())
        assert body["confirmed"] is True
        store = hostile._store
        assert store is not None
        store._entries.write(body["key"], {"outcomes": [POISON] * 3}, True)
        again = PythonEnv(Dataset("copied", "python", (copy,), "test"), test_timeout=2.0)
        try:  # the control: the forged entry rules its own dataset
            assert submit(again, copy.gold) == 0.0
        finally:
            again.close()
        assert submit(original, original.dataset[0].gold) == 1.0
        assert submit(original, FAILING) == 0.0
    finally:
        hostile.close()
        original.close()


def _one_task(gold: str, test: str) -> PythonEnv:
    from intercode.datasets.mbpp import PythonTask
    from intercode.datasets.tasks import Dataset

    task = PythonTask(index=0, query="one", gold=gold, dataset="one-task", source="test",
                      source_index=0, tests=(test,), entry_point="one")
    return PythonEnv(Dataset("one-task", "python", (task,), "test"), test_timeout=0.5)


def _scored(env: PythonEnv, code: str) -> float:
    env.reset(options={"task": 0})
    env.step(code)
    return env.step("submit one")[1]


CHEAT = "def one():\n    raise TimeoutError('the test took more than 0.5 s')\n"


@pytest.mark.parametrize(("gold", "test"), [
    # the gold's definition ran out of its time (as under load): its function undefined
    ("import time\ntime.sleep(2)\ndef one():\n    return 1\n", "assert one() == 1"),
    ("def one():\n    return 1\n", "assert one() == 2"),  # it fails its own test
])
def test_a_gold_that_failed_a_test_is_never_kept(cache, gold, test):
    """A gold's test that failed may say something of the machine at that moment (a
    definition that ran out of its time left every test failing with a name error: a list
    two scorings could confirm, and every later run would have inherited); only lists in
    which every test passed are kept. A constant answer that raises the time-out's message
    earns nothing."""
    env = _one_task(gold, test)
    try:
        for _ in range(2):
            _scored(env, "def one():\n    return 1\n")
        assert _scored(env, CHEAT) == 0.0
        assert entries(cache) == []
    finally:
        env.close()
