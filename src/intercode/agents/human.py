"""The human policy: a person at the terminal is the agent of an ``eval`` run.

The task, then after every action its output, the score so far and the turn count.
``submit`` hands in (CTF: ``submit <flag>``; Python: ``submit [function]``), ``skip``
gives up the task, ``:task`` shows it again, ``:help`` lists this. In Python a line
ending in ``:`` opens a block that a blank line closes; elsewhere a trailing ``\\``
continues a line. Ctrl-D stops the run (finished episodes are saved; ``--resume`` goes
on from there).
"""

from __future__ import annotations

from intercode.agents.base import Action, Policy
from intercode.benchmarks import get
from intercode.datasets import Task
from intercode.terminal import Terminal

__all__ = ["HumanPolicy"]

HELP = """commands:
  submit      hand in (CTF: submit <flag>; Python: submit [function name])
  skip        give up this task
  :task       show the task again
  :help       this text
  Ctrl-D      stop the run (finished episodes are saved)"""


class HumanPolicy(Policy):
    """Reads actions from the terminal; shows output, score and turn."""

    name = "human"
    score_each_turn = True
    stop_at_success = True

    def __init__(self, env: str, term: Terminal | None = None) -> None:
        self.env = env
        if term is None:
            try:
                import readline  # noqa: F401  (history and line editing for input())
            except ImportError:
                pass
        self.term = term or Terminal()
        self.task: Task | None = None
        self.turn = 0

    def reset(self, task: Task) -> None:
        """Show the task."""
        self.task, self.turn = task, 0
        self.term.say(f"\ntask {task.index} of {task.dataset}", "bold")
        self.term.say(task.query)
        self.term.say("(:help lists the commands)", "dim")

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """Show the last output, then read the next action."""
        assert self.task is not None
        if self.turn:
            if observation.strip():
                self.term.say(observation.rstrip("\n"))
            score = "n/a" if reward is None else f"{reward:.2f}"
            style = "green" if reward is not None and reward >= 1 else "dim"
            self.term.say(f"[turn {self.turn} · score {score}]", style)
        while True:
            try:
                line = self._read()
            except EOFError:
                self.term.say()
                raise KeyboardInterrupt from None
            command = line.strip()
            if not command:
                continue
            if command == ":help":
                self.term.say(HELP, "dim")
            elif command == ":task":
                self.term.say(self.task.query)
            else:
                self.turn += 1
                return Action(command, submit=command.split()[0] == "submit")

    def _read(self) -> str:
        benchmark = get(self.env)
        prompt = f"[{self.turn + 1}] {benchmark.human_prompt} "
        if not benchmark.multiline_input:
            return self.term.ask(prompt)
        lines = [self.term.read(prompt)]
        if lines[0].rstrip().endswith(":"):
            while True:
                more = self.term.read("... ")
                if not more.strip():
                    break
                lines.append(more)
        return "\n".join(lines)
