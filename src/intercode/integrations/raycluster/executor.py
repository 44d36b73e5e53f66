"""Episodes on a Ray cluster: actors with warm environments, the records written here.

Each actor reserves ``cpus`` CPUs and holds one warm environment and one policy (like a
local worker process); actors are spread over the cluster's nodes. A task goes to the
next actor that is free; while there are more tasks than actors, each actor also holds
its next task, so that it starts at once when the current one ends. Only the driver
(this process) calls ``on_record``, so the run's ``results.jsonl``, ``--resume``,
progress and summary are the local runner's.

A task whose actor or node dies is run again on another actor, at most ``retries``
times, then recorded as an ``error``; a task is recorded once. A fatal error (a
refused API key, a node that cannot build the environment) stops the whole run.

:class:`RayExecutorFactory` is what a run is handed to run on Ray
(``RunConfig(executor=RayExecutorFactory(...))``; ``intercode eval --executor ray``).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from intercode.errors import ConfigError, RunAborted
from intercode.integrations.raycluster import cluster
from intercode.integrations.raycluster.cluster import connect, require_ray
from intercode.runner.executors import ExecutorFactory, OnRecord, OnRoot, error_record
from intercode.runner.worker import WorkerSpec

if TYPE_CHECKING:
    from intercode.envs.settings import EnvSettings

__all__ = ["RayExecutor", "RayExecutorFactory"]

log = logging.getLogger(__name__)

# the variables an actor needs from the driver's environment (the model's key is added)
# (--rootfs and --image set the last two)
PASSED_ENV = ("OPENAI_BASE_URL", "INTERCODE_ROOTFS", "INTERCODE_DOCKER_IMAGE")
PIPELINE = 2  # tasks sent ahead to an actor (its next one waits there, not here)


@dataclass
class _Actor:
    wid: int
    handle: Any
    started: Any = None  # the ref of its start() until it answers
    tasks: list[int] = field(default_factory=list)  # sent, in order (the first runs)
    refs: list[Any] = field(default_factory=list)  # their results
    node: str = ""
    pid: int = 0


@dataclass
class _State:
    queue: deque[int]
    running: dict[Any, _Actor] = field(default_factory=dict)  # ref -> actor
    starting: dict[Any, _Actor] = field(default_factory=dict)
    live: list[_Actor] = field(default_factory=list)  # started, not lost
    attempts: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    start_failures: int = 0


class RayExecutor:
    """``workers`` Ray actors, each with its own warm environment (see the module doc).

    ``address``: ``auto``, ``local``, ``ray://HOST:PORT``, ``HOST:PORT`` or None (Ray's
    choice). ``actor_options`` are passed to Ray's ``.options()`` (e.g. ``resources``).
    ``placement_timeout``: seconds to wait for a first actor when none is running.
    ``on_root`` is told the root file system of the first actor that starts (what its node
    mounts: ``config.json`` records it); an actor on another root stops the run, since
    episodes on two roots are not one run.
    """

    def __init__(self, spec: WorkerSpec, workers: int, address: str | None = None, *,
                 retries: int = 2, cpus: float = 1.0, placement_timeout: float = 600.0,
                 actor_options: dict[str, Any] | None = None,
                 on_root: Callable[[dict[str, Any] | None], None] | None = None) -> None:
        self.spec = spec
        self.workers = max(1, workers)
        self.address = address
        self.retries = retries
        self.cpus = cpus
        self.placement_timeout = placement_timeout
        self.actor_options = dict(actor_options or {})
        self.on_root = on_root
        self.root: dict[str, Any] | None = None
        self._root_known = False
        self._next_id = 0
        self._actors: list[_Actor] = []
        self._closing: list[Any] = []  # refs of close() calls
        self._retired: list[_Actor] = []  # actors closing (killed at the end)
        self._remote: Any = None
        self.lost: list[int] = []  # tasks whose actor died under them, once per loss

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        """Run every task; call ``on_record`` in this process as each one finishes."""
        if not tasks:
            return
        ray = require_ray()
        started = connect(self.address)
        try:
            from intercode.integrations.raycluster.actors import EpisodeActor

            self._remote = ray.remote(EpisodeActor)
            state = _State(deque(dict.fromkeys(tasks)))
            for _ in range(min(self.workers, len(state.queue))):
                self._spawn(state)
            while state.queue or state.running:
                self._step(ray, state, on_record)
        finally:
            self.shutdown()
            if started:
                ray.shutdown()

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": self.cpus, "max_restarts": 0,
                                   "max_task_retries": 0, "scheduling_strategy": "SPREAD"}
        env = {k: os.environ[k] for k in self._passed_env() if os.environ.get(k)}
        if env:
            options["runtime_env"] = {"env_vars": env}
        options.update(self.actor_options)
        return options

    def _passed_env(self) -> tuple[str, ...]:
        if self.spec.model is None:
            return PASSED_ENV
        return (self.spec.model.api_key_env, *PASSED_ENV)

    def _spawn(self, state: _State) -> None:
        actor = _Actor(self._next_id, None)
        self._next_id += 1
        actor.handle = self._remote.options(**self._options()).remote(self.spec, actor.wid)
        actor.started = actor.handle.start.remote()
        state.starting[actor.started] = actor
        self._actors.append(actor)

    def _step(self, ray: Any, state: _State, on_record: OnRecord) -> None:
        if not state.running and not state.starting:
            if state.live:  # a free actor and a task: keep going
                self._dispatch(state)
                return
            self._spawn(state)  # every actor is gone: a new one
        refs = [*state.running, *state.starting]
        timeout = None if state.running else self.placement_timeout
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            raise RunAborted(f"no Ray actor started in {self.placement_timeout:.0f} s: does the "
                             f"cluster have {self.cpus:g} free CPU(s) for one?")
        for ref in ready:
            if ref in state.starting:
                self._started(ray, state, state.starting.pop(ref), ref)
            elif ref in state.running:  # (not dropped with a lost actor)
                self._finished(ray, state, state.running.pop(ref), ref, on_record)
        self._dispatch(state)

    def _started(self, ray: Any, state: _State, actor: _Actor, ref: Any) -> None:
        try:
            answer = ray.get(ref)
        except ray.exceptions.RayError as exc:  # the actor (or its node) died starting
            self._forget(ray, actor)
            state.start_failures += 1
            if state.start_failures > 3 * self.workers:
                raise RunAborted(f"Ray actors keep dying as they start: {_first_line(exc)}"
                                 ) from None
            if state.queue and len(self._actors) < self.workers:
                self._spawn(state)
            return
        if "fatal" in answer:
            raise RunAborted(answer["fatal"])
        self._check_root(answer.get("rootfs"), str(answer.get("node", "")))
        actor.started, actor.node = None, str(answer.get("node", ""))
        actor.pid = int(answer.get("pid") or 0)
        state.live.append(actor)

    def _check_root(self, root: dict[str, Any] | None, node: str) -> None:
        """The first actor's root is the run's; any other actor's must be the same."""
        from intercode.sandbox.rootfs import root_label, same_root

        if not self._root_known:
            self._root_known, self.root = True, root
            if self.on_root is not None:
                self.on_root(root)
            return
        if root is None or self.root is None:
            same = root is self.root
        else:
            same = same_root(self.root, root)
        if not same:
            raise RunAborted(f"Ray node {node} mounts another root file system "
                             f"({root_label(root)}) than the run's ({root_label(self.root)}): "
                             "build the same root on every node (`intercode image build`), "
                             "or give every node the same --rootfs")

    def _finished(self, ray: Any, state: _State, actor: _Actor, ref: Any,
                  on_record: OnRecord) -> None:
        task = actor.tasks[actor.refs.index(ref)]
        try:
            answer = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # a bug in the actor: this task's error
            self._settle(actor, ref)
            self._record(state, on_record, error_record(
                self.spec, task, actor.wid, f"the Ray actor failed: {_first_line(exc)}"))
            return
        except ray.exceptions.RayError as exc:  # the actor or its node died
            self._lost(ray, state, actor, exc, on_record)
            return
        if "fatal" in answer:
            raise RunAborted(answer["fatal"])
        self._settle(actor, ref)
        self._record(state, on_record, answer["record"])

    @staticmethod
    def _settle(actor: _Actor, ref: Any) -> None:
        i = actor.refs.index(ref)
        del actor.refs[i], actor.tasks[i]

    def _lost(self, ray: Any, state: _State, actor: _Actor, exc: Exception,
              on_record: OnRecord) -> None:
        """An actor died: the episode it ran counts a try; the ones queued behind it go
        back to the queue as they were."""
        self._forget(ray, actor)
        if actor in state.live:
            state.live.remove(actor)
        for ref in actor.refs:
            state.running.pop(ref, None)
        task, queued = actor.tasks[0], actor.tasks[1:]
        actor.tasks, actor.refs = [], []
        state.queue.extendleft(reversed(queued))
        self.lost.append(task)
        tries = state.attempts.get(task, 0) + 1
        state.attempts[task] = tries
        log.warning("task %d: its Ray actor%s died (%s)", task,
                    f" on node {actor.node}" if actor.node else "", _first_line(exc))
        if tries <= self.retries:
            state.queue.appendleft(task)  # elsewhere, first
        else:
            where = f" on node {actor.node}" if actor.node else ""
            self._record(state, on_record, error_record(
                self.spec, task, actor.wid,
                f"the Ray actor{where} died during this episode, {tries} times "
                f"({_first_line(exc)})"))
        if state.queue and len(self._actors) < self.workers:
            self._spawn(state)

    def _record(self, state: _State, on_record: OnRecord, record: dict[str, Any]) -> None:
        task = int(record["task"])
        if task in state.done:  # never twice (a late answer of a task run again)
            return
        state.done.add(task)
        on_record(record)

    def _dispatch(self, state: _State) -> None:
        """Give each free actor a task; while the queue holds at least one task per actor,
        also one more to each (run as soon as its current one ends: the round trip to
        this process is hidden), never at the tail, where a task waits for the first
        actor free."""
        for depth in range(1, PIPELINE + 1):
            for actor in state.live:
                if not state.queue or (depth > 1 and len(state.queue) < len(state.live)):
                    break
                if len(actor.tasks) < depth:
                    self._send(state, actor, state.queue.popleft())
        if not state.queue:  # nothing left to give: free the CPUs of the idle ones
            ray = require_ray()
            for actor in [a for a in state.live if not a.tasks]:
                self._closing.append(actor.handle.close.remote())
                state.live.remove(actor)
                self._actors.remove(actor)
                self._retired.append(actor)
            for ref, actor in list(state.starting.items()):
                self._forget(ray, actor)
                del state.starting[ref]

    def _send(self, state: _State, actor: _Actor, task: int) -> None:
        if task in state.done:
            return
        ref = actor.handle.run.remote(task)
        actor.tasks.append(task)
        actor.refs.append(ref)
        state.running[ref] = actor

    def _forget(self, ray: Any, actor: _Actor) -> None:
        if actor in self._actors:
            self._actors.remove(actor)
        try:
            ray.kill(actor.handle, no_restart=True)
        except Exception:  # already dead
            pass

    def shutdown(self) -> None:
        """Let idle actors close their environments, then kill every actor (a busy
        one's sandboxes die with it)."""
        ray = require_ray()
        if self._closing:
            try:
                ray.wait(self._closing, num_returns=len(self._closing), timeout=30)
            except Exception:  # leaving anyway
                pass
            self._closing = []
        for actor in [*self._actors, *self._retired]:
            self._forget(ray, actor)
        self._actors, self._retired = [], []


