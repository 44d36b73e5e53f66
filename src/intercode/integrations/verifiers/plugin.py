"""The verifiers (0.4) plugin classes: intercode's taskset, task, harness and environment.

Importing this module imports verifiers; the package ``intercode.integrations.verifiers``
does not. verifiers 0.4 resolves a taskset id to a module (``import_module(id)`` after
``-`` becomes ``_``) that exports, in ``__all__``, one :class:`~verifiers.v1.Taskset`
subclass, optionally one :class:`~verifiers.v1.Harness` subclass (then the default
harness of its tasks) and one :class:`~verifiers.v1.Env` subclass (then the environment
of its runs). A dotted id cannot be resolved (verifiers looks for it under
``verifiers.v1.tasksets`` first, and that lookup fails on a dotted name), so the
top-level module :mod:`intercode_verifiers` (installed with intercode) exports these
classes: the taskset id is ``intercode_verifiers`` (or ``intercode-verifiers``).

- :class:`IntercodeTaskset`: one task per runnable task of a dataset (or view), worded
  as the native tool-calling agent's prompt (the TRL integration's
  :func:`~intercode.integrations.trl.training_rows`); its config holds the benchmark,
  dataset, reward mode, turn limit and the environment's arguments.
- :class:`IntercodeHarness`: runs the tool-calling loop in process (verifiers allows a
  harness that does, as long as every model call goes through the rollout's
  interception endpoint, which records the turns): the model's ``execute``/``submit``
  calls run on a warm intercode environment of the process's pool, in a thread.
- :class:`IntercodeTask`: scores the rollout with intercode's reward (reward
  ``intercode``) and records ``submitted``, ``turns`` and ``fault`` as metrics.
- :class:`IntercodeEnv`: the single-agent environment, its agent on the local
  ``subprocess`` runtime (the code runs in intercode's own sandboxes, not there).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from intercode.errors import ConfigError
from intercode.integrations.trl.dataset import training_rows
from intercode.integrations.verifiers.episode import Outcome, play
from intercode.integrations.verifiers.pool import PoolKey, pool_for

__all__ = ["IntercodeEnv", "IntercodeEnvConfig", "IntercodeHarness", "IntercodeHarnessConfig",
           "IntercodeState", "IntercodeTask", "IntercodeTaskData", "IntercodeTaskset",
           "IntercodeTasksetConfig"]

log = logging.getLogger(__name__)


class IntercodeTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which tasks, and how their environments are made."""

    benchmark: str = "bash"
    """The benchmark (``bash``, ``sql``, ``python``, ``ctf``, ``swe``)."""
    dataset: str | None = None
    """A dataset name or view (``nl2bash:clean:train``); the benchmark's default if unset."""
    reward: str = "paper"
    """The reward mode: ``paper``, ``success`` or ``baseline``."""
    max_turns: int | None = None
    """Tool calls an episode takes at most (the benchmark's own if unset)."""
    observation_chars: int | None = None
    """What a tool result shows of an output, at most (the TRL integration's default,
    1000 characters, if unset)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """More arguments of :func:`intercode.make` (e.g. ``{"backend": "docker"}``)."""


class IntercodeTaskData(vf.TaskData):
    """One intercode task and what its environment is made with."""

    benchmark: str
    dataset: str
    task: int
    """The task's index in the dataset (or view)."""
    reward: str = "paper"
    max_turns: int | None = None
    observation_chars: int | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class IntercodeState(vf.State):
    """What the harness leaves for the task's scoring."""

    reward: float = 0.0
    turns: int = 0
    submitted: bool = False
    fault: str | None = None


class IntercodeTask(vf.Task[IntercodeTaskData, IntercodeState]):
    """An intercode task: scored with the reward the episode earned."""

    @property
    def key(self) -> str:
        return f"{self.data.benchmark}/{self.data.dataset}/{self.data.task}"

    @vf.reward
    async def intercode(self, trace: vf.Trace) -> float:
        """intercode's reward in the taskset's mode (0.0 after an environment failure)."""
        return float(getattr(trace.state, "reward", 0.0))

    @vf.metric
    async def episode(self, trace: vf.Trace) -> dict[str, float]:
        """Whether the model submitted, its tool calls, and whether the environment failed."""
        state = trace.state
        return {"submitted": float(getattr(state, "submitted", False)),
                "turns": float(getattr(state, "turns", 0)),
                "fault": float(getattr(state, "fault", None) is not None)}


