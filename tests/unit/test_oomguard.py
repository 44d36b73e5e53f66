"""The agent's memory cgroup on docker (``inbox/oomguard.py``), its file logic on a fake
cgroup tree; the real one is tested in tests/adversarial/test_docker_redteam.py."""

from __future__ import annotations

import logging
import os

import pytest

from intercode.sandbox.inbox import oomguard


@pytest.fixture()
def guard(monkeypatch, tmp_path):
    monkeypatch.setattr(oomguard, "ROOT", str(tmp_path))
    monkeypatch.setattr(oomguard, "_procs", None)
    yield tmp_path
    if oomguard._procs is not None:
        os.close(oomguard._procs)
        oomguard._procs = None


def _mounts():
    calls: list[tuple] = []
    return calls, lambda *args: calls.append(args)


def test_no_cgroup_leaves_the_sandbox_unguarded_with_a_reason(guard):
    calls, mount = _mounts()
    why = oomguard.protect(1 << 30, mount)
    assert why == f"no memory cgroup at {guard}" and calls == []
    assert not oomguard.active() and oomguard.shell_prefix() == ""
    assert oomguard.spawn_actions() == []
    oomguard.join()  # a no-op


def test_cgroup_v1_gets_an_agent_group_with_the_limit(guard):
    memory = guard / "memory"
    memory.mkdir()
    (memory / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    agent = memory / "agent"
    agent.mkdir()  # the kernel makes a new group's files; here the test does
    for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "cgroup.procs"):
        (agent / name).write_text("")
    calls, mount = _mounts()
    assert oomguard.protect(123 << 20, mount) is None
    assert [c[1] for c in calls] == [str(memory)]  # remounted read-write
    assert (agent / "memory.limit_in_bytes").read_text() == str(123 << 20)
    assert (agent / "memory.memsw.limit_in_bytes").read_text() == str(123 << 20)
    assert oomguard.active() and oomguard._procs >= oomguard.FIRST_FD
    assert not os.get_inheritable(oomguard._procs)
    assert oomguard.shell_prefix().startswith("{ printf 0 >&9; }")
    assert oomguard.spawn_actions() == [(os.POSIX_SPAWN_DUP2, oomguard._procs, 9)]
    oomguard.join()  # as a forked child does: moves itself, closes the descriptor
    assert (agent / "cgroup.procs").read_text() == "0" and not oomguard.active()


def test_cgroup_v2_without_the_memory_controller_says_so(guard):
    (guard / "cgroup.controllers").write_text("cpu pids\n")
    _calls, mount = _mounts()
    why = oomguard.protect(1 << 30, mount)
    assert why is not None and "memory controller is not delegated" in why
    assert not oomguard.active()


def test_cgroup_v2_moves_pid_1_aside_and_limits_the_agent(guard):
    """The file logic of the v2 path (no v2 engine here: the kernel's side is untested)."""
    (guard / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (guard / "cgroup.subtree_control").write_text("")
    for group, names in (("supervisor", ["cgroup.procs"]),
                         ("agent", ["cgroup.procs", "memory.max", "memory.swap.max"])):
        (guard / group).mkdir()
        for name in names:
            (guard / group / name).write_text("")
    calls, mount = _mounts()
    assert oomguard.protect(77 << 20, mount) is None
    assert [c[1] for c in calls] == [str(guard)]
    assert (guard / "supervisor" / "cgroup.procs").read_text() == "0"
    assert (guard / "cgroup.subtree_control").read_text() == "+memory"
    assert (guard / "agent" / "memory.max").read_text() == str(77 << 20)
    assert (guard / "agent" / "memory.swap.max").read_text() == "0"
    assert oomguard.active()


def test_an_unguarded_docker_sandbox_warns_once_per_reason(caplog, monkeypatch):
    from intercode.sandbox.docker import sandbox as docker

    docker._unguarded_warned.discard("no memory cgroup at /x")
    # a library configured earlier in this process (logging.config, disabling the loggers
    # that existed then) must not hide the warning from this test
    monkeypatch.setattr(docker.log, "disabled", False)
    with caplog.at_level(logging.WARNING, logger=docker.log.name):
        for _ in range(3):
            docker.DockerSandbox._ready_notes(None, {"unguarded": "no memory cgroup at /x"})
        docker.DockerSandbox._ready_notes(None, {})
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "no memory cgroup at /x" in warned[0], warned
