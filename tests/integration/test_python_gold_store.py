"""The Python gold's test outcomes kept on disk: the same rewards with and without them;
an entry is used only once a second scoring confirmed it, and then no gold's tests run
(the judge runs in the gold's interpreter, without a fork); scorings that differ mark it
unstable for good; the opt-outs store nothing; no sandbox sees the store."""

from __future__ import annotations

import json

import pytest
from gold_helpers import entries

from intercode.envs.python import PythonEnv

TASKS = range(4)
WRONG = "def wrong(*args, **kwargs):\n    return None\n"


@pytest.fixture()
def cache(gold_cache_dir):
    return gold_cache_dir


def episode(env: PythonEnv, task: int, code: str | None = None,
            name: str | None = None) -> tuple[float, dict, list[bool]]:
    """Reset to ``task``, run ``code`` (the gold's by default), submit ``name``: the
    reward, the info, and for each request to the gold's sandbox whether it ran the gold's
    own tests."""
    runs: list[bool] = []
    run = env._run

    def spying(which, request, kind, parts):
        if which == "gold":
            runs.append("gold" in request or kind == "eval")
        return run(which, request, kind, parts)

    env._run = spying
    try:
        env.reset(options={"task": task})
        env.step(env.task.gold if code is None else code)
        _, reward, _, _, info = env.step(f"submit {name or env.task.entry_point}")
    finally:
        env._run = run
    return reward, info, runs


def scores(env: PythonEnv) -> tuple[dict, list[bool]]:
    out, gold_runs = {}, []
    for task in TASKS:
        for code, name in ((None, None), (WRONG, "wrong")):
            reward, info, runs = episode(env, task, code, name)
            out[task, name] = (reward, json.dumps(info, sort_keys=True))
            gold_runs += runs
    return out, gold_runs


def test_rewards_are_the_same_with_and_without_the_store(cache):
    envs = [PythonEnv("mbpp-prompt", test_timeout=2.0, gold_cache=False)] + [
        PythonEnv("mbpp-prompt", test_timeout=2.0) for _ in range(2)]
    try:
        expected, _ = scores(envs[0])
        assert {reward for reward, _ in expected.values()} == {0.0, 1.0}
        # two scorings of each task's gold in the first run: its second confirms the entry
        filling, stored = (scores(env) for env in envs[1:])
        assert filling[0] == stored[0] == expected
        assert len(entries(cache)) == len(TASKS)
        assert all(json.loads(path.read_text())["confirmed"] for path in entries(cache))
        assert any(filling[1])
        assert stored[1] and not any(stored[1])  # judged, and no gold's tests ran
    finally:
        for env in envs:
            env.close()


def test_an_entry_is_used_only_once_a_second_scoring_confirms_it(cache):
    first, second, third = (PythonEnv("mbpp-prompt", test_timeout=2.0) for _ in range(3))
    try:
        assert episode(first, 0)[2] == [True]
        (path,) = entries(cache)
        assert json.loads(path.read_text())["confirmed"] is False  # a candidate
        assert episode(second, 0)[2] == [True]  # not used: the gold's tests ran again
        body = json.loads(path.read_text())
        assert body["confirmed"] is True and body["payload"]["outcomes"]
        reward, info, runs = episode(third, 0)
        assert (reward, runs) == (1.0, [False])  # used: the judge alone
        assert info["tests_correct"] == info["tests_total"] == 3
    finally:
        for env in (first, second, third):
            env.close()


def test_scorings_that_differ_mark_the_entry_unstable_for_good(cache):
    env = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        episode(env, 0)
        (path,) = entries(cache)
        body = json.loads(path.read_text())
        # another run of the gold that gave something else (a sealed, honest candidate)
        body["payload"]["outcomes"][0] = {"output": "by chance", "error": ""}
        store = env._store
        assert store is not None
        store._entries.write(body["key"], body["payload"], confirmed=False)
        for _ in range(2):
            again = PythonEnv("mbpp-prompt", test_timeout=2.0)
            try:  # the memo learns the mark: the gold's tests run at every episode
                for _ in range(3):
                    reward, _, runs = episode(again, 0)
                    assert (reward, runs) == (1.0, [True])
            finally:
                again.close()
            stored = json.loads(path.read_text())
            assert stored["confirmed"] is True and stored["payload"]["outcomes"] is None
    finally:
        env.close()


@pytest.mark.parametrize(("variable", "kwargs"), [(None, {"gold_cache": False}), ("0", {})])
def test_the_opt_outs_store_nothing(cache, monkeypatch, variable, kwargs):
    if variable is not None:
        monkeypatch.setenv("INTERCODE_GOLD_CACHE", variable)
    env = PythonEnv("mbpp-prompt", test_timeout=2.0, **kwargs)
    try:
        rewards = [episode(env, 1)[0] for _ in range(3)]
        assert rewards == [1.0] * 3 and entries(cache) == []
    finally:
        env.close()


def test_no_sandbox_sees_the_store(cache):
    env = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        episode(env, 0)
        assert entries(cache)
        env.reset(options={"task": 0})
        for path in (cache, cache.parent):
            out, _, _, _, _ = env.step(f"import os; print(os.path.exists({str(path)!r}))")
            assert out.strip() == "False"
    finally:
        env.close()


@pytest.mark.parametrize("flag", [[], ["--no-gold-cache"]])
def test_the_command_line_stores_unless_told_not_to(cache, tmp_path, flag):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "intercode", "eval", "python", "--dataset",
                          "mbpp-prompt", "--agent", "gold", "--tasks", "0,1", "--no-progress",
                          "--output", str(tmp_path / "run"), *flag],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(entries(cache)) == (0 if flag else 2)


def test_the_store_is_private_and_works_without_locks(cache, monkeypatch):
    """Its folders are the user's alone (mode 0700, whatever the umask), and a file system
    without locks (``flock`` fails, as on NFS without them) still stores."""
    import errno
    import fcntl
    import os

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "no locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    old = os.umask(0o022)
    env = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        for _ in range(2):
            assert episode(env, 0)[0] == 1.0
    finally:
        os.umask(old)
        env.close()
    (path,) = entries(cache)
    assert json.loads(path.read_text())["confirmed"] is True
    for folder in (cache, path.parent):
        assert folder.stat().st_mode & 0o777 == 0o700
