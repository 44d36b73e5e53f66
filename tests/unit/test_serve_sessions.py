"""The session pool behind the servers: warm environments, caps, expiry, failures."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from intercode.datasets import load_dataset
from intercode.integrations.serve.sessions import (
    Busy,
    InfrastructureError,
    NoEpisode,
    ServeConfig,
    ServeError,
    SessionPool,
    UnknownSession,
)


@pytest.fixture()
def pool():
    p = SessionPool(ServeConfig(env="bash", dataset="bash-demo", max_sessions=3, warm=2,
                                idle_timeout=60))
    yield p
    p.shutdown()


def test_an_episode_with_the_gold_scores_one_and_a_wrong_answer_less(pool):
    gold = load_dataset("bash-demo")[2].gold
    s = pool.open()
    got = s.reset(task=2)
    assert got["task"] == 2 and got["query"] == load_dataset("bash-demo")[2].query
    out = s.execute(gold)
    assert out["done"] is False and out["exit_code"] == 0 and "reward" not in out
    assert s.evaluate()["reward"] == 1.0
    end = s.submit()
    assert end["reward"] == 1.0 and end["done"] and end["success"]
    with pytest.raises(NoEpisode, match="ended"):
        s.execute("ls")
    s.reset(task=2)
    s.execute("echo nothing useful")
    assert s.submit()["reward"] < 1.0


def test_an_action_before_reset_and_bad_values_are_clear(pool):
    s = pool.open()
    with pytest.raises(NoEpisode, match="call reset first"):
        s.execute("ls")
    with pytest.raises(ServeError, match="string"):
        s.execute(5)
    with pytest.raises(ServeError, match=r"outside|task"):
        s.reset(task=10_000)
    with pytest.raises(ServeError, match="at most"):
        s.execute("x" * ((1 << 20) + 1))


def test_sessions_reuse_warm_environments_and_start_clean(pool):
    a = pool.open()
    a.reset(task=0)
    a.execute("echo left-behind > /testbed/mark; (sleep 1000 &)")
    a.close()
    assert pool.idle_envs() == 1
    b = pool.open()
    b.reset(task=0)
    assert pool.created == 1  # the same environment, reset, not restarted
    out = b.execute("ls /testbed/mark; pgrep -c sleep")
    assert "No such file" in out["output"] and out["output"].strip().endswith("0")


def test_the_cap_is_a_clear_busy_and_a_closed_slot_frees_it(pool):
    sessions = [pool.open() for _ in range(3)]
    with pytest.raises(Busy, match="all 3 sessions"):
        pool.open()
    sessions[0].close()
    pool.open()
    with pytest.raises(UnknownSession):
        pool.get(sessions[0].id)
    with pytest.raises(UnknownSession):
        sessions[0].reset()


def test_idle_sessions_expire(pool):
    short = SessionPool(ServeConfig(env="bash", dataset="bash-demo", idle_timeout=0.2))
    try:
        s = short.open()
        s.reset(task=0)
        time.sleep(0.3)
        assert short.reap() == 1 and short.live() == 0
        with pytest.raises(UnknownSession):
            s.execute("ls")
    finally:
        short.shutdown()


def test_a_crashed_sandbox_fails_only_its_session(pool):
    a, b = pool.open(), pool.open()
    a.reset(task=0)
    b.reset(task=0)
    box = a.env._sandbox("agent")
    os.kill(box._proc.pid, signal.SIGKILL)
    box._proc.wait(timeout=10)
    # the sandbox's processes die with bwrap (--die-with-parent), a moment later under load
    deadline = time.monotonic() + 20
    while True:
        try:
            a.execute("ls")
        except InfrastructureError:
            break
        assert time.monotonic() < deadline, "the dead sandbox was never noticed"
        time.sleep(0.1)
    assert b.execute("echo still here")["output"].strip() == "still here"
    a.reset(task=0)  # a fresh environment
    assert a.execute("echo back")["output"].strip() == "back"


def test_calls_of_one_session_are_serialised(pool):
    s = pool.open()
    s.reset(task=0)
    outs = []
    threads = [threading.Thread(target=lambda i=i: outs.append(s.execute(f"echo {i}")))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o["output"].strip() for o in outs) == [str(i) for i in range(8)]
