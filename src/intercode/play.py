"""``intercode play``: a person is the agent, in a terminal.

Type commands and see their output; ``submit`` scores the state and ends the task,
``skip`` ends it with 0, ``:score`` shows what submitting now would give, ``:help``
lists the commands. A line ending in ``\\`` continues on the next line. Ctrl-D quits.
"""

from __future__ import annotations

import time
from typing import Any

from intercode.benchmarks import get
from intercode.envs.base import IntercodeEnv
from intercode.envs.factory import create_env
from intercode.errors import TaskUnavailable
from intercode.sandbox.limits import Limits
from intercode.terminal import Terminal

__all__ = ["play"]

HELP = """commands:
  submit      score the current state and end the task
  skip        end the task without scoring (reward 0)
  :score      what submitting now would give (the task goes on)
  :task       show the task again
  :help       this text
  Ctrl-D      quit
A line ending in a backslash continues on the next line."""


def play(env_name: str, dataset: str, task: int | None, limits: Limits,
         term: Terminal | None = None, backend: str = "sqlite",
         mysql_url: str | None = None, network: bool | str = False) -> int:
    """Run play sessions until the person quits."""
    term = term or Terminal()
    try:
        import readline  # noqa: F401  (history and line editing for input())
    except ImportError:
        pass
    env = create_env(env_name, dataset, limits, sql_backend=backend, mysql_url=mysql_url,
                     network=network)
    try:
        while True:
            options = {"task": task} if task is not None else None
            if not play_one(env, term, options):
                return 0
            task = None
            if term.ask("next task? [y/N] ").strip().lower() not in ("y", "yes"):
                return 0
    except EOFError:
        term.say()
        return 0
    finally:
        env.close()


def play_one(env: IntercodeEnv, term: Terminal, options: dict[str, Any] | None) -> bool:
    """One task; ``False`` if the person quit."""
    try:
        query, info = env.reset(options=options)
    except TaskUnavailable as exc:
        term.say(f"task unavailable: {exc}", "red")
        return True
    term.say(f"\ntask {info['task']} of {info['dataset']}", "bold")
    if "database" in info:
        term.say(f"database {info['database']} ({info['dialect']})", "dim")
    term.say(query)
    term.say("(type :help for commands)", "dim")
    while True:
        try:
            line = term.ask(f"[{env.turn + 1}] {get(env.env_name).human_prompt} ")
        except KeyboardInterrupt:
            term.say("^C")
            continue
        except EOFError:
            return False
        command = line.strip()
        if not command:
            continue
        if command == ":help":
            term.say(HELP, "dim")
        elif command == ":task":
            term.say(query)
        elif command == ":score":
            evaluation = env.evaluate()
            show_score(term, evaluation.reward, evaluation.info, final=False)
        else:
            started = time.perf_counter()
            observation, reward, terminated, _, step_info = env.step(command)
            if step_info.get("submitted"):
                if not terminated:  # CTF: a wrong flag, the task goes on
                    term.say(observation, "red")
                    continue
                show_score(term, float(reward), step_info, final=True)
                return True
            if step_info.get("skipped"):
                term.say("skipped (reward 0)", "dim")
                return True
            if observation:
                term.say(observation.rstrip("\n"))
            elapsed = (time.perf_counter() - started) * 1000
            if step_info.get("timed_out"):
                status = "timed out"
            elif "rows" in step_info:
                status = "error" if step_info.get("error") else f"{step_info['rows']} rows"
            else:
                status = f"exit {step_info.get('exit_code')}"
            term.say(f"[{status} · {elapsed:.0f} ms]", "dim")
            if terminated:
                return True


def show_score(term: Terminal, reward: float, info: dict[str, Any], final: bool) -> None:
    """Print a reward and its parts."""
    parts = info.get("reward_parts") or {}
    detail = ", ".join(f"{k.replace('_', ' ')} " + ("n/a" if v is None else f"{v:.2f}")
                       for k, v in parts.items())
    solved = round(reward, 2) >= 1.0
    verdict = "solved" if solved else "not solved"
    prefix = "reward" if final else "score if submitted now"
    term.say(f"{prefix}: {reward:.2f} ({detail}) - {verdict}", "green" if solved else "red")
