"""Served sessions share warm environments: nothing one client leaves may reach the next.

A session's environment goes back to the pool and is handed to another client (possibly
another user of the server). What the first agent left behind (files in the tree, /tmp,
/dev/shm, a background writer, a process waiting to act later) must be gone before the
second one acts, and must not change its score.
"""

from __future__ import annotations

from intercode.datasets import load_dataset
from intercode.integrations.serve.sessions import ServeConfig, SessionPool


def test_nothing_one_session_leaves_reaches_the_next():
    pool = SessionPool(ServeConfig(env="bash", dataset="bash-demo", max_sessions=1, warm=1))
    try:
        first = pool.open()
        first.reset(task=2)
        first.execute("echo a > /testbed/left; echo b > /tmp/left; echo c > /dev/shm/left; "
                      "(while true; do echo x >> /tmp/writer; sleep 0.05; done) & "
                      "(sleep 2; echo late > /testbed/late) &")
        first.close()
        second = pool.open()
        second.reset(task=2)
        assert pool.created == 1  # the same environment, handed on
        out = second.execute("ls /testbed/left /tmp/left /dev/shm/left /tmp/writer 2>&1; "
                             "pgrep -c -f 'sleep' || true")["output"]
        assert out.count("No such file") == 4, out
        assert out.strip().endswith("0"), out
        # the gold still scores 1.0: nothing of the first session changes the second's score
        second.execute("sleep 2.5")  # past the moment the planted job would have written
        second.execute(load_dataset("bash-demo")[2].gold)  # the last output is scored too
        assert second.submit()["reward"] == 1.0
    finally:
        pool.shutdown()
