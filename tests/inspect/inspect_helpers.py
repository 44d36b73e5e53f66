"""Helpers of the Inspect tests (imported by the test modules): a scripted mockllm (per query), runs through both paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from intercode.agents.base import Action, Policy
from intercode.benchmarks import get
from intercode.datasets import Task as IcTask
from intercode.datasets import load_dataset
from intercode.envs.factory import make_env
from intercode.envs.settings import EnvSettings
from intercode.runner.episode import run_episode

MODEL = "mockllm/model"
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download

# a reply: text (Try Again) or a tool call (name, arguments)
Reply = str | tuple[str, dict[str, Any]]


def output(reply: Reply) -> ModelOutput:
    if isinstance(reply, str):
        out = ModelOutput.from_content(MODEL, reply)
    else:
        out = ModelOutput.for_tool_call(MODEL, reply[0], reply[1])
    out.usage = USAGE
    return out


def scripted(scripts: dict[str, Sequence[Reply]]) -> Any:
    """mockllm whose replies follow the script of the task whose query the dialogue
    contains (samples run concurrently); past its script, a sample's model says nothing."""
    left = {query: list(replies) for query, replies in scripts.items()}

    def reply(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        text = "\n".join(m.text for m in messages if m.role in ("user", "system"))
        for query, replies in left.items():
            if query in text:
                return output(replies.pop(0) if replies else "I am done.")
        return output("I do not know the task.")

    return get_model(MODEL, custom_outputs=reply)


def run_inspect(task: Task, scripts: dict[str, Sequence[Reply]], log_dir: Any) -> EvalLog:
    log = inspect_eval(task, model=scripted(scripts), display="none", log_dir=str(log_dir),
                       max_samples=2)[0]  # the machine has 2 cores
    assert log.status == "success", log.error
    return log


def scores(log: EvalLog) -> dict[int, tuple[float, bool]]:
    """Each sample's (reward, success)."""
    return {i: (r, s) for i, (r, s, _) in details(log).items()}


def details(log: EvalLog) -> dict[int, tuple[float, bool, Any]]:
    """Each sample's (reward, success, the score's metadata and the transcript's end), for
    messages that say why a number differs."""
    out = {}
    for sample in log.samples or []:
        score = sample.scores["intercode_scorer"]
        seen = [m.text[-300:] for m in sample.messages[-3:]]
        out[int(sample.id)] = (float(score.value), bool(score.metadata["success"]),
                               {"score": score.metadata, "last_messages": seen})
    return out


def fenced(env: str, code: str) -> str:
    return f"```{get(env).prompting.language}\n{code}\n```"


def tasks(dataset: str, indices: Sequence[int]) -> dict[int, IcTask]:
    d = load_dataset(dataset)
    return {i: d[i] for i in indices}


class Script(Policy):
    """intercode's side: the same actions as a policy (``submit ...`` submits)."""

    name = "script"

    def __init__(self, actions: Sequence[str], try_again: bool = True) -> None:
        self.actions = list(actions)
        self.score_each_turn = try_again
        self.stop_at_success = try_again

    def reset(self, task: IcTask) -> None:
        self.left = list(self.actions)

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        if not self.left:
            return None
        text = self.left.pop(0)
        return Action(text, submit=text.split()[0] == "submit")


def run_intercode(env: str, dataset: str, index: int, actions: Sequence[str],
                  try_again: bool = True, turns: int = 10,
                  sandbox: str = "bwrap") -> tuple[float, bool]:
    """The reward and success ``intercode eval`` records for these actions."""
    e = make_env(env, dataset, EnvSettings(sandbox=sandbox))
    try:
        record = run_episode(e, index, Script(actions, try_again), max_turns=turns)
    finally:
        e.close()
    assert record.status == "ok", record.error
    return float(record.reward or 0.0), bool(record.success)
