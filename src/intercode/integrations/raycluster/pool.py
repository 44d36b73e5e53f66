"""``EnvPool``: N remote environments on Ray actors, reset and stepped in batches.

For an RL trainer's rollout loop::

    with EnvPool("bash", "nl2bash-fs1", size=64, address="auto") as pool:
        pool.reset(tasks=range(64))                 # one request per environment
        while True:
            for r in pool.poll():                   # whatever has finished, as it finishes
                pool.step({r.env_id: policy(r)})    # the next action of that environment

Each environment lives warm on its own actor (one CPU each by default) for the pool's
whole life. An environment has at most one request in flight (its steps stay in order);
``max_in_flight`` bounds the requests in flight over the pool: past it a submission
waits for a result (kept for the next :meth:`EnvPool.poll`). An infrastructure fault is
a result with ``error`` set (never a reward); reset that environment before stepping it
again. An actor that dies is replaced by a fresh one, started on whatever node has room.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError, EnvStateError, RunAborted
from intercode.integrations.raycluster.cluster import connect, refuse_network, require_ray

__all__ = ["EnvPool", "PoolResult"]


@dataclass(frozen=True)
class PoolResult:
    """What one request gave: ``kind`` is ``"reset"`` (``observation`` and ``info`` set)
    or ``"step"`` (all of the step's values). ``error`` is an infrastructure fault (the
    other fields are then empty)."""

    env_id: int
    kind: str
    observation: str | None = None
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class _Slot:
    handle: Any
    node: str = ""
    request: Any = None  # the ref in flight, if any
    kind: str = ""


class EnvPool:
    """``size`` environments of ``env`` (dataset ``dataset``) on Ray actors.

    ``address`` as for ``intercode eval --ray-address`` (None: a process already
    connected keeps its cluster; else $RAY_ADDRESS or a new local instance).
    Construction waits until every environment is started and warm; a node that cannot
    run the environment (no bubblewrap, no data) is a :class:`RunAborted` naming it.
    """

    def __init__(self, env: str, dataset: str | None = None, size: int = 4, *,
                 settings: EnvSettings | None = None, address: str | None = None,
                 max_in_flight: int | None = None, cpus: float = 1.0,
                 actor_options: dict[str, Any] | None = None,
                 start_timeout: float = 600.0) -> None:
        from intercode.benchmarks import get

        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"an EnvPool needs a size of at least 1, got {size!r}")
        if max_in_flight is not None and (isinstance(max_in_flight, bool)
                                          or not isinstance(max_in_flight, int)
                                          or max_in_flight < 1):
            raise ConfigError(f"max_in_flight must be at least 1, got {max_in_flight!r}")
        refuse_network((settings or EnvSettings()).network)
        self.env_name = env
        self.dataset = dataset or get(env).default_dataset
        self.settings = settings or EnvSettings()
        self.max_in_flight = min(size, max_in_flight or size)
        self.cpus = cpus
        self.actor_options = dict(actor_options or {})
        self._ray = require_ray("intercode.integrations.raycluster.EnvPool")
        self._owns_ray = connect(address)
        self._closed = False
        self._slots: list[_Slot] = []
        self._by_ref: dict[Any, int] = {}
        self._ready: deque[PoolResult] = deque()
        from intercode.integrations.raycluster.actors import EnvActor

        self._remote = self._ray.remote(EnvActor)
        try:
            self._slots = [_Slot(self._new_actor()) for _ in range(size)]
            self._start_all(start_timeout)
        except BaseException:
            self.close()
            raise

    # -- life cycle ---------------------------------------------------------------------

    def _new_actor(self) -> Any:
        options: dict[str, Any] = {"num_cpus": self.cpus, "max_restarts": 0,
                                   "max_task_retries": 0, "scheduling_strategy": "SPREAD",
                                   **self.actor_options}
        return self._remote.options(**options).remote(self.env_name, self.dataset,
                                                      self.settings)

    def _start_all(self, timeout: float) -> None:
        refs = [slot.handle.start.remote() for slot in self._slots]
        _, pending = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if pending:
            raise RunAborted(f"{len(pending)} of {len(refs)} EnvPool actors did not start in "
                             f"{timeout:.0f} s: does the cluster have {len(refs) * self.cpus:g} "
                             "free CPUs?")
        for slot, ref in zip(self._slots, refs, strict=True):
            answer = self._ray.get(ref)
            if "fatal" in answer:
                raise RunAborted(answer["fatal"])
            slot.node = str(answer["node"])
        self.num_tasks: int = int(self._ray.get(refs[0])["tasks"])

    def close(self) -> None:
        """Close every environment and stop the actors (idempotent)."""
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        closing = [slot.handle.close.remote() for slot in self._slots]
        if closing:
            try:
                ray.wait(closing, num_returns=len(closing), timeout=30)
            except Exception:  # leaving anyway: the sandboxes die with their actors
                pass
        for slot in self._slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:
                pass
        self._by_ref.clear()
        if self._owns_ray:
            ray.shutdown()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------

    @property
    def size(self) -> int:
        """How many environments the pool holds (ids ``0 .. size-1``)."""
        return len(self._slots)

    @property
    def in_flight(self) -> int:
        """Requests sent whose results have not arrived yet."""
        return len(self._by_ref)

    def nodes(self) -> list[str]:
        """The node each environment runs on (by id)."""
        return [slot.node for slot in self._slots]

    def busy(self, env_id: int) -> bool:
        """Whether environment ``env_id`` has a request in flight."""
        self._check_id(env_id)
        return self._slots[env_id].request is not None

    def reset(self, env_ids: Iterable[int] | None = None, tasks: Iterable[int | None] | None = None,
              seeds: Iterable[int | None] | None = None) -> None:
        """Start a new episode in each of ``env_ids`` (default: all), on ``tasks`` (one
        per id; None: the environment's choice) with ``seeds``."""
        ids = list(range(self.size)) if env_ids is None else [self._check_id(i) for i in env_ids]
        chosen = [None] * len(ids) if tasks is None else list(tasks)
        seeded = [None] * len(ids) if seeds is None else list(seeds)
        if len(chosen) != len(ids) or len(seeded) != len(ids):
            raise ConfigError(f"reset: {len(ids)} environments but {len(chosen)} tasks and "
                              f"{len(seeded)} seeds")
        for value in (*chosen, *seeded):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(f"reset: a task or seed is an integer or None, not {value!r}")
        self._check_free(ids)
        for env_id, task, seed in zip(ids, chosen, seeded, strict=True):
            self._submit(env_id, "reset", lambda h, t=task, s=seed: h.reset.remote(t, s))

    def step(self, actions: Mapping[int, str]) -> None:
        """Send one action to each environment named (``{env_id: action}``)."""
        ids = [self._check_id(i) for i in actions]
        for env_id in ids:
            if not isinstance(actions[env_id], str):
                raise ConfigError(f"step: the action of environment {env_id} is not a string")
        self._check_free(ids)
        for env_id in ids:
            self._submit(env_id, "step", lambda h, a=actions[env_id]: h.step.remote(a))

    def poll(self, timeout: float | None = None, max_results: int | None = None
             ) -> list[PoolResult]:
        """The results that have arrived; waits (at most ``timeout`` seconds; None:
        as long as it takes) for at least one when none has and some are in flight."""
        if not self._ready and self._by_ref:
            self._collect(timeout)
        count = len(self._ready) if max_results is None else min(max_results, len(self._ready))
        return [self._ready.popleft() for _ in range(count)]

    def results(self) -> Iterator[PoolResult]:
        """Every result in flight, as each arrives, until none is left."""
        while self._ready or self._by_ref:
            yield from self.poll()

    def gather(self) -> dict[int, PoolResult]:
        """Wait for every request in flight; their results by environment id."""
        return {r.env_id: r for r in self.results()}

    # -- internals ----------------------------------------------------------------------

    def _check_id(self, env_id: int) -> int:
        if isinstance(env_id, bool) or not isinstance(env_id, int) or not (
                0 <= env_id < self.size):
            raise ConfigError(f"no environment {env_id!r} in this pool (ids 0-{self.size - 1})")
        return env_id

    def _check_free(self, ids: list[int]) -> None:
        if self._closed:
            raise EnvStateError("the EnvPool is closed")
        if len(set(ids)) != len(ids):
            raise ConfigError("an environment is named twice in one batch")
        for env_id in ids:
            if self._slots[env_id].request is not None:
                raise EnvStateError(f"environment {env_id} has a request in flight; poll its "
                                    "result first")

    def _submit(self, env_id: int, kind: str, call: Any) -> None:
        while len(self._by_ref) >= self.max_in_flight:  # backpressure
            self._collect(None)
        slot = self._slots[env_id]
        slot.request, slot.kind = call(slot.handle), kind
        self._by_ref[slot.request] = env_id

    def _collect(self, timeout: float | None) -> None:
        ready, _ = self._ray.wait(list(self._by_ref), num_returns=1, timeout=timeout)
        if ready:  # and whatever else is already there
            more, _ = self._ray.wait(list(self._by_ref), num_returns=len(self._by_ref),
                                     timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        for ref in ready:
            env_id = self._by_ref.pop(ref)
            slot = self._slots[env_id]
            slot.request = None
            self._ready.append(self._result(env_id, slot, ref))

    def _result(self, env_id: int, slot: _Slot, ref: Any) -> PoolResult:
        exceptions = self._ray.exceptions
        try:
            value = self._ray.get(ref)
        except exceptions.RayTaskError as exc:  # the environment failed: reset it
            return PoolResult(env_id, slot.kind, error=_cause(exc))
        except exceptions.RayError as exc:  # the actor or its node died: a fresh one
            where = f" on node {slot.node}" if slot.node else ""
            slot.handle, slot.node = self._new_actor(), ""
            slot.handle.start.remote()
            return PoolResult(env_id, slot.kind, error=f"the environment's Ray actor{where} "
                                                       f"died ({type(exc).__name__}); reset it")
        if slot.kind == "reset":
            observation, info = value
            return PoolResult(env_id, "reset", observation=observation, info=info)
        observation, reward, terminated, truncated, info = value
        return PoolResult(env_id, "step", observation, reward, terminated, truncated, info)


def _cause(exc: Any) -> str:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"[:2000]
    text = str(exc).strip()
    return (text.splitlines()[-1] if text else type(exc).__name__)[:2000]
