"""What every intercode environment shares, without Gymnasium.

Subclasses load a task, execute an action, and evaluate the current state; this
class picks tasks (by option or seeded random), counts turns, handles ``submit``
and ``skip``, and builds ``info``. It has Gymnasium's ``reset``/``step``/``close``
interface and seeding, but neither its base class nor its spaces:
:class:`intercode.envs.base.IntercodeEnv` adds them (the public environments, e.g.
``BashEnv``, are both). A run's workers use the environments' cores (``BashCore``,
...), which import neither Gymnasium nor numpy: a worker starts without them.
"""

from __future__ import annotations

import copy
import inspect
import os
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Literal, NoReturn, Self, SupportsFloat, SupportsIndex

from intercode.datasets import Dataset, Task, load_dataset
from intercode.envs import arguments
from intercode.envs.bounds import MAX_OBSERVATION, task_index
from intercode.envs.settings import EnvSettings
from intercode.envs.snapshot import Registry, Snapshot
from intercode.envs.spares import DEFAULT_SPARES, Spares, spares_wanted
from intercode.errors import ConfigError, EnvStateError, SnapshotUnsupported, TaskUnavailable
from intercode.execstate import ExecState
from intercode.sandbox.base import Sandbox

__all__ = ["EnvCore", "Evaluation", "not_picklable"]


class Evaluation:
    """Result of scoring the current state (what submitting now would give)."""

    def __init__(self, reward: float, success: bool, info: dict[str, Any]) -> None:
        self.reward = reward
        self.success = success
        self.info = info
        self.shaped = False  # the environment's reward mode was applied (see _shape)


def _with_reward_mode(method: Any) -> Any:
    """``evaluate``/``submit`` of a subclass, its result in the environment's reward mode."""
    def scored(self: EnvCore, *args: Any, **kwargs: Any) -> Evaluation:
        return self._shape(method(self, *args, **kwargs))

    scored.__doc__, scored.__name__ = method.__doc__, method.__name__
    scored.__qualname__ = method.__qualname__
    scored.__wrapped__ = method  # type: ignore[attr-defined]
    scored._reward_mode = True  # type: ignore[attr-defined]
    return scored