@dataclass(frozen=True)
class RayExecutorFactory(ExecutorFactory):
    """A run's episodes on Ray actors (:class:`RayExecutor`), one per worker.

    ``address``: the cluster (see :class:`RayExecutor`; None: $RAY_ADDRESS, else a new
    local instance); ``actor_cpus``: CPUs each actor reserves (None: 1).
    """

    address: str | None = None
    actor_cpus: float | None = None
    name: ClassVar[str] = "ray"
    runs_here: ClassVar[bool] = False  # each actor checks its node and builds its root

    def check(self, agent: str, settings: EnvSettings) -> None:
        """No person at this terminal, no sandbox network, an address Ray understands, and
        Ray installed: each refused in one line before anything is written."""
        if agent == "human":
            raise ConfigError("--agent human plays at this terminal: not with --executor ray")
        cluster.refuse_network(settings.network)
        cluster.check_address(self.address)
        require_ray()  # the extra is missing: one line before anything is written

    def recorded(self) -> dict[str, Any]:
        """The cluster's address and the actors' CPUs."""
        return {"ray_address": self.address, "ray_actor_cpus": self.actor_cpus}

    def __call__(self, spec: WorkerSpec, workers: int, on_root: OnRoot) -> RayExecutor:
        """A :class:`RayExecutor` telling ``on_root`` the root its first actor mounts."""
        return RayExecutor(spec, workers, self.address, cpus=self.actor_cpus or 1.0,
                           on_root=on_root)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {line}"[:500]

