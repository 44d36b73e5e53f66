"""The Python environment: MBPP tasks in a persistent, sandboxed interpreter.

The agent's code runs in a Python interpreter inside a bubblewrap sandbox (never in
this process), with the same isolation and limits as the Bash environment. The gold
runs in a fork of a fresh interpreter in a second sandbox that never runs agent code.
To score a function, a fork of the agent's interpreter evaluates only the tests'
sub-expressions that need its namespace (the calls, with the tests' inputs) and reports
their values as typed data; the tests themselves (comparisons, expected values) run in
a fork of the gold's interpreter on those values (see ``rewards.python_split``).
APPS problems (``--dataset apps``) hand in a program file instead, run by a third
sandbox and compared on the host (see ``envs.python_apps``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import re
from dataclasses import asdict
from functools import lru_cache, partial
from typing import Any, Self

from intercode.datasets import Dataset, PythonTask, Task
from intercode.datasets.apps import AppsTask
from intercode.envs import arguments, python_apps, sandbox_state
from intercode.envs import gold_cache as gold_store
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.info import ActionInfo
from intercode.envs.outcome_memo import OutcomeMemo, question_digest
from intercode.envs.outcome_store import OutcomeStore
from intercode.envs.settings import EnvSettings
from intercode.errors import (
    ConfigError,
    RewardError,
    SandboxError,
    SandboxSpentError,
    SnapshotError,
)
from intercode.execstate import ExecState, NoState
from intercode.rewards.python import Outcome, PythonReward, python_reward
from intercode.rewards.python_split import BUILTIN_NAMES, SplitTest, defined_names, split_test
from intercode.sandbox import create_sandbox, require_backend
from intercode.sandbox.base import ExecResult, Sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits

__all__ = ["PythonCore"]

EMPTY = FileTree.of([])
# the deepest nesting of a probe's reply used: a typed value nests at most three levels of
# JSON per level of its own (a dict: its object, its pairs, a pair), and its own levels
# stop at ``pyvalue.MAX_DEPTH`` (100); deeper, the host's own serializations of it (the
# judge's request, the memo's keys) would reach Python's recursion limit, a forged reply
# turning the agent's failure into an error of the run
REPLY_DEPTH = 400
# the code that decides the gold's outcomes besides the sandbox's (an entry of the outcome
# store made by other code is never used)
STORE_CODE = ("intercode.envs.core.python", "intercode.envs.outcome_store",
              "intercode.envs.outcome_memo", "intercode.rewards.python")


def defined_functions(source: str) -> list[str]:
    """Names of the functions an action defines at top level, in order."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


SPENT = ("the Python interpreter could not be restarted in this sandbox (a process of the "
         "episode killed the sandbox's interpreter zygote); a new sandbox is started for the "
         "next action (files, variables, functions and imports were lost)")