class EnvCore:
    """Base of the intercode environments (text actions, text observations), without
    Gymnasium's base class and spaces (see the module's docstring)."""

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012
    env_name = "intercode"
    submit_keyword = "submit"
    skip_keyword = "skip"
    _init_args: tuple[tuple[Any, ...], dict[str, Any]]
    reward_mode = "paper"  # see set_reward_mode

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's ``evaluate`` and ``submit`` give the reward of the
        environment's mode (:mod:`intercode.rewards.modes`), plugins' included."""
        super().__init_subclass__(**kwargs)
        for name in ("evaluate", "submit"):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_reward_mode", False):
                setattr(cls, name, _with_reward_mode(method))

    # Gymnasium's seeding (``gymnasium.Env``'s attributes, with the same meaning)
    _np_random: Any = None
    _np_random_seed: int | None = None
    render_mode: str | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> EnvCore:
        """Remember the constructor's arguments (:meth:`fork` builds a sibling with them)."""
        env = super().__new__(cls)
        env._init_args = (args, kwargs)
        return env

    def __init__(self, dataset: str | Dataset, render_mode: str | None = None) -> None:
        arguments.dataset(dataset)
        self.dataset = (load_dataset(dataset, self.env_name) if isinstance(dataset, str)
                        else dataset)
        if self.dataset.env != self.env_name:
            raise ConfigError(f"dataset {self.dataset.name!r} is for the {self.dataset.env} "
                              f"environment, not {self.env_name}")
        if len(self.dataset) == 0:
            raise ConfigError(f"dataset {self.dataset.name!r} has no tasks")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"unknown render mode {render_mode!r}")
        self.render_mode = render_mode
        self._longest_query = max((len(task.query) for task in self.dataset), default=0)
        self._limit_observations(MAX_OBSERVATION)
        self.task: Task | None = None
        self.turn = 0
        self.done = True
        self.history: list[tuple[str, str]] = []
        self._available: list[int] | None = None
        self._snapshots = Registry()
        self.restore_note = ""  # said with the first observation after a restore
        self._spares = Spares(spares_wanted(os.environ.get("INTERCODE_FORK_SPARE", "")))
        self._closed = False

    @classmethod
    def from_settings(cls, dataset: str | Dataset, settings: EnvSettings) -> Self:
        """An environment built from the command line's / runner's settings.

        The default passes ``limits``, ``upstream_quirks``, ``gold_cache``,
        ``answer_check`` and ``sandbox``
        (as ``backend``) if the constructor takes them; environments with more settings
        override this.
        """
        accepted = inspect.signature(cls.__init__).parameters
        kwargs = {name: getattr(settings, name) for name in ("limits", "upstream_quirks",
                                                             "gold_cache", "answer_check")
                  if name in accepted}
        if "backend" in accepted:  # the sandbox backend
            kwargs["backend"] = settings.sandbox
        return cls(dataset, **kwargs)

    # -- to implement --------------------------------------------------------------------

    @abstractmethod
    def load_task(self, task: Task) -> None:
        """Prepare a pristine state for ``task``."""

    @abstractmethod
    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run an action; return the observation and its info."""

    @abstractmethod
    def evaluate(self) -> Evaluation:
        """Score the current state without ending the episode."""

    def set_reward_mode(self, mode: str) -> None:
        """The reward episodes earn: ``paper`` (the benchmark's own, the default),
        ``success`` or ``baseline`` (see :mod:`intercode.rewards.modes`)."""
        from intercode.rewards.modes import check_mode

        self.reward_mode = check_mode(mode)

    def _shape(self, result: Evaluation) -> Evaluation:
        """``result`` in this environment's reward mode (once: a submit that calls
        evaluate is not shaped twice); the paper's reward stays in ``info``."""
        if result.shaped or self.reward_mode == "paper":
            result.shaped = True
            return result
        from intercode.rewards.modes import shaped

        baseline = None
        if self.reward_mode == "baseline":
            baseline = self._baseline()
            result.info["baseline"] = baseline
        result.info["reward_mode"] = self.reward_mode
        result.info["paper_reward"] = result.reward
        result.reward = shaped(self.reward_mode, result.reward, result.success, baseline)
        result.shaped = True
        return result

    def _baseline(self) -> float:
        """What handing in the task's untouched starting state earns under the paper's
        reward (measured at reset, once per task; 0.0 where the benchmark's reward is
        all or nothing)."""
        assert self.task is not None
        cache = self.__dict__.setdefault("_baselines", {})
        return float(cache.get(self.task.index, 0.0))

    def _measure_baseline(self) -> None:
        """At reset, in ``baseline`` mode: the untouched state's paper reward, once."""
        from intercode.benchmarks import get

        assert self.task is not None
        cache = self.__dict__.setdefault("_baselines", {})
        if self.task.index in cache:
            return
        if get(self.env_name).extra.get("binary_reward"):
            cache[self.task.index] = 0.0
            return
        evaluate = getattr(type(self).evaluate, "__wrapped__", None)
        raw = evaluate(self) if evaluate is not None else self.evaluate()
        cache[self.task.index] = 1.0 if raw.success else float(raw.reward)

    def parse_submit(self, action: str) -> tuple[bool, str | None]:
        """Whether ``action`` submits, and its argument (``submit <arg>``), if any."""
        return action == self.submit_keyword, None

    def submit(self, argument: str | None) -> Evaluation:
        """The final score of a submission (by default: the current state's)."""
        return self.evaluate()

    def _submission_ends(self, result: Evaluation) -> bool:
        """Whether a submission ends the episode (CTF: only a right flag, by default)."""
        return True

    def unavailable(self, task: Task) -> str | None:
        """Why ``task`` cannot run in this environment as configured (``None``: it can)."""
        return None

    def available_tasks(self) -> list[int]:
        """Indices of the tasks that can run (those a seeded ``reset()`` draws from)."""
        if self._available is None:
            self._available = [i for i in range(len(self.dataset))
                               if self.unavailable(self.dataset[i]) is None]
        return self._available

    def warm_up(self) -> None:
        """Start what the environment needs now (sandboxes), so that failures show early."""

    def _limit_observations(self, chars: int) -> None:
        """Make the observation space the texts of up to ``chars`` characters (or of the
        longest query of the dataset, if longer).

        Environments derive ``chars`` from their limits (the sandbox's output limit plus
        :data:`NOTE_CHARS`); :meth:`step` cuts a longer observation, with a note saying
        so, so that every observation is in the space (a vector environment's shared
        memory holds exactly the space's texts).
        """
        self.max_observation = max(chars, self._longest_query)

    def _fit_observation(self, text: str) -> str:
        """``text``, or its start and a note if it is longer than the observation space
        allows (a bad action never raises)."""
        limit = self.max_observation
        if len(text) <= limit:
            return text
        note = (f"\n[intercode] the observation was cut here: it had {len(text)} characters, "
                f"the observation space holds {limit}")[:limit]
        return text[:limit - len(note)] + note

    def forget_history(self) -> None:
        """Forget what this environment's earlier episodes leave to its later ones: a
        pool calls it before lending the environment to another borrower. Nothing but
        ``--upstream-quirks`` Bash keeps anything (the history of upstream's long-lived
        containers, see :mod:`intercode.envs.bash_upstream`)."""

    # -- snapshots (see intercode.envs.snapshot) ----------------------------------------

    def save_state(self) -> ExecState:
        """The execution state of the episode now (what :meth:`snapshot` keeps)."""
        raise SnapshotUnsupported(f"the {self.env_name} environment ({type(self).__name__}) "
                                  "cannot snapshot its state")

    def load_state(self, state: ExecState) -> None:
        """Make ``state`` (of :meth:`save_state`, this episode) the current one."""
        raise SnapshotUnsupported(f"the {self.env_name} environment ({type(self).__name__}) "
                                  "cannot restore a snapshot")

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """Make ``state`` the current one of ``other`` (a sibling reset to the same task)."""
        raise SnapshotUnsupported(f"the {self.env_name} environment ({type(self).__name__}) "
                                  "cannot fork")

    def sibling(self) -> Self:
        """A new environment configured as this one (for :meth:`fork`)."""
        args, kwargs = self._init_args
        return type(self)(*args, **kwargs)

    def _fork_state(self) -> ExecState:
        """What :meth:`fork` hands to :meth:`transfer_state` (by default a snapshot's
        state, :meth:`save_state`)."""
        return self.save_state()

    # -- the warm spares of fork() (see intercode.envs.spares) ---------------------------

    @property
    def fork_spare(self) -> bool:
        """Whether :meth:`fork` keeps warm spares: siblings whose sandboxes boot in the
        background, begun by each fork for the next ones (their memory: one more agent
        sandbox each; how many: :attr:`fork_spares`). On by default; off with
        ``INTERCODE_FORK_SPARE=0`` or by setting this to False, which also closes the
        spares kept now (True again keeps the default number)."""
        return self._spares.wanted > 0

    @fork_spare.setter
    def fork_spare(self, on: bool) -> None:
        self.fork_spares = (self._spares.wanted or DEFAULT_SPARES) if on else 0

    @property
    def fork_spares(self) -> int:
        """How many warm spares :meth:`fork` keeps (``DEFAULT_SPARES``, or
        ``INTERCODE_FORK_SPARE=<n>``; 0: none). Two, so that a fork that follows the
        last one within a sandbox's boot (about 60 ms) still finds one booted, begun by
        the fork before; setting fewer closes the spares beyond the number."""
        return self._spares.wanted

    @fork_spares.setter
    def fork_spares(self, count: int) -> None:
        self._spares.set_wanted(count)

    def begin_spare(self) -> None:
        """Begin the warm spares now, so that even the first :meth:`fork` finds one ready
        (by default the first fork starts a sibling itself and begins the spares)."""
        self._refill_spare()

    def drop_spare(self) -> None:
        """Close the warm spares of :meth:`fork`, if any are kept (new ones are begun by
        the next fork, unless :attr:`fork_spare` is False)."""
        self._spares.drop()

    def _refill_spare(self) -> None:
        """Begin new warm spares for the next forks (see :meth:`Spares.refill`)."""
        self._spares.refill(self)

    def _recycle(self) -> None:
        """On the close of a fork: its agent's sandbox may go back to the environment it
        was forked from as a warm spare (see :meth:`Spares.recycle`)."""
        self._spares.recycle(self)

    def _prestart(self) -> bool:
        """Begin starting what a fork needs (the agent's sandbox) without waiting for it,
        so that it boots in the background; the environment's first use waits for it.
        Returns whether anything was begun (``False``: this environment keeps no warm
        spare, e.g. plugins and the MySQL backend, whose start is not a sandbox's)."""
        return False

    def _agent_alive(self) -> bool:
        """Whether the agent's sandbox runs (a warm spare prepared in the background whose
        sandbox has died since is reset by the fork; the default: assume it runs)."""
        return True

    def _detach_agent(self) -> Sandbox | None:
        """Take this environment's agent sandbox out of it (it no longer uses it, and its
        close leaves it running), for :meth:`_adopt_agent` of a sibling; ``None`` if it
        has none that can move (the default: forks of such environments are not
        recycled)."""
        return None

    def _adopt_agent(self, box: Sandbox) -> None:
        """Make ``box`` (a sibling's, from :meth:`_detach_agent`, reset) this environment's
        agent sandbox; it was made without one."""
        raise NotImplementedError

    def _spare_plan(self) -> object:
        """What a warm spare begun now can do ahead of the next fork, after its reset to
        this task (``None``: nothing). Called on the caller's thread; the spare's
        :meth:`_prepare_fork` then follows it on the spare-starting thread, and
        :meth:`transfer_state` must accept a spare prepared from an earlier state of this
        environment (or reset it). Python replays the episode's actions so far."""
        return None

    def _prepare_fork(self, plan: object) -> None:
        """Follow :meth:`_spare_plan`'s ``plan`` in this warm spare (see there)."""

    # -- snapshots and forks -------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """An opaque handle to the episode's state now: task, turn count, history and the
        execution state. Restore it with :meth:`restore`; free it with ``release()``
        (also on garbage collection, and when this environment resets or closes)."""
        task = self.task
        if task is None:
            raise EnvStateError("call reset() before snapshot()")
        self._snapshots.drain()
        state = self.save_state()
        turn, done, history = self.turn, self.done, tuple(self.history)
        return self._snapshots.issue(
            lambda owner, episode, pending: Snapshot(owner, episode, task, turn, done, history,
                                                     state, pending))

    def restore(self, snap: Snapshot) -> None:
        """Continue the episode from ``snap`` (taken by this environment in this episode);
        anything else is refused with a :class:`~intercode.errors.SnapshotError`."""
        snap = self._snapshots.check(snap, self.task)
        self._snapshots.drain()
        self.restore_note = ""
        self.load_state(snap.state)
        self.turn, self.done, self.history = snap.turn, snap.done, list(snap.history)

    def fork(self, into: EnvCore | None = None) -> EnvCore:
        """A second, independent environment in this one's state.

        By default a new one: the warm spare this environment keeps (a sibling whose
        sandboxes were begun by a previous fork, or given back by a closed fork, and
        prepared in the background: booted and reset to this task; see
        :mod:`intercode.envs.spares`), else a new :meth:`sibling` (its
        sandboxes start, which is most of the cost); a new spare is then begun (see
        :attr:`fork_spare`). ``into``: an environment made beforehand
        with the same arguments (a warm pool), whose episode is replaced. Create
        environments on the thread that will use them: their sandboxes die with the
        thread that started them (a fork's, begun as a spare, live until it is closed).
        """
        task = self.task
        if task is None:
            raise EnvStateError("call reset() before fork()")
        if into is not None and (into is self or type(into) is not type(self)
                                 or into.dataset.name != self.dataset.name):
            raise ConfigError("fork(into=...) takes another environment of the same class "
                              "and dataset")
        self._snapshots.drain()
        state = self._fork_state()
        turn, done, history = self.turn, self.done, list(self.history)
        try:
            other = into if into is not None else (self._spares.take() or self.sibling())
            try:
                # a spare that began this task's episode in the background and was never
                # handed out has nothing to reset; ``into`` always is (its episode is replaced)
                if (into is not None or other._spares.ready_task != task.index
                        or not other._agent_alive()):
                    other.reset(options={"task": task.index})
                other._spares.ready_task = None
                self.transfer_state(state, other)
                other.turn, other.done, other.history = turn, done, history
                other.reward_mode = self.reward_mode
                other.__dict__["_baselines"] = self.__dict__.setdefault("_baselines", {})
                other.np_random = copy.deepcopy(self.np_random)
            except BaseException:
                if into is None:
                    other.close()
                raise
        finally:
            state.release()
        if into is None:
            other._spares.forked_from(self)
            self._refill_spare()
        return other

    # -- pickling ------------------------------------------------------------------------

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        """A live environment does not pickle (nor copy): it holds running sandboxes."""
        raise TypeError(not_picklable(self))

    def __reduce__(self) -> NoReturn:
        """See :meth:`__reduce_ex__`."""
        raise TypeError(not_picklable(self))

    def __getstate__(self) -> NoReturn:
        """See :meth:`__reduce_ex__`."""
        raise TypeError(not_picklable(self))

    # -- Gymnasium API -------------------------------------------------------------------

    @property
    def np_random(self) -> Any:
        """The environment's random generator (a ``numpy.random.Generator``, seeded by
        ``reset(seed=...)``, else from entropy when first used), as Gymnasium's."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = _seeded(None)
        return self._np_random

    @np_random.setter
    def np_random(self, value: Any) -> None:
        self._np_random, self._np_random_seed = value, -1

    @property
    def np_random_seed(self) -> int:
        """The seed of :attr:`np_random` (-1 if it was set directly), as Gymnasium's."""
        if self._np_random_seed is None:
            self._np_random, self._np_random_seed = _seeded(None)
        return self._np_random_seed

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on ``options["task"]`` or on a task drawn with the seed."""
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError(f"options must be a dict such as {{'task': 0}}, "
                              f"got {type(options).__name__}")
        if seed is not None:
            self._np_random, self._np_random_seed = _seeded(seed)
        self._spares.ready_task = None
        self._snapshots.release_all()
        self.restore_note = ""
        index = (options or {}).get("task")
        if index is None:
            pool = self.available_tasks()
            if not pool:
                raise TaskUnavailable(f"no task of {self.dataset.name} can run here: "
                                      f"{self.unavailable(self.dataset[0])}")
            index = pool[int(self.np_random.integers(len(pool)))]
        index = task_index(index, len(self.dataset))
        reason = self.unavailable(self.dataset[index])
        if reason is not None:
            raise TaskUnavailable(reason)
        self.task = self.dataset[index]
        self.load_task(self.task)
        self.turn = 0
        self.done = False
        self.history = []
        if self.reward_mode == "baseline":  # of this episode's untouched state, no history
            self._measure_baseline()
        return self.task.query, self._task_info()

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Run an action; ``submit`` ends the episode with the reward, ``skip`` with 0."""
        if self.task is None:
            raise EnvStateError("call reset() before step()")
        if self.done:
            raise EnvStateError("the episode has ended; call reset()")
        if not isinstance(action, str):
            raise TypeError(f"actions are strings, got {type(action).__name__}")
        self._snapshots.drain()
        self.turn += 1
        keyword = action.strip()
        submitted, argument = self.parse_submit(keyword)
        if submitted:
            result = self.submit(argument)
            info = {"turn": self.turn, "submitted": True, "success": result.success,
                    **result.info}
            if not self._submission_ends(result):
                observation = self._fit_observation(str(result.info.get("observation", "")))
                self.history.append((action, observation))
                return observation, float(result.reward), False, False, info
            self.done = True
            return self._last_observation(), float(result.reward), True, False, info
        if keyword == self.skip_keyword:
            self.done = True
            return "", 0.0, True, False, {"turn": self.turn, "skipped": True, "success": False}
        observation, info = self.execute(action)
        if self.restore_note:
            sep = "" if not observation or observation.endswith("\n") else "\n"
            observation, self.restore_note = observation + sep + self.restore_note, ""
        observation = self._fit_observation(observation)
        self.history.append((action, observation))
        return observation, 0.0, False, False, {"turn": self.turn, **info}

    def render(self) -> str | None:
        """``ansi``: the episode so far as text; ``human``: print it."""
        if self.task is None or self.render_mode is None:
            return None
        lines = [f"Task {self.task.index}: {self.task.query}"]
        for action, observation in self.history:
            lines += [f"$ {action}", observation.rstrip("\n")]
        text = "\n".join(lines) + "\n"
        if self.render_mode == "human":
            print(text, end="")
            return None
        return text

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *args: object) -> Literal[False]:
        self.close()
        return False

    def close(self) -> None:
        """Release the snapshots of this environment and close the warm spare of
        :meth:`fork` (subclasses also stop sandboxes)."""
        self._closed = True
        self._snapshots.release_all()
        self.drop_spare()
        self._spares.parent = None

    def _last_observation(self) -> str:
        """The last action's observation (the query if no action ran yet)."""
        if self.history:
            return self.history[-1][1]
        return self.task.query if self.task is not None else ""

    def _task_info(self) -> dict[str, Any]:
        assert self.task is not None
        return {"task": self.task.index, "dataset": self.dataset.name,
                "source": self.task.source, "source_index": self.task.source_index}


def _seeded(seed: int | None) -> tuple[Any, int]:
    """Gymnasium's seeded generator (numpy's, imported only when a seed or a random draw
    is asked for: a run names its tasks)."""
    from gymnasium.utils import seeding

    return seeding.np_random(seed)


def not_picklable(env: EnvCore) -> str:
    """Why a live environment cannot be pickled, and what to ship instead (a Gymnasium
    environment's spec, or any environment's constructor arguments)."""
    if not hasattr(env, "spec"):  # a core: no Gymnasium spec
        return (f"a live {type(env).__name__} holds sandboxes (running processes and "
                "connections) and cannot be pickled or copied; pass its class and its "
                "constructor's arguments instead, and build it where it runs")
    return (f"a live {type(env).__name__} holds sandboxes (running processes and "
            "connections) and cannot be pickled or copied; pass its spec or its constructor's "
            "arguments instead: env.spec pickles, and gymnasium.make(spec) (or "
            "gymnasium.make(id, **kwargs)) builds the environment where it runs")
