"""Resource limits the agent lowers do not outlive its episode (both backends).

Every process of a sandbox runs as one user, and the kernel lets a process change the
limits of any other of the same user: ``prlimit --pid 1 --nproc=2:2`` in one episode
lowered the supervisor's limits, which every later shell, interpreter and engine
inherits, so the next episode's exact gold printed ``fork: retry: Resource temporarily
unavailable`` and scored 0.67, and ``--nofile=64:64`` made the next reset fail (``Bad
file descriptor``), an infrastructure error charged to an innocent task. The seccomp
filter refuses a new limit for another process; the supervisor sets its own limits
again at every request and gives them to every process it starts.

Each test lowers one limit (every one ``prlimit`` can set) on every other process of
the sandbox, pid 1 included, and on the agent's own shell or interpreter, resets, and
checks that the next episode sees the limits of a fresh sandbox and that its gold
scores as there.
"""

from __future__ import annotations

import os
import resource
from typing import Any

import pytest
from backends import backends, chosen_backend, need, shell_env, shell_env_id, shell_envs

from intercode.benchmarks import get
from intercode.errors import SandboxSpentError
from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import FileTree

# prlimit's option, the resource, bash's ulimit flag, a low value for prlimit and setrlimit
# (bytes, seconds, counts), the same for ulimit (KiB where ulimit counts KiB)
LIMITS = [
    ("cpu", "CPU", "t", 1, 1),
    ("fsize", "FSIZE", "f", 0, 0),
    ("data", "DATA", "d", 4 << 20, 4096),
    ("stack", "STACK", "s", 64 << 10, 64),
    ("core", "CORE", "c", 0, 0),
    ("rss", "RSS", "m", 1 << 20, 1024),
    ("nproc", "NPROC", "u", 2, 2),
    ("nofile", "NOFILE", "n", 8, 8),
    ("memlock", "MEMLOCK", "l", 0, 0),
    ("as", "AS", "v", 16 << 20, 16384),
    ("locks", "LOCKS", "x", 0, 0),
    ("sigpending", "SIGPENDING", "i", 0, 0),
    ("msgqueue", "MSGQUEUE", "q", 0, 0),
    ("nice", "NICE", "e", 0, 0),
    ("rtprio", "RTPRIO", "r", 0, 0),
    ("rttime", "RTTIME", "R", 1, 1),
]
IDS = [row[0] for row in LIMITS]
RES = {row[1]: number for number, row in enumerate(LIMITS)}  # Linux's numbers (no RLIMIT_LOCKS
# in Python's module)
TASK = 0
# every backend; under --sandbox-backend (scripts/test's second pass) the one it names
BACKENDS = ["bwrap"] if chosen_backend() else backends()

BASH_LIMITS = "cat /proc/1/limits /proc/$$/limits"
PY_LIMITS = "print(open('/proc/1/limits').read() + open('/proc/self/limits').read())"
# every other process of the sandbox (pid 1, and the zygote and the spare in Python)
BASH_LOWER_OTHERS = ("prlimit --pid 1 --{opt}={v}:{v}; for p in $(ls /proc | grep -E '^[0-9]+$');"
                     " do [ $p = $$ ] || {{ prlimit --pid $p --{opt}={v}:{v} 2>/dev/null &&"
                     " echo changed $p; }}; done; true")
PY_LOWER_OTHERS = """import os, resource
changed = []
for n in os.listdir('/proc'):
    if n.isdigit() and int(n) != os.getpid():
        try:
            resource.prlimit(int(n), {res}, ({v}, {v}))
            changed.append(int(n))
        except OSError as exc:
            if int(n) == 1:
                print(exc.strerror)
print('changed', sorted(changed))
"""
PY_LOWER_SELF = "import resource\nresource.setrlimit({res}, ({v}, {v}))"


class Episode:
    """One environment of a backend, and what a fresh one shows: its limits and its
    gold's reward."""

    def __init__(self, env: Any, shell: str) -> None:
        self.env = env
        self.shell = shell
        self.read_limits = BASH_LIMITS if shell == "bash" else PY_LIMITS
        env.reset(options={"task": TASK})
        self.limits = env.step(self.read_limits)[0]
        self.reward = self.gold()
        assert self.reward == 1.0

    def gold(self) -> float:
        """Reset, run the gold as the agent, submit: the reward."""
        env = self.env
        env.reset(options={"task": TASK})
        env.step(get(self.shell).gold_action(env.task))
        return float(env.step("submit")[1])


