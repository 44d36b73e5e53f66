"""Upstream-quirks mode runs each action as a fresh ``bash -c``: its output is bounded too.

``head -c 1500000000 /dev/zero`` in ``--upstream-quirks`` mode had no
output cap and peaked the host at 4.3 GB.
"""

from __future__ import annotations

import resource

import pytest

from intercode.datasets import load_dataset
from intercode.envs.bash import BashEnv
from intercode.sandbox.limits import Limits, MiB


@pytest.fixture(scope="module")
def env():
    e = BashEnv(load_dataset("bash-demo"), upstream_quirks=True,
                limits=Limits(timeout=3.0, output=1 * MiB, output_hard=16 * MiB))
    e.reset(options={"task": 0})
    yield e
    e.close()


def test_an_output_flood_is_bounded_and_stopped(env):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    obs, _reward, _term, _trunc, info = env.step("head -c 1500000000 /dev/zero")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(obs) < 2 * MiB
    assert "output truncated" in obs and "stopped after more than" in obs
    assert info["output_truncated"]
    assert grown_mib < 200
    obs, *_ = env.step("echo still here")
    assert obs.strip() == "still here"


def test_a_big_output_under_the_hard_limit_is_cut_with_its_size(env):
    obs, *_ = env.step("head -c 3000000 /dev/zero | tr '\\0' a")
    assert "showing the first 1048576 of 3000000 bytes" in obs
    assert obs.startswith("a" * 1000)


def test_a_flood_with_a_background_writer_ends_at_the_time_limit(env):
    obs, _r, _t, _tr, info = env.step("(yes > /dev/null &) ; sleep 30")
    assert info["timed_out"]
    obs, *_ = env.step("echo next")
    assert obs.strip() == "next"