class PythonCore(EnvCore):
    """The Python environment without Gymnasium (see :class:`intercode.envs.python.PythonEnv`,
    this and :class:`~intercode.envs.base.IntercodeEnv`)."""

    env_name = "python"

    @classmethod
    def from_settings(cls, dataset: str | Dataset, settings: EnvSettings) -> Self:
        """Limits, upstream quirks and the per-test time limit of the settings."""
        test_timeout = 5.0 if settings.test_timeout is None else settings.test_timeout
        return cls(dataset, limits=settings.limits, upstream_quirks=settings.upstream_quirks,
                   test_timeout=test_timeout, backend=settings.sandbox,
                   gold_cache=settings.gold_cache)

    def __init__(self, dataset: str | Dataset = "mbpp", *, limits: Limits | None = None,
                 layout: Layout | None = None, test_timeout: float = 5.0,
                 backend: str = "bwrap", upstream_quirks: bool = False,
                 gold_cache: bool = True, render_mode: str | None = None) -> None:
        """``gold_cache``: keep the gold's test outcomes on disk across runs, and use
        them (see :mod:`intercode.envs.outcome_store`). ``upstream_quirks`` reproduces
        upstream's Try Again scoring for comparisons: only an action starting with ``def``
        is scored (its first function), and after each scoring the agent's interpreter
        holds the gold's namespace, because upstream reset it and ran the gold in it. The
        gold's code then reaches the agent (never the tests' expected values): that mode
        is for replaying recorded runs, not training."""
        super().__init__(dataset, render_mode=render_mode)
        self.upstream_quirks = arguments.flag("upstream_quirks", upstream_quirks)
        self.limits = arguments.optional("limits", limits, Limits) or Limits()
        self.layout = arguments.optional("layout", layout, Layout) or Layout()
        self._limit_observations(self.limits.output + NOTE_CHARS)  # outputs are cut there
        self.backend = require_backend(backend)
        if not (isinstance(test_timeout, int | float) and 0 < test_timeout <= 3600):
            raise ConfigError(f"test_timeout must be a number of seconds in (0, 3600], "
                              f"not {test_timeout!r}")
        self.test_timeout = float(test_timeout)
        self._boxes: dict[str, Sandbox] = {}
        self._booting = False  # the agent's sandbox was begun by _prestart()
        self._functions: list[str] = []
        self._replayed: list[str] = []  # a warm spare's actions replayed ahead of a fork
        self._gold: list[Outcome] | None = None
        self._memo = OutcomeMemo()  # the gold's side's answers, by question
        arguments.flag("gold_cache", gold_cache)
        # the gold's outcomes kept across runs, and what their keys hold besides the request
        self._store = OutcomeStore() if gold_store.enabled(gold_cache) else None
        self._store_settings: dict[str, Any] | None = None
        self._splits: list[SplitTest] | None = None
        self._cwd = "/"  # the interpreter's working directory after the latest action

    def _sandbox(self, which: str) -> Sandbox:
        box = self._boxes.get(which)
        if which == "agent" and self._booting:  # begun by _prestart(): finish it
            self._booting = False
            if box is not None:
                box.finish_begun(partial(box.load, EMPTY))  # (died: a new one starts below)
        if box is None or not box.alive:
            if box is not None:
                box.close()
            box = create_sandbox(self.backend, self.limits, self.layout, shell="python")
            box.start()
            box.load(EMPTY)
            self._boxes[which] = box
        return box

    def _spent(self) -> ExecResult:
        """The agent's sandbox could not restart its interpreter (the agent killed the
        interpreters' zygote, see ``inbox/zygote.py``): drop it, the next use starts a
        new one. The agent's outcome: its interpreter and files are lost."""
        box = self._boxes.pop("agent", None)
        if box is not None:
            box.close()
        return ExecResult(output="", exit_code=None, shell_restarted=True, notes=(SPENT,))

    def _reset_agent(self) -> Sandbox:
        """Reset the agent's sandbox; one whose interpreters can no longer be made clean
        (its zygote was killed by the agent: see ``inbox/zygote.py``) is replaced."""
        box = self._sandbox("agent")
        try:
            box.reset()
        except SandboxSpentError:
            self._spent()
            box = self._sandbox("agent")  # a new sandbox, loaded: a fresh interpreter
        return box

    def warm_up(self) -> None:
        """Start both sandboxes (an APPS dataset's second one runs programs)."""
        self._sandbox("agent")
        self._sandbox("scorer" if isinstance(self.dataset[0], AppsTask) else "gold")

    def _scorer(self) -> Sandbox:
        """The sandbox that runs submitted APPS programs, reset: no process or file of an
        earlier scoring is left (a failure to start or reset it is not the agent's)."""
        try:
            box = self._sandbox("scorer")
            try:
                box.reset()
            except SandboxSpentError:
                self._boxes.pop("scorer").close()
                box = self._sandbox("scorer")
            return box
        except SandboxError as exc:
            raise RewardError(f"could not start the sandbox that runs the program: {exc}") \
                from exc

    def _prestart(self) -> bool:
        """Begin the agent's sandbox (a fork's spare; the gold's starts when scoring)."""
        if "agent" not in self._boxes:
            box = create_sandbox(self.backend, self.limits, self.layout, shell="python")
            box.begin()
            self._boxes["agent"], self._booting = box, True
        return True

    def load_task(self, task: Task) -> None:
        """A fresh interpreter."""
        if not isinstance(task, PythonTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a Python task")
        self._reset_agent()
        self._functions = []
        self._replayed = []
        self._gold = None
        self._splits = None
        self._cwd = "/"

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run code in the interpreter."""
        try:
            result = self._sandbox("agent").run(action)
        except SandboxSpentError:
            result = self._spent()
        self._cwd = result.cwd if result.exit_code is not None else self._cwd
        defined = defined_functions(action)
        if result.exit_code == 0 and defined:
            self._functions.append(defined[0])
        return result.observation, ActionInfo.of(result).as_dict(defined=defined)

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
        if not self.upstream_quirks or isinstance(self.task, AppsTask):
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
        box = self._reset_agent()
        box.run(self.task.test_setup_code)
        box.run(self.task.gold)

    def _score(self, name: str | None) -> Evaluation:
        assert isinstance(self.task, PythonTask)
        if isinstance(self.task, AppsTask):
            return python_apps.score_program(
                self.task, self._sandbox("agent"), self._scorer,
                python_apps.program_path(name, self._cwd), self.test_timeout,
                self.limits.output)
        name = name or (self._functions[-1] if self._functions else None)
        info: dict[str, Any]
        # upstream-quirks mode scores as upstream did: a name that does not bind leaves the
        # entry point as the agent's interpreter had it
        strict = not self.upstream_quirks
        if name is None or not name.isidentifier() or (strict and keyword.iskeyword(name)):
            note = "no function to test" if name is None else \
                f"{name[:100]!r} is not a function name"
            info = {"submitted_function": name, "note": note, "all_pass": False}
            return Evaluation(0.0, False, info)
        try:
            reward = self.reward(name, check=strict)
        except _Undefined as exc:
            info = {"submitted_function": name, "note": str(exc), "tests_correct": 0,
                    "tests_total": len(self.task.tests), "all_pass": False,
                    "reward_parts": {"tests": 0.0}}
            return Evaluation(0.0, False, info)
        info = {"submitted_function": name, "tests_correct": reward.correct,
                "tests_total": reward.total, "all_pass": reward.all_pass,
                "reward_parts": {"tests": reward.reward}}
        return Evaluation(reward.reward, reward.success, info)

    def reward(self, name: str, check: bool = True) -> PythonReward:
        """Run the tests on ``name`` (bound to the gold's entry point) and on the gold.

        The agent's interpreter only evaluates the tests' sub-expressions that need its
        namespace (``python_split``); each test is decided in the gold's sandbox. A name
        the agent's interpreter does not define is never scored (:class:`_Undefined`):
        the tests would otherwise call whatever the entry point's name held (``check``
        false: upstream's way, for ``--upstream-quirks``).
        """
        task = self.task
        assert isinstance(task, PythonTask)
        splits = self._split_tests()
        steps = [f"{task.entry_point} = {name}", task.test_setup_code]
        replies = self._probe(steps, [SplitTest("", (name,)), *splits])
        if replies is None:
            why = "Error: the interpreter did not report the test results"
            pred: list[Outcome] = [{"error": why} for _ in splits]
        else:
            if check:
                _check_defined(name, replies[0][0])
            pred = self._judge(splits, replies[1:])
        return python_reward(pred, self.gold_outcomes())

    def _split_tests(self) -> list[SplitTest]:
        task = self.task
        assert isinstance(task, PythonTask)
        if self._splits is None:
            self._splits = list(_splits_of(task.gold, tuple(task.tests)))
        return self._splits

    def _probe(self, steps: list[str], splits: list[SplitTest]) -> list[Any] | None:
        """The agent's claims: per test, per unit, a typed value or an exception."""
        request = {"steps": steps, "tests": [list(s.units) for s in splits],
                   "timeout": self.test_timeout, "budget": self.limits.output // 4}
        result = self._run("agent", request, "probe", len(splits) + len(steps))
        replies = _reply(result)
        if not isinstance(replies, list) or len(replies) != len(splits) \
                or len(result.reply or "") > self.limits.output // 2 \
                or _nested_past(replies, REPLY_DEPTH):
            return None  # garbled, over its budget or too deep: the agent's failure
        return [r if isinstance(r, list) and len(r) == len(s.units) else [None] * len(s.units)
                for r, s in zip(replies, splits, strict=True)]

    def _judge(self, splits: list[SplitTest], replies: list[Any]) -> list[Outcome]:
        """Each test's outcome with the agent's values, decided in the gold's sandbox
        (which also runs the gold's tests in the same request, the first time), or
        taken from the answers it gave to the same question (see ``outcome_memo``)."""
        request: dict[str, Any] = {"tests": [{"template": s.template, "units": r}
                                             for s, r in zip(splits, replies, strict=True)],
                                   "timeout": self.test_timeout}
        gold_question = self._gold_request()
        if self._gold is None:
            self._gold = self._known_gold(gold_question)
        known = self._memo.answer(gold_question, request)  # (only under a confirmed gold)
        if known is not None:
            return known
        if self._gold is not None:
            # templates that can change nothing run without a fork (see python_split)
            here = all(s.pure for s in splits)
            result = self._run("gold", {**request, "here": here}, "judge", len(splits))
            pred = _outcomes(_reply(result), len(splits), "the judge", result)
        else:
            result = self._run("gold", {**request, "gold": gold_question}, "judge",
                               2 * len(splits) + 2)
            both = _reply(result)
            both = both if isinstance(both, dict) else {}
            self._gold = _outcomes(both.get("gold"), len(splits), "the gold's tests", result)
            pred = _outcomes(both.get("pred"), len(splits), "the judge", result)
            self._saw_gold(gold_question, self._gold)
        self._memo.saw_answer(gold_question, request, pred)
        return pred

    def _gold_request(self) -> dict[str, Any]:
        task = self.task
        assert isinstance(task, PythonTask)
        return {"steps": [task.test_setup_code, task.gold], "tests": list(task.tests),
                "timeout": self.test_timeout}

    def gold_outcomes(self) -> list[Outcome]:
        """The tests' outcomes with the gold (once per episode)."""
        if self._gold is None:
            request = self._gold_request()
            self._gold = self._known_gold(request)
            if self._gold is None:
                parts = len(request["tests"]) + 2
                result = self._run("gold", request, "eval", parts)
                self._gold = _outcomes(_reply(result), parts - 2, "the gold's tests",
                                       result)
                self._saw_gold(request, self._gold)
        return self._gold

    def _known_gold(self, question: dict[str, Any]) -> list[Outcome] | None:
        """The gold's confirmed outcomes for its request: the memo's, else the disk's
        (which the memo then keeps), or None."""
        found = self._memo.gold(question)
        if found is None and self._store is not None and not self._memo.knows(question):
            stored, unstable = self._store.lookup(self._store_key(question))
            if stored is not None and len(stored) == len(question["tests"]):
                self._memo.adopt_gold(question, stored)
                found = self._memo.gold(question)
            elif unstable:
                self._memo.forget_gold(question)
        return found

    def _saw_gold(self, question: dict[str, Any], outcomes: list[Outcome]) -> None:
        """The gold's tests ran and gave ``outcomes``: the memo and the disk learn them."""
        self._memo.saw_gold(question, outcomes)
        if self._store is not None:
            self._store.saw(self._store_key(question), outcomes)

    def _store_key(self, question: dict[str, Any]) -> dict[str, Any]:
        """What decides the gold's outcomes besides its request (made once: the same for
        every task of this environment), and the request's digest. The dataset's own
        digest too: the golds of one dataset run in one gold's sandbox, one after the
        other, and a hostile dataset's gold may change what a later gold's tests give
        there (its interpreter, its files): its entries are its own."""
        from intercode.version import __version__

        if self._store_settings is None:
            try:
                root = gold_store.root_identity(self._sandbox("gold"), self.layout)
            except SandboxError as exc:
                raise RewardError(f"could not run the tests: {exc}") from exc
            self._store_settings = {
                "kind": "python-gold-outcomes", "kernel": gold_store.kernel_identity(),
                "cpus": gold_store.cpu_count(), "rootfs": root,
                "layout": asdict(self.layout), "limits": asdict(self.limits),
                "backend": self.backend, "upstream_quirks": self.upstream_quirks,
                "code": gold_store.code_digest(STORE_CODE), "intercode": __version__,
                "dataset": _dataset_digest(self.dataset)}
        return {"request": question_digest(question), **self._store_settings}

    def _run(self, which: str, request: dict[str, Any], kind: str, parts: int) -> ExecResult:
        budget = self.test_timeout * parts + 10.0
        try:
            return self._sandbox(which).run(json.dumps(request), timeout=budget, kind=kind)
        except SandboxSpentError:
            if which != "agent":
                raise RewardError("could not run the tests: the gold's sandbox is spent") \
                    from None
            return self._spent()  # no reply: the agent's failure
        except SandboxError as exc:
            raise RewardError(f"could not run the tests: {exc}") from exc

    # -- snapshots (see envs/sandbox_state.py) -------------------------------------------

    def save_state(self) -> ExecState:
        """The interpreter, held whole (a paused fork), its files, and the candidates.
        An interpreter that died at the hold in a sandbox that can no longer make one
        (the agent killed the zygote too) costs the agent its sandbox: a
        :class:`SnapshotError`, and the episode goes on in a new sandbox."""
        try:
            return sandbox_state.save(self._sandbox("agent"), python=True,
                                      functions=list(self._functions))
        except SandboxSpentError:
            self._spent()
            raise SnapshotError("the snapshot could not be taken: the interpreter died and "
                                "this sandbox can no longer make one (killed inside the "
                                "sandbox); the episode goes on in a new sandbox (files, "
                                "variables, functions and imports were lost)") from None

    def load_state(self, state: ExecState) -> None:
        """A fork of the held interpreter becomes the agent's."""
        try:
            loaded = sandbox_state.load(self._sandbox("agent"), state)
        except SandboxSpentError:
            self._spent()
            raise SnapshotError("the snapshot cannot be restored: its held interpreter is "
                                "gone or this sandbox can no longer make an interpreter "
                                "(killed inside the sandbox); the episode goes on in a new "
                                "sandbox (files, variables, functions and imports were "
                                "lost)") from None
        self._functions = list(loaded.extra["functions"])
        self._cwd = loaded.cwd
        self.restore_note = loaded.note()

    def _fork_state(self) -> ExecState:
        """Nothing: a fork replays the episode's actions (see :meth:`transfer_state`), so
        no interpreter is held and no tree kept for it."""
        return NoState()

    def _replay_actions(self) -> list[str]:
        """The episode's actions a fork replays (all but submissions)."""
        return [action for action, _observation in self.history
                if not self.parse_submit(action.strip())[0]]

    def _spare_plan(self) -> list[str]:
        """A warm spare replays the episode's actions so far in the background, so that
        the next fork replays only those taken since (see :meth:`transfer_state`)."""
        return self._replay_actions()

    def _prepare_fork(self, plan: object) -> None:
        """Replay ``plan``'s actions in this spare's fresh interpreter."""
        assert isinstance(plan, list) and self.task is not None
        if not self._replay(plan):
            self._replay_from_scratch(plan, self.task.index)
        self._replayed = list(plan)

    def _replay_from_scratch(self, actions: list[str], task: int) -> None:
        """A fresh interpreter for ``task``, then ``actions`` one by one, as actions."""
        self.reset(options={"task": task})
        for action in actions:
            self.execute(action)

    def _replay(self, actions: list[str]) -> bool:
        """Run ``actions`` again in the agent's interpreter, in one request (``replay``):
        whether all of them ran, within one action's time limit and without the
        interpreter stopping (else the interpreter is in an unknown state: the caller
        resets it and replays them one by one, as actions)."""
        if not actions:
            return True
        if len(actions) == 1:
            self.execute(actions[0])
            return True
        try:
            result = self._sandbox("agent").run(json.dumps(actions), kind="replay")
        except SandboxSpentError:  # the actions killed the zygote, then the interpreter
            self._spent()
            return False
        reply = _reply(result)
        return (result.exit_code == 0 and not result.timed_out and not result.shell_restarted
                and isinstance(reply, dict) and reply.get("ran") == len(actions))

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """A process cannot move to another sandbox: ``other`` replays this episode's
        actions in its fresh interpreter (exact for code that does not depend on time,
        randomness or the outside; see docs/snapshots.md). A warm spare that replayed a
        beginning of them in the background (:meth:`_prepare_fork`) replays the rest; one
        that replayed anything else is reset first."""
        if not isinstance(other, PythonCore):
            raise SnapshotError("a Python snapshot forks only into a Python environment")
        assert self.task is not None
        actions = self._replay_actions()
        done, other._replayed = other._replayed, []
        if actions[:len(done)] != done:  # the parent restored an earlier state since
            other.reset(options={"task": self.task.index})
            done = []
        if not other._replay(actions[len(done):]):
            other._replay_from_scratch(actions, self.task.index)
        other._functions = list(self._functions)
        other._cwd = self._cwd

    def _agent_alive(self) -> bool:
        """Whether the agent's sandbox runs."""
        box = self._boxes.get("agent")
        return box is not None and box.alive

    def _detach_agent(self) -> Sandbox | None:
        """The agent's sandbox, taken out (see :meth:`EnvCore._detach_agent`)."""
        if self._booting or "agent" not in self._boxes:
            return None
        return self._boxes.pop("agent")

    def _adopt_agent(self, box: Sandbox) -> None:
        """``box`` becomes the agent's sandbox (see :meth:`EnvCore._adopt_agent`)."""
        self._boxes["agent"], self._booting = box, False

    def close(self) -> None:
        """Stop both sandboxes (a closed fork's agent sandbox may become a warm spare of
        the environment it was forked from: see :meth:`intercode.envs.spares.Spares.recycle`)."""
        self._recycle()
        for box in self._boxes.values():
            box.close()
        self._boxes = {}
        super().close()


class _Undefined(Exception):
    """The submitted name is not defined in the agent's interpreter (the message says so)."""


@lru_cache(maxsize=4096)
def _splits_of(gold: str, tests: tuple[str, ...]) -> tuple[SplitTest, ...]:
    """The split of a task's tests (parsed once per task and process)."""
    shadowed = defined_names(gold) & BUILTIN_NAMES
    return tuple(split_test(test, shadowed) for test in tests)


def _check_defined(name: str, reply: Any) -> None:
    """Raise :class:`_Undefined` unless evaluating ``name`` in the agent's interpreter
    gave a value (its probe ``reply``; a claim, but one that only costs the agent)."""
    if isinstance(reply, dict) and "raise" not in reply and "v" in reply:
        return
    raised = reply.get("raise") if isinstance(reply, dict) else None
    why = f" ({str(raised[0])[:100]}: {str(raised[1])[:200]})" if isinstance(raised, list) \
        and len(raised) == 2 else ""
    raise _Undefined(f"the function {name!r} is not defined in the interpreter{why}; "
                     "nothing was scored")


def _outcomes(value: Any, count: int, what: str, result: ExecResult) -> list[Outcome]:
    """``value`` if it is a list of ``count`` outcomes, else a RewardError."""
    if isinstance(value, list) and len(value) == count and all(isinstance(o, dict)
                                                               for o in value):
        return value
    raise RewardError(f"{what} did not report: {result.observation[-300:]}")


def _dataset_digest(dataset: Dataset) -> str:
    """A digest of every task's code and tests (what its gold's sandbox runs)."""
    digest = hashlib.sha256()
    for task in dataset:
        digest.update(json.dumps([task.source, getattr(task, "test_setup_code", ""),
                                  task.gold, list(getattr(task, "tests", ())),
                                  getattr(task, "entry_point", "")]).encode())
    return digest.hexdigest()


def _nested_past(value: Any, depth: int) -> bool:
    """Whether JSON data ``value`` nests lists and objects deeper than ``depth``."""
    level = [value]
    for _ in range(depth + 1):
        level = [item for v in level
                 for item in (v if isinstance(v, list) else
                              v.values() if isinstance(v, dict) else ())]
        if not level:
            return False
    return True


def _reply(result: ExecResult) -> Any:
    """The interpreter's reply to a request, parsed (``None`` if none or not JSON)."""
    if result.reply is None:
        return None
    try:
        return json.loads(result.reply)
    except (ValueError, RecursionError):
        return None