@pytest.fixture(scope="module", params=shell_envs(), ids=shell_env_id)
def episode(request):
    with shell_env(request.param) as env:
        yield Episode(env, request.param[1])


@pytest.mark.parametrize(("opt", "name", "flag", "value", "kib"), LIMITS, ids=IDS)
def test_limits_lowered_in_an_episode_do_not_reach_the_next(episode, opt, name, flag, value,
                                                            kib):
    env = episode.env
    env.reset(options={"task": TASK})
    if episode.shell == "bash":
        lowered = env.step(BASH_LOWER_OTHERS.format(opt=opt, v=value))[0]
        assert "Operation not permitted" in lowered and "changed" not in lowered, lowered
        env.step(f"ulimit -{flag} {kib}; echo lowered $?")  # the shell itself
    else:
        lowered = env.step(PY_LOWER_OTHERS.format(res=RES[name], v=value))[0]
        assert lowered.endswith("Operation not permitted\nchanged []\n"), lowered
        env.step(PY_LOWER_SELF.format(res=RES[name], v=value))  # the interpreter itself
    env.reset(options={"task": TASK})
    assert env.step(episode.read_limits)[0] == episode.limits
    assert episode.gold() == episode.reward


# -- the supervisor's own defence, behind the filter: the host lowers pid 1's limits ------


def supervisor_pid(box: Any) -> int:
    """The host's pid of the sandbox's pid 1."""
    container = getattr(box, "_container", None)
    if container is not None:
        from intercode.sandbox.docker.engine import DockerEngine

        status, info = DockerEngine().call("GET", f"/containers/{container}/json")
        assert status == 200
        return int(info["State"]["Pid"])
    todo = [box._proc.pid]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
        if status.get("NSpid", "").split()[-1:] == ["1"] and len(status["NSpid"].split()) > 1:
            return pid
    raise AssertionError("no pid 1 found below bubblewrap")


@pytest.fixture(params=BACKENDS)
def box(request):
    need(request.param)
    sb = create_sandbox(request.param)
    sb.start()
    sb.load(FileTree.of([]))
    yield sb
    sb.close()


# lower than a fresh sandbox's, and still enough for pid 1 to serve until the next request
# (with the filter bypassed, a stack or a descriptor table below what pid 1 uses ended it
# at once)
SURVIVABLE = {RES["CPU"]: 100_000, RES["FSIZE"]: 1 << 20, RES["DATA"]: 3 << 30,
              RES["STACK"]: 4 << 20, RES["RSS"]: 1 << 30, RES["NPROC"]: 200, RES["NOFILE"]: 200,
              RES["MEMLOCK"]: 0, RES["AS"]: 3 << 30, RES["LOCKS"]: 0, RES["SIGPENDING"]: 0,
              RES["MSGQUEUE"]: 0, RES["NICE"]: 0, RES["RTPRIO"]: 0, RES["RTTIME"]: 1}


def lower(pid: int, limits: list[tuple[int, int]], hard: bool) -> None:
    """Lower the limits (``[(resource, value)]``) of ``pid``, the soft ones or both, from a
    child of this process running as ``pid``'s user (the host has no ``CAP_SYS_RESOURCE``
    to do so as another)."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    uid, gid = int(status["Uid"].split()[0]), int(status["Gid"].split()[0])
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            for res, value in limits:
                soft, top = resource.prlimit(pid, res)
                if soft == resource.RLIM_INFINITY or soft > value:
                    resource.prlimit(pid, res, (value, value if hard else top))
            code = 0
        finally:
            os._exit(code)
    assert os.waitpid(child, 0)[1] == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the host needs root to act as pid 1's user")
def test_the_supervisor_sets_its_soft_limits_again_at_a_reset(box):
    fresh = box.run(BASH_LIMITS).output
    lower(supervisor_pid(box), list(SURVIVABLE.items()), hard=False)
    box.reset()
    assert box.run(BASH_LIMITS).output == fresh


@pytest.mark.skipif(os.geteuid() != 0, reason="the host needs root to act as pid 1's user")
def test_a_supervisor_with_a_lowered_hard_limit_is_spent_at_the_reset(box):
    pid = supervisor_pid(box)
    lower(pid, [(RES["NOFILE"], 512)], hard=True)
    with pytest.raises(SandboxSpentError, match="resource limits were lowered"):
        box.reset()
