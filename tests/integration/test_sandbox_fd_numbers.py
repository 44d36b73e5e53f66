"""A sandbox works whatever numbers its pipes get in the host process.

The supervisor hands the shell its pipes by moving them onto fixed descriptors (60, 62,
63; the Python shells also 61): a pipe that already had one of those numbers was
overwritten by another before it was moved, so every action of that sandbox timed out.
A process holding many sandboxes (a server) reaches those numbers by itself; here they
are forced, in a fresh process (the test process may already use those numbers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from backends import backends, need

FIXED = (60, 61, 62, 63)


def scenario(shell: str, order: tuple[int, int, int]) -> dict[str, object]:
    """Start a sandbox whose pipes land on ``order`` and run one action (in a fresh
    process: the numbers must be free)."""
    from intercode.sandbox import create_sandbox
    from intercode.sandbox.filetree import FileTree
    from intercode.sandbox.limits import Limits

    for fd in FIXED:
        try:
            os.fstat(fd)
        except OSError:
            continue
        raise RuntimeError(f"descriptor {fd} is in use in the fresh process")
    real = os.pipe2
    calls: list[int] = []
    # the pipes in _spawn's order: ctl_in, ctl_out, action, output, status (the
    # configuration is a memory file); the sandbox's ends of the last three (action's
    # read end, the others' write ends) are put on the numbers of `order`
    wanted = {2: (0, order[0]), 3: (1, order[1]), 4: (1, order[2])}

    def pipe2(flags: int) -> tuple[int, int]:
        ends = list(real(flags))
        number = len(calls)
        calls.append(number)
        if number in wanted:
            end, target = wanted[number]
            os.dup2(ends[end], target, inheritable=False)
            os.close(ends[end])
            ends[end] = target
        return ends[0], ends[1]

    os.pipe2 = pipe2  # type: ignore[assignment]
    box = create_sandbox("bwrap", Limits(timeout=3), shell=shell)
    try:
        box.start()
        os.pipe2 = real
        box.load(FileTree.of([]))
        result = box.run("echo hi" if shell == "bash" else "print('hi')")
        return {"pipes": len(calls), "timed_out": result.timed_out, "output": result.output}
    finally:
        os.pipe2 = real
        box.close()


@pytest.mark.parametrize("shell", ["bash", "python"])
@pytest.mark.parametrize("order", [(62, 63, 60), (63, 60, 62), (61, 62, 63)])
def test_pipes_on_the_shells_fixed_descriptors(shell, order):
    here = Path(__file__).resolve().parent
    code = ("import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/..']; "
            "import test_sandbox_fd_numbers as t; "
            "print(json.dumps(t.scenario(sys.argv[2], tuple(json.loads(sys.argv[3])))))")
    proc = subprocess.run([sys.executable, "-c", code, str(here), shell, json.dumps(order)],
                          capture_output=True, text=True, timeout=120, close_fds=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["pipes"] >= 5
    assert not got["timed_out"] and got["output"].strip() == "hi", got


HIGH = 1100  # past select()'s 1024 and the sandbox's RLIMIT_NOFILE (1024)


def high_scenario(backend: str, shell: str) -> dict[str, object]:
    """Start a sandbox once this process's free descriptors are all over :data:`HIGH` (as
    in a process holding some 170 sandboxes) and run two actions (a fresh process)."""
    import resource

    from intercode.sandbox import create_sandbox
    from intercode.sandbox.filetree import FileTree
    from intercode.sandbox.limits import Limits

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * HIGH), hard))
    null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    while os.dup(null) < HIGH:  # held until the process ends
        pass
    box = create_sandbox(backend, Limits(timeout=10), shell=shell)
    try:
        box.start()
        box.load(FileTree.of([]))
        first = box.run("echo hi" if shell == "bash" else "print('hi')")
        second = box.run("echo again" if shell == "bash" else "print('again')")
        return {"channel_fd": box._channel.read_fd,  # type: ignore[attr-defined]
                "outputs": [first.output, second.output],
                "timed_out": first.timed_out or second.timed_out}
    finally:
        box.close()


@pytest.mark.parametrize("shell", ["bash", "python"])
@pytest.mark.parametrize("backend", backends())
def test_a_host_process_with_descriptors_over_1023(backend, shell):
    """A server holding a hundred and more sandboxes has descriptors numbered over 1023:
    select() could not wait on their channels (ValueError), and the sandbox's supervisor,
    given the host's numbers, could not hand them to the shell under its RLIMIT_NOFILE of
    1024 (posix_spawn: EBADF): the 138th MCP session's reset failed."""
    import resource

    need(backend)
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 2 * HIGH:
        pytest.skip(f"this machine allows fewer than {2 * HIGH} descriptors per process")
    here = Path(__file__).resolve().parent
    code = ("import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/..']; "
            "import test_sandbox_fd_numbers as t; "
            "print(json.dumps(t.high_scenario(sys.argv[2], sys.argv[3])))")
    proc = subprocess.run([sys.executable, "-c", code, str(here), backend, shell],
                          capture_output=True, text=True, timeout=180, close_fds=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["channel_fd"] > HIGH  # what this test is about happened
    assert not got["timed_out"], got
    assert [out.strip() for out in got["outputs"]] == ["hi", "again"], got
