"""Best-of-n with backtracking on Try Again rewards, built on environment snapshots.

At every turn the agent asks the model for ``n`` candidate actions from the current
state; each runs from a restore of that state, and the Try Again reward (what
submitting then would give) scores it. The best candidate's state becomes the current
one; when no candidate beats the best state so far, the search backtracks to it. It
stops at a reward of 1 or after ``turns`` turns, and leaves the environment in the best
state found (``env.unwrapped.snapshot/restore``, docs/snapshots.md).

Run against any OpenAI-compatible server, or, without ``--base-url``, against the
scripted server with a demo "model" that rotates a useless command, a harmful one and
the task's gold (mechanics only, not a model's skill):

    python examples/best_of_n.py --env sql --task 0 --n 3 --turns 3
    python examples/best_of_n.py --env bash --base-url http://127.0.0.1:8000/v1 --model m
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import intercode
from intercode import testing
from intercode.agents import parsing, prompts
from intercode.envs.base import IntercodeEnv
from intercode.envs.snapshot import Snapshot
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.gold_responder import LOOK_AROUND, GoldResponder
from intercode.llm.scripted_server import Reply, ScriptedChatServer

#: A command per action language that makes things worse (a demo candidate).
HARMFUL = {"sql": "SELECT 0", "bash": "echo junk > /tmp/junk",
           "python": "def wrong(*args):\n    return None"}


@dataclass
class Branch:
    """A state reached by the search: its snapshot, reward and the steps to it."""

    snap: Snapshot
    reward: float
    steps: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass
class Outcome:
    """What the search found, and what it cost."""

    reward: float
    steps: list[tuple[str, str, float]]
    calls: int
    restores: int
    backtracks: int


def messages(env: IntercodeEnv, steps: list[tuple[str, str, float]]) -> list[dict[str, str]]:
    """The Try Again conversation of one branch."""
    name, query = env.env_name, env.task.query if env.task else ""
    chat = [{"role": "system", "content": prompts.try_again_system(name)},
            {"role": "user", "content": prompts.try_again_query(name, query)}]
    for action, observation, reward in steps:
        chat.append({"role": "assistant", "content": action})
        chat.append({"role": "user", "content": prompts.try_again_observation(
            name, query, observation, reward)})
    return chat


def search(env: IntercodeEnv, client: ChatClient, n: int, turns: int) -> Outcome:
    """Best-of-``n`` with backtracking from the environment's current (reset) state."""
    best = current = Branch(env.snapshot(), env.evaluate().reward)
    calls = restores = backtracks = 0
    for _turn in range(turns):
        if best.reward >= 1.0:
            break
        chat = messages(env, current.steps)
        tried: list[Branch] = []
        for _ in range(n):
            calls += 1
            parsed = parsing.parse_code(client.complete(chat).text, env.env_name)
            if parsed.kind != "code":
                continue
            env.restore(current.snap)
            restores += 1
            observation, *_ = env.step(parsed.text)
            reward = env.evaluate().reward
            steps = [*current.steps, (parsed.text, observation, reward)]
            tried.append(Branch(env.snapshot(), reward, steps))
        top = max(tried, key=lambda b: b.reward, default=None)
        for branch in tried:
            if branch is not top:
                branch.snap.release()
        if top is not None and top.reward > best.reward:
            best = current = top
        else:  # nothing better: go back to the best state and branch from it again
            if top is not None:
                top.snap.release()
            current = best
            backtracks += 1
    env.restore(best.snap)
    restores += 1
    return Outcome(best.reward, best.steps, calls, restores, backtracks)


class DemoResponder:
    """Rotates a useless command, a harmful one and the gold (per task, thread-safe)."""

    def __init__(self, gold: GoldResponder) -> None:
        self.gold = gold
        self.count = itertools.count()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        task = self.gold._task(request.get("messages") or [])
        if task is None:
            return Reply("I cannot tell which task this is.")
        language = self.gold.benchmark.prompting.language.lower()
        with self.lock:
            turn = next(self.count) % 3
        code = (LOOK_AROUND.get(language, "ls"), HARMFUL.get(language, "true"),
                self.gold._code(task))[turn]
        return Reply(self.gold._fenced(code))


def run(env_name: str, task: int, n: int, turns: int, base_url: str | None = None,
        model: str = "scripted", dataset: str | None = None) -> Outcome:
    """Search one task; with no ``base_url``, against the scripted demo server."""
    env = intercode.make(env_name, dataset=dataset or testing.small_dataset(env_name)).unwrapped
    assert isinstance(env, IntercodeEnv)
    try:
        env.reset(options={"task": task})
        if base_url is not None:
            return search(env, ChatClient(ModelConfig(model, base_url=base_url)), n, turns)
        with ScriptedChatServer(DemoResponder(GoldResponder(env.dataset))) as server:
            return search(env, ChatClient(ModelConfig(model, base_url=server.url)), n, turns)
    finally:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="sql", choices=["bash", "sql", "python", "ctf"])
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--n", type=int, default=3, help="candidates per turn")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default="scripted")
    args = parser.parse_args()
    if args.n < 1 or args.turns < 1:
        parser.error("--n and --turns must be at least 1")
    try:
        out = run(args.env, args.task, args.n, args.turns, args.base_url, args.model,
                  args.dataset)
    except intercode.IntercodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for action, _observation, reward in out.steps:
        print(f"{reward:.2f}  {action}")
    print(f"best reward {out.reward:.2f} after {out.calls} model calls, {out.restores} "
          f"restores, {out.backtracks} backtracks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