class IntercodeTaskset(vf.Taskset[IntercodeTask, IntercodeTasksetConfig]):
    """The runnable tasks of one intercode dataset (or view), in task order."""

    def __init__(self, config: IntercodeTasksetConfig) -> None:
        from intercode.benchmarks import get
        from intercode.rewards.modes import check_mode

        super().__init__(config)
        spec = get(config.benchmark)  # an unknown benchmark: one line
        check_mode(config.reward)
        if config.max_turns is not None and (isinstance(config.max_turns, bool)
                                             or config.max_turns < 1):
            raise ConfigError(f"max_turns must be a positive integer, got {config.max_turns!r}")
        if config.observation_chars is not None and config.observation_chars < 1:
            raise ConfigError("observation_chars must be a positive integer, "
                              f"got {config.observation_chars!r}")
        self.benchmark = spec.name
        self.dataset = config.dataset or spec.default_dataset
        # read now: a wrong dataset or argument is an error where the environment is made
        self._rows = training_rows(self.benchmark, self.dataset, **config.env_kwargs)

    def load(self) -> Iterable[IntercodeTask]:
        settings = {"reward": self.config.reward, "max_turns": self.config.max_turns,
                    "observation_chars": self.config.observation_chars,
                    "env_kwargs": dict(self.config.env_kwargs)}
        for row in self._rows:
            system, user = row["prompt"]
            data = IntercodeTaskData(
                id=f"{self.dataset}/{row['task']}", prompt=user["content"],
                system_prompt=system["content"], benchmark=row["benchmark"],
                dataset=row["dataset"], task=row["task"], **settings)
            yield IntercodeTask(data, self.config.task)


class IntercodeHarnessConfig(vf.HarnessConfig):
    """The in-process tool-calling loop has no knobs of its own."""


class IntercodeHarness(vf.Harness[IntercodeHarnessConfig]):
    """The tools agent's loop, in process, on a warm intercode environment per rollout."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False  # the code runs in intercode's sandboxes, not in the runtime
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime,
                     endpoint: str, secret: str, mcp_urls: dict[str, str],
                     data: vf.TaskData) -> vf.ProgramResult:
        from openai import APIStatusError, AsyncOpenAI

        from intercode.agents import prompts

        fields = data.model_dump()
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt if isinstance(prompt, str)
                         else data.prompt_text})
        client = AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)

        async def chat(conversation: list[dict[str, Any]]) -> dict[str, Any] | None:
            try:
                completion = await client.chat.completions.create(
                    model=ctx.model, messages=conversation,  # type: ignore[arg-type]
                    tools=prompts.tools(fields["benchmark"]))  # type: ignore[arg-type]
            except APIStatusError:
                if trace.stop_condition is not None:  # verifiers refused the turn (a limit)
                    return None
                raise  # the model's endpoint failed: the rollout's error, not a score
            if not completion.choices:
                return {"role": "assistant", "content": ""}
            return completion.choices[0].message.model_dump(exclude_none=True)

        try:
            outcome = await _episode(fields, messages, chat)
        finally:
            await client.close()
        state = trace.state
        if isinstance(state, IntercodeState):
            state.reward, state.turns = outcome.reward, outcome.turns
            state.submitted, state.fault = outcome.submitted, outcome.fault
        return vf.ProgramResult(exit_code=0, stdout="", stderr=outcome.fault or "")


async def _episode(fields: dict[str, Any], messages: list[dict[str, Any]],
                   chat: Any) -> Outcome:
    """The episode of the task ``fields`` describes; a failure of the environment (its
    pool, its making, its running) is the outcome's fault, scored 0.0, never raised."""
    try:
        env_kwargs = dict(fields.get("env_kwargs") or {})
        key = PoolKey.of(fields["benchmark"], fields["dataset"], fields["reward"],
                         fields["max_turns"], fields["observation_chars"], env_kwargs)
        pool = pool_for(key, env_kwargs)
        env = await pool.acquire()
    except Exception as exc:
        fault = f"the environment could not be made: {_line(exc)}"
        log.warning("intercode (%s, task %s): %s", fields.get("benchmark"),
                    fields.get("task"), fault)
        return Outcome(0.0, 0, False, fault)
    try:
        row = {"benchmark": fields["benchmark"], "dataset": fields["dataset"],
               "task": fields["task"]}
        return await play(pool, env, row, messages, chat)
    finally:
        pool.release(env)


class IntercodeEnvConfig(vf.EnvConfig):
    """The single agent, on the local ``subprocess`` runtime by default."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class IntercodeEnv(vf.Env[IntercodeEnvConfig]):
    """One agent plays each task (as verifiers' ``SingleAgentEnv``)."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


def _line(exc: BaseException) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:300]
