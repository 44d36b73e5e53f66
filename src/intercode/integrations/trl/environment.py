"""An intercode environment as TRL's ``GRPOTrainer(environment_factory=...)`` wants it.

TRL's contract (``trl`` 1.16): the factory is a zero-argument callable; TRL keeps a pool
of its instances (one per concurrent rollout, built once and reset often) and, per
rollout, calls ``reset(**row)`` with the dataset row's columns (its return, when a
string, is appended to the prompt's last user message), offers every public method of
the class but ``reset`` and ``get_reward`` to the model as a tool (schema from the type
hints and docstring), and scores the finished rollout with ``get_reward()``.

:func:`environment_class` makes such a class for one benchmark, dataset and reward mode:
calling the class is the factory. Each instance runs one warm intercode environment in
process (warmed up at construction, reused across resets), or, with ``url=``, drives a
served one (``intercode serve openenv``; :mod:`.served` says how it shares a busy
server and reconnects); its tools are
``execute(code)`` and ``submit`` (with ``answer`` where the benchmark takes one), worded
as the native tool-calling agent words them. What goes wrong is answered, never raised
out of ``reset`` or a tool: a bad argument is a tool result the model reads, and an
environment failure (a sandbox that died, a task that cannot load) is a tool result
too, the rollout's reward 0.0 (counted in :attr:`IntercodeTrlEnv.faults`).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import gymnasium as gym

from intercode.agents import prompts
from intercode.agents.parsing import control_action, first_sql_statement, truncate_observation
from intercode.benchmarks import get
from intercode.envs.bounds import MAX_ACTION
from intercode.errors import ConfigError
from intercode.integrations.trl.served import Busy, Lost, ServedEnvironment
from intercode.integrations.trl.wording import execute_doc, submit_doc

__all__ = ["IntercodeTrlEnv", "environment_class"]

log = logging.getLogger(__name__)

OBSERVATION_CHARS = 1000  # what a tool result shows of an output (the tools agent's default)
OVER = "The episode is over: no more actions run."


class IntercodeTrlEnv:
    """One warm intercode environment behind TRL's environment interface.

    Made by :func:`environment_class` (its class attributes name the benchmark, dataset,
    reward mode and turn limit); the tools ``execute`` and ``submit`` are defined there,
    with the benchmark's wording. Only ``reset`` and ``get_reward`` are public methods
    here: TRL offers every other public method to the model as a tool.
    """

    benchmark: ClassVar[str]
    dataset: ClassVar[str]
    reward_mode: ClassVar[str]
    max_turns: ClassVar[int | None]
    observation_chars: ClassVar[int]
    env_kwargs: ClassVar[dict[str, Any]]
    served: ClassVar[dict[str, Any] | None]  # url, token, wait: a served environment

    def __init__(self) -> None:
        self.environment: Any = None  # a gym.Env in process, else a ServedEnvironment
        self.faults = 0  # environment failures seen (each scored 0.0)
        self.fault: str | None = None  # this episode's, if any
        self.task: int | None = None
        self.turns = 0
        self.over = True
        self.final: float | None = None  # the reward the episode ended with
        self.environment = self._make()  # a wrong configuration fails here, at the trainer's start

    # -- TRL's interface -----------------------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Start the episode of ``row["task"]`` (a task index of the class's dataset).

        Returns ``None`` when the row's prompt holds the task (rows of
        :func:`~intercode.integrations.trl.dataset.training_rows`); without a ``task``
        column, a seeded random task is drawn and its wording returned, for TRL to append
        to the prompt. A failure to start is said in the returned text; the rollout then
        scores 0.0.
        """
        self.fault, self.final, self.turns, self.over, self.task = None, None, 0, True, None
        problem = _row_problem(row, self.benchmark, self.dataset)
        if problem is not None:
            return self._failed(f"this row cannot be run: {problem}")
        task = row.get("task")
        try:
            if self.environment is None:
                self.environment = self._make()
            options = {"task": task} if task is not None else None
            query, _info = self.environment.reset(options=options)
        except ConfigError as exc:  # the row's task is not one of the dataset's
            return self._failed(f"this row cannot be run: {_line(exc)}")
        except Exception as exc:  # an environment that broke: rebuilt at the next reset
            self._drop()
            return self._failed(f"the task could not be started: {_line(exc)}")
        self.task = _task_index(self.environment, task)
        self.over = False
        return None if task is not None else prompts.tools_task(query)

    def get_reward(self) -> float:
        """The episode's reward in the class's reward mode: the submission's, else (the
        model never submitted) the final state's; 0.0 after an environment failure."""
        if self.fault is not None or self.environment is None or self.task is None:
            return 0.0
        if self.final is not None:
            return self.final
        try:
            evaluation = self.environment.unwrapped.evaluate()
        except Exception as exc:
            self._record_fault(f"the final state could not be scored: {_line(exc)}")
            return 0.0
        return float(evaluation.reward)

    # -- the tools' work (the public tools are made by environment_class) ----------------

    def _execute(self, code: object) -> str:
        if not isinstance(code, str) or not code.strip():
            return "error: execute needs a non-empty string argument 'code'"
        if len(code) > MAX_ACTION:
            return f"error: the code is {len(code)} characters long; at most {MAX_ACTION}"
        if control_action(code, self.benchmark) is None and (
                get(self.benchmark).parsing.statement == "sql"):
            code = first_sql_statement(code) or code
        return self._step(code)

    def _submit(self, answer: object = None) -> str:
        if not get(self.benchmark).parsing.submit_argument:
            return self._step("submit")
        if not isinstance(answer, str) or not answer.strip():
            return "error: submit needs a non-empty string argument 'answer'"
        answer = answer.strip()
        if "\n" in answer or len(answer) > MAX_ACTION:
            return "error: the answer must be one line"
        return self._step(f"submit {answer}")

    def _step(self, action: str) -> str:
        if self.over or self.environment is None:
            return OVER
        try:
            observation, reward, terminated, truncated, _info = self.environment.step(action)
        except Busy as exc:  # a full server: the action did not run, the episode goes on
            return f"error: {_line(exc)}"
        except Lost as exc:
            self.over = True
            return self._failed(_line(exc))
        except Exception as exc:
            self.over = True
            self._drop()
            return self._failed(f"the environment failed: {_line(exc)}")
        self.turns += 1
        if terminated:
            self.final = float(reward)
        if terminated or truncated:
            self.over = True
        shown = prompts.tools_result(
            truncate_observation(str(observation), self.observation_chars, None), None, False)
        if terminated:
            return f"{shown}\n{OVER}"
        if truncated:
            return f"{shown}\nThe turn limit is reached. {OVER}"
        return shown

    # -- the environment -----------------------------------------------------------------

    def _make(self) -> Any:
        if self.served is not None:
            return self._serve()
        import intercode

        env = intercode.make(self.benchmark, dataset=self.dataset, reward=self.reward_mode,
                             max_turns=self.max_turns, **self.env_kwargs)
        try:
            warm_up = getattr(env.unwrapped, "warm_up", None)
            if warm_up is not None:
                warm_up()  # sandboxes start now, not in the first rollout's first step
        except BaseException:
            env.close()
            raise
        return env

    def _serve(self) -> ServedEnvironment:
        served = self.served
        assert served is not None
        env = ServedEnvironment(served["url"], token=served["token"],
                                max_turns=self.max_turns or get(self.benchmark).max_turns,
                                wait=served["wait"])
        env.check(self.benchmark, self.dataset, self.reward_mode)  # a mismatch fails here
        return env

    def _drop(self) -> None:
        """Close a broken environment (a new one is made at the next reset)."""
        env, self.environment = self.environment, None
        if env is not None:
            try:
                env.close()
            except Exception as exc:
                log.warning("intercode: closing a failed environment: %s", _line(exc))

    def _failed(self, message: str) -> str:
        self._record_fault(message)
        self.over = True
        return f"error: {message}. This episode scores 0."

    def _record_fault(self, message: str) -> None:
        if self.fault is None:
            self.faults += 1
            log.warning("intercode (%s, task %s): %s", self.benchmark, self.task, message)
        self.fault = message


