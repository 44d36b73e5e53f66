"""The Python environment: MBPP tasks in a persistent, sandboxed interpreter.

The agent's code runs in a Python interpreter inside a bubblewrap sandbox (never in
this process), with the same isolation and limits as the Bash environment. Tests run
in a fork of the agent's interpreter, so scoring never changes its state; the gold
runs in a fork of a fresh interpreter in a second sandbox.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from intercode.datasets import Dataset, PythonTask, Task
from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.errors import ConfigError, RewardError, SandboxError
from intercode.rewards.python import Outcome, PythonReward, python_reward
from intercode.sandbox.base import Sandbox
from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits

EMPTY = FileTree.of([])


def defined_functions(source: str) -> list[str]:
    """Names of the functions an action defines at top level, in order."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


class PythonEnv(IntercodeEnv):
    """``gymnasium.make("intercode/python-v0", dataset="mbpp")``.

    Actions are Python code (statements, definitions, expressions); ``submit <name>``
    scores the function ``name``. Without a name, and under Try Again, the candidate is
    the first function of the latest action that defined functions (upstream took the
    first ``def`` of the action).
    Each test statement gets its own time limit (``test_timeout`` seconds).
    """

    env_name = "python"

    def __init__(self, dataset: str | Dataset = "mbpp", *, limits: Limits | None = None,
                 layout: Layout | None = None, test_timeout: float = 5.0,
                 upstream_quirks: bool = False, render_mode: str | None = None) -> None:
        """``upstream_quirks`` reproduces upstream's Try Again scoring for comparisons:
        only an action starting with ``def`` is scored (its first function), and after
        each scoring the agent's interpreter holds the gold's namespace, because upstream
        reset it and ran the gold in it."""
        super().__init__(dataset, render_mode=render_mode)
        self.upstream_quirks = upstream_quirks
        self.limits = limits or Limits()
        self.layout = layout or Layout()
        self.test_timeout = test_timeout
        self._boxes: dict[str, Sandbox] = {}
        self._functions: list[str] = []
        self._gold: list[Outcome] | None = None

    def _sandbox(self, which: str) -> Sandbox:
        box = self._boxes.get(which)
        if box is None or not box.alive:
            if box is not None:
                box.close()
            box = BwrapSandbox(self.limits, self.layout, shell="python")
            box.start()
            box.load(EMPTY)
            self._boxes[which] = box
        return box

    def warm_up(self) -> None:
        """Start both sandboxes."""
        self._sandbox("agent")
        self._sandbox("gold")

    def load_task(self, task: Task) -> None:
        """A fresh interpreter."""
        if not isinstance(task, PythonTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a Python task")
        self._sandbox("agent").reset()
        self._functions = []
        self._gold = None

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run code in the interpreter."""
        result = self._sandbox("agent").run(action)
        defined = defined_functions(action)
        if result.exit_code == 0 and defined:
            self._functions.append(defined[0])
        info = {"exit_code": result.exit_code, "action_executed": result.exit_code == 0,
                "timed_out": result.timed_out, "output_truncated": result.output_truncated,
                "shell_restarted": result.shell_restarted,
                "defined": defined_functions(action)}
        return result.observation, info

    def parse_submit(self, action: str) -> tuple[bool, str | None]:
        """``submit`` or ``submit <function name>``."""
        parts = action.split()
        if parts and parts[0] == self.submit_keyword and len(parts) <= 2:
            return True, parts[1] if len(parts) == 2 else None
        return False, None

    def submit(self, argument: str | None) -> Evaluation:
        """Score the named function (or the last one defined)."""
        return self._score(argument)

    def evaluate(self) -> Evaluation:
        """Try Again: the score of submitting the latest candidate function."""
        if not self.upstream_quirks:
            return self._score(None)
        last = self.history[-1][0].strip() if self.history else ""
        m = re.match(r"def (\w+)\(", last)
        if m is None:
            return Evaluation(0.0, False, {"note": "upstream scored only actions "
                                                   "starting with def"})
        result = self._score(m.group(1))
        self._leak_gold()
        return result

    def _leak_gold(self) -> None:
        """Upstream's state after scoring: a reset interpreter that ran setup and gold."""
        assert isinstance(self.task, PythonTask)
        box = self._sandbox("agent")
        box.reset()
        box.run(self.task.test_setup_code)
        box.run(self.task.gold)

    def _score(self, name: str | None) -> Evaluation:
        assert isinstance(self.task, PythonTask)
        name = name or (self._functions[-1] if self._functions else None)
        info: dict[str, Any]
        if name is None or not name.isidentifier():
            info = {"submitted_function": name, "note": "no function to test", "all_pass": False}
            return Evaluation(0.0, False, info)
        reward = self.reward(name)
        info = {"submitted_function": name, "tests_correct": reward.correct,
                "tests_total": reward.total, "all_pass": reward.all_pass,
                "reward_parts": {"tests": reward.reward}}
        return Evaluation(reward.reward, reward.success, info)

    def reward(self, name: str) -> PythonReward:
        """Run the tests on ``name`` (bound to the gold's entry point) and on the gold."""
        task = self.task
        assert isinstance(task, PythonTask)
        steps = [f"{task.entry_point} = {name}", task.test_setup_code]
        pred = self._outcomes("agent", steps, task.tests, allow_failure=True)
        return python_reward(pred, self.gold_outcomes())

    def gold_outcomes(self) -> list[Outcome]:
        """The tests' outcomes with the gold (once per episode)."""
        if self._gold is None:
            task = self.task
            assert isinstance(task, PythonTask)
            self._gold = self._outcomes("gold", [task.test_setup_code, task.gold], task.tests,
                                        allow_failure=False)
        return self._gold

    def _outcomes(self, which: str, steps: list[str], tests: tuple[str, ...],
                  allow_failure: bool) -> list[Outcome]:
        request = json.dumps({"steps": steps, "tests": list(tests),
                              "timeout": self.test_timeout})
        budget = self.test_timeout * (len(tests) + len(steps)) + 10.0
        try:
            result = self._sandbox(which).run(request, timeout=budget, kind="eval")
        except SandboxError as exc:
            raise RewardError(f"could not run the tests: {exc}") from exc
        outcomes = _last_json(result.output)
        if isinstance(outcomes, list) and len(outcomes) == len(tests):
            return outcomes
        if not allow_failure:
            raise RewardError(f"the gold's tests did not report: {result.observation[-300:]}")
        why = "Error: the interpreter did not report the test results"
        return [{"error": why} for _ in tests]

    def close(self) -> None:
        """Stop both sandboxes."""
        for box in self._boxes.values():
            box.close()
        self._boxes = {}
        super().close()


def _last_json(text: str) -> Any:
    for line in reversed(text.strip().splitlines()):
        if line.startswith(("[", "{")):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None
