"""What runs in a worker process: one environment, one policy, many episodes."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from intercode.agents.names import AGENTS, STRATEGIES
from intercode.agents.options import StrategyOptions
from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError, IntercodeError, SandboxError
from intercode.llm.config import ModelConfig
from intercode.runner.pinning import pin

if TYPE_CHECKING:  # the run's main process imports this module: no Gymnasium there
    from intercode.agents.base import Policy
    from intercode.envs.core.base import EnvCore

__all__ = ["WorkerSpec", "make_env", "make_policy", "worker_main"]


@dataclass(frozen=True)
class WorkerSpec:
    """How to build a worker's environment and policy (picklable)."""

    env: str
    dataset: str
    agent: str
    settings: EnvSettings = field(default_factory=EnvSettings)
    trajectories: str | None = None
    max_turns: int | None = None
    known_issues: dict[int, str] = field(default_factory=dict)
    model: ModelConfig | None = None
    strategy: StrategyOptions = field(default_factory=StrategyOptions)


PR_SET_PDEATHSIG = 1


def make_env(spec: WorkerSpec) -> EnvCore:
    """The environment a spec describes (not wrapped; without Gymnasium where the
    benchmark has such a class, see :mod:`intercode.envs.core`)."""
    from intercode.envs.factory import make_core_env

    return make_core_env(spec.env, spec.dataset, spec.settings)


def make_policy(spec: WorkerSpec) -> Policy:
    """The policy a spec describes."""
    if spec.agent == "gold":
        from intercode.agents.gold import GoldPolicy

        return GoldPolicy(spec.env)
    if spec.agent == "noop":
        from intercode.agents.gold import NoopPolicy

        return NoopPolicy(spec.env)
    if spec.agent == "replay":
        from intercode.agents.replay import ReplayPolicy, load_trajectories

        if not spec.trajectories:
            raise ConfigError("--agent replay needs --trajectories FILE")
        return ReplayPolicy(load_trajectories(spec.trajectories))
    if spec.agent in STRATEGIES:
        from intercode.agents.llm import POLICIES
        from intercode.llm.client import ChatClient

        if spec.model is None:
            raise ConfigError(f"--agent {spec.agent} needs a model (--model)")
        return POLICIES[spec.agent](spec.env, ChatClient(spec.model), spec.strategy)
    if spec.agent == "human":
        from intercode.agents.human import HumanPolicy

        return HumanPolicy(spec.env)
    raise ConfigError(f"unknown agent {spec.agent!r} (known: {', '.join(AGENTS)})")


class _Stop(BaseException):
    """The run is gone (parent died) or asked this worker to stop (SIGTERM)."""


def _on_stop(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Stop


def _watch_parent(parent: int) -> None:
    """Turn the parent's death into SIGTERM here (``PR_SET_PDEATHSIG``), and SIGTERM into
    a clean stop: the worker closes its sandboxes at once instead of finishing its
    episode for nobody."""
    signal.signal(signal.SIGTERM, _on_stop)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the closed pipe still stops us
        pass
    if os.getppid() != parent:  # the parent died before the line above
        raise _Stop


def _leave_fork_server() -> None:
    """Let go of the fork server's "alive" pipe, which each process it forks holds: with
    it, the server outlived a killed run as long as a worker did, and a worker stopped
    only when the server did (``PR_SET_PDEATHSIG``): never."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        try:
            os.close(fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None  # type: ignore[union-attr]


def worker_main(spec: WorkerSpec, conn: Connection, worker_id: int,
                parent: int | None = None, environ: Mapping[str, str] | None = None,
                umask: int | None = None, cpus: Sequence[int] = ()) -> None:
    """Serve task indices from ``conn`` until ``None``; send back records.

    Messages sent: ``{"record": ...}`` per episode, or ``{"fatal": text}`` when the
    environment cannot be built at all (the run stops). When the parent process dies
    (``parent`` is its pid; ``None``: whichever process started this one), the worker
    closes its sandboxes and exits quietly. ``environ`` and ``umask``: the run's (a worker
    forked from a fork server has the server's). ``cpus``: the CPUs it and its
    sandboxes run on (its one CPU, or the run's: see :mod:`intercode.runner.pinning`).
    """
    pin(cpus)  # first: before this process starts a thread or a sandbox, which inherit it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is None:
        parent = os.getppid()  # the fork server, still there while we hold its pipe
        _leave_fork_server()
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    if umask is not None:
        os.umask(umask)
    try:
        _serve(spec, conn, worker_id, parent)
    except (_Stop, EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the run is gone or stopped us: nobody to report to, leave quietly


def _serve(spec: WorkerSpec, conn: Connection, worker_id: int, parent: int) -> None:
    from intercode.runner.episode import run_task

    env: EnvCore | None = None
    try:
        _watch_parent(parent)
        _one_math_thread(spec)
        policy = make_policy(spec)
        env = make_env(spec)
        env.warm_up()
        while True:
            index = conn.recv()
            if index is None:
                return
            record, env = run_task(env, lambda: make_env(spec), index, policy,
                                   spec.max_turns, worker_id, spec.known_issues.get(index))
            conn.send({"record": record.to_json()})
    except (IntercodeError, OSError) as exc:
        if isinstance(exc, BrokenPipeError | ConnectionResetError):
            raise
        _send_fatal(conn, exc)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if env is not None:
            _close_quietly(env)


def _one_math_thread(spec: WorkerSpec) -> None:
    """For a plugin's environment (a ``gymnasium.Env``, no core): numpy imported with its
    math library on one thread, as a fork server started for that benchmark does; one
    started for a built-in benchmark (by an earlier run of this process) imported none."""
    from intercode.benchmarks import get

    if "numpy" not in sys.modules and get(spec.env).core is None:
        import_module("intercode.runner.onethread")


def _send_fatal(conn: Connection, exc: Exception) -> None:
    fatal = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SandboxError):
        fatal += " (see `intercode doctor`)"
    try:
        conn.send({"fatal": fatal})
    except OSError:
        pass  # the run is gone


def _close_quietly(env: EnvCore) -> None:
    try:
        env.close()
    except Exception:  # leaving anyway; the sandboxes die with us
        pass