def environment_class(benchmark: str, dataset: str, *, reward: str = "success",
                      max_turns: int | None = None,
                      observation_chars: int = OBSERVATION_CHARS,
                      url: str | None = None, token: str | None = None, wait: float = 30.0,
                      **env_kwargs: Any) -> type[IntercodeTrlEnv]:
    """The environment class for ``GRPOTrainer(environment_factory=...)``.

    ``benchmark`` and ``dataset`` (a name or view, e.g. ``"nl2bash:clean:train"``) fix
    the tasks, ``reward`` the reward mode (``paper``, ``success``, ``baseline``),
    ``max_turns`` the actions an episode takes at most (default: the benchmark's own);
    ``env_kwargs`` go to :func:`intercode.make`. A wrong name or argument is a one-line
    :class:`~intercode.errors.ConfigError` here.

    ``url``: drive the environment an ``intercode serve openenv`` server serves there
    instead of one in process (its benchmark, dataset and ``--reward`` must be these,
    checked when an instance is made; ``env_kwargs`` are the server's own); ``token``
    its bearer token; ``wait`` the seconds an episode waits for a free session of a
    full server.
    """
    from intercode.rewards.modes import check_mode

    spec = get(benchmark)  # an unknown benchmark: one line
    check_mode(reward)
    served: dict[str, Any] | None = None
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "ws://",
                                                            "wss://")):
            raise ConfigError(f"url must be the server's http:// or ws:// address, got {url!r}")
        if env_kwargs:
            raise ConfigError(f"a served environment takes no environment arguments (the "
                              f"server chose them): {', '.join(sorted(env_kwargs))}")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
            raise ConfigError(f"wait must be a number of seconds >= 0, got {wait!r}")
        served = {"url": url, "token": token, "wait": float(wait)}
    if not isinstance(observation_chars, int) or observation_chars < 1:
        raise ConfigError(
            f"observation_chars must be a positive integer, got {observation_chars!r}")
    name = spec.name

    def execute(self: IntercodeTrlEnv, code: str) -> str:
        return self._execute(code)

    if spec.parsing.submit_argument:
        def submit(self: IntercodeTrlEnv, answer: str) -> str:
            return self._submit(answer)
    else:
        def submit(self: IntercodeTrlEnv) -> str:  # type: ignore[misc]
            return self._submit()

    execute.__doc__, submit.__doc__ = execute_doc(name), submit_doc(name)
    title = "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
    attributes: dict[str, Any] = {
        "benchmark": name, "dataset": dataset, "reward_mode": reward, "max_turns": max_turns,
        "observation_chars": observation_chars, "env_kwargs": dict(env_kwargs),
        "served": served,
        "execute": execute, "submit": submit, "__module__": __name__,
        "__doc__": f"The {name} benchmark on {dataset} for TRL ({reward} reward)."}
    for function in (execute, submit):
        function.__qualname__ = f"Intercode{title}TrlEnv.{function.__name__}"
    return type(f"Intercode{title}TrlEnv", (IntercodeTrlEnv,), attributes)


def _row_problem(row: dict[str, Any], benchmark: str, dataset: str) -> str | None:
    """Why ``row`` does not belong to this environment, if it does not."""
    if row.get("benchmark", benchmark) != benchmark:
        return f"it is a {row.get('benchmark')!r} task, this environment runs {benchmark}"
    if row.get("dataset", dataset) != dataset:
        return f"it is of the dataset {row.get('dataset')!r}, this environment runs {dataset}"
    task = row.get("task")
    if task is not None and (isinstance(task, bool) or not isinstance(task, int)):
        return f"its task must be an integer index, not {type(task).__name__}"
    return None


def _task_index(environment: gym.Env[str, str], asked: int | None) -> int:
    task = getattr(environment.unwrapped, "task", None)
    index = getattr(task, "index", asked)
    return int(index) if index is not None else -1


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]
