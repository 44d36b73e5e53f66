"""The Node.js environment: write a JavaScript function in a persistent, sandboxed
interpreter; hidden tests (calls and expected values, as data) score it.

The agent's code runs in ``repl.js`` inside a sandbox of the chosen backend (bubblewrap,
Docker or a plugin's: ``backend``, ``--sandbox``). To score a function the
host sends the tests' calls (never their expected values) to the agent's interpreter, which
replies with each call's value as typed JSON; the host compares the values with the expected
ones. Every field of the reply is the agent's word: a reply that is not what was asked for
fails the tests it covers, and a value can only be claimed if the function returns it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intercode.datasets.tasks import Dataset, Task
from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.errors import ConfigError, RewardError, SandboxError
from intercode.sandbox import Sandbox, create_sandbox, require_backend
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits
from intercode.sandbox.rootfs import default_root

HERE = Path(__file__).resolve().parent
PACKAGES = ("nodejs",)  # what the sandbox's root adds (the benchmark declares the same)
REPL = (HERE / "repl.js").read_text(encoding="utf-8")
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*\Z")
DEFINED = re.compile(r"^\s*(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(|"
                     r"^\s*(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?"
                     r"(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)", re.M)


@dataclass(frozen=True)
class NodeTask(Task):
    """A function to write: ``entry_point`` is its name; each test is ``{"call": JS
    expression, "expected": JSON value}``."""

    entry_point: str = ""
    tests: tuple[dict[str, Any], ...] = ()


def load(name: str) -> Dataset:
    """The package's ``tasks.jsonl`` as the dataset ``name``."""
    path = HERE / "tasks.jsonl"
    tasks = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        example = row["tests"][0]
        query = (f"{row['query']} For example, {example['call']} returns "
                 f"{json.dumps(example['expected'])}.")
        tasks.append(NodeTask(index=i, query=query, gold=row["gold"], dataset=name,
                              source="tasks.jsonl", source_index=i,
                              entry_point=row["entry_point"], tests=tuple(row["tests"])))
    return Dataset(name=name, env="node", tasks=tuple(tasks), revision="1",
                   description="JavaScript functions checked by hidden tests")


def defined_functions(code: str) -> list[str]:
    """Names of the functions an action defines at the start of a line, in order."""
    return [a or b for a, b in DEFINED.findall(code)]


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JavaScript sees JSON (1 == 1.0; true != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isfinite(a) and math.isfinite(b) and float(a) == float(b)
    if (isinstance(a, str) and isinstance(b, str)) or (a is None and b is None):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


class NodeEnv(IntercodeEnv):
    """``gymnasium.make("intercode/node-v0")``: actions are JavaScript; ``submit <name>``
    scores the function ``name`` (without a name: the last function an action defined).
    Each test call gets ``test_timeout`` seconds."""

    env_name = "node"

    def __init__(self, dataset: str | Dataset = "node-basic", *, limits: Limits | None = None,
                 layout: Layout | None = None, test_timeout: float = 2.0,
                 node: str = "/usr/bin/node", backend: str = "bwrap",
                 render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        self.limits = limits or Limits()
        self.backend = require_backend(backend)
        # the pinned root with Node.js (bubblewrap mounts it; Docker runs an image of it)
        self.layout = layout or Layout(rootfs=default_root("base", PACKAGES),
                                       image_packages=PACKAGES)
        self.test_timeout = test_timeout
        self.node = node
        self._box: Sandbox | None = None
        self._functions: list[str] = []

    def unavailable(self, task: Task) -> str | None:
        """Node.js must be installed."""
        return None if Path(self.node).is_file() else f"Node.js is not installed ({self.node})"

    def _sandbox(self) -> Sandbox:
        if self._box is None or not self._box.alive:
            if self._box is not None:
                self._box.close()
            argv = [self.node, "-e", REPL, str(self.limits.timeout)]
            self._box = create_sandbox(self.backend, self.limits, self.layout, shell=argv)
            self._box.start()
            self._box.load(FileTree.of([]))
        return self._box

    def warm_up(self) -> None:
        """Start the sandbox."""
        self._sandbox()

    def load_task(self, task: Task) -> None:
        """A fresh interpreter."""
        if not isinstance(task, NodeTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a Node.js task")
        self._sandbox().reset()
        self._functions = []

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run JavaScript in the interpreter."""
        result = self._sandbox().run(action)
        defined = defined_functions(action)
        if result.exit_code == 0 and defined:
            self._functions.append(defined[-1])
        info = {"exit_code": result.exit_code, "action_executed": result.exit_code == 0,
                "timed_out": result.timed_out, "output_truncated": result.output_truncated,
                "shell_restarted": result.shell_restarted, "defined": defined}
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
        """Try Again: the score of submitting the last function defined."""
        return self._score(None)

    def _score(self, name: str | None) -> Evaluation:
        task = self.task
        assert isinstance(task, NodeTask)
        name = name or (self._functions[-1] if self._functions else None)
        if name is None or not IDENTIFIER.match(name):
            return Evaluation(0.0, False, {"submitted_function": name, "all_pass": False,
                                           "note": "no function to test"})
        passed = self.test_results(name)
        correct = sum(passed)
        reward = correct / len(passed) if passed else 0.0
        info = {"submitted_function": name, "tests_correct": correct,
                "tests_total": len(passed), "all_pass": correct == len(passed),
                "reward_parts": {"tests": reward}}
        return Evaluation(reward, correct == len(passed), info)

    def test_results(self, name: str) -> list[bool]:
        """Per test: whether the function ``name`` returned the expected value."""
        task = self.task
        assert isinstance(task, NodeTask)
        entry = task.entry_point
        # the calls name the task's entry point: bind it to the submitted function
        calls = [f"(({entry}) => (\n{t['call']}\n))({name})" for t in task.tests]
        values = self.probe(calls)
        passed = []
        for value, test in zip(values, task.tests, strict=True):
            try:
                passed.append(value is not None and same(value[0], test["expected"]))
            except RecursionError:  # nested deeper than any expected value
                passed.append(False)
        return passed

    def probe(self, calls: list[str]) -> list[tuple[Any] | None]:
        """Per call, ``(value,)`` as the interpreter reported it, or None (an error, a value
        that is not exactly JSON, a reply that is not what was asked for)."""
        budget = self.limits.output // 4
        request = {"calls": calls, "timeout": self.test_timeout, "budget": budget}
        try:
            result = self._sandbox().run(json.dumps(request),
                                         timeout=self.test_timeout * len(calls) + 10.0,
                                         kind="probe")
        except SandboxError as exc:
            raise RewardError(f"could not run the tests: {exc}") from exc
        if len(result.output) > 2 * budget:
            return [None] * len(calls)
        replies = _last_json(result.output)
        if not isinstance(replies, list) or len(replies) != len(calls):
            return [None] * len(calls)
        return [(r["v"],) if isinstance(r, dict) and "v" in r else None for r in replies]

    def close(self) -> None:
        """Stop the sandbox."""
        if self._box is not None:
            self._box.close()
            self._box = None
        super().close()


def _last_json(text: str) -> Any:
    """The last line of ``text`` that is JSON (None if it is not well-formed)."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("["):
            try:
                return json.loads(line)
            except (ValueError, RecursionError):
                return None
    return None
