"""The SWE environment (IC-SWE-bench): fix a repository's issue in a persistent shell.

The agent's shell starts in ``/testbed``, the repository at the task's base commit (a
``.git`` holding that commit alone), with the task's packages in ``/opt/venv`` when it
needs any (:mod:`intercode.swe.build`). A reset restores the whole tree, venv included,
by the same mechanism as the Bash environment: only what changed is rewritten.

``submit`` hands in the working tree's diff against the base commit (``git add -A`` into
a scratch index, ``git diff --cached --binary``: new and binary files included). It is
scored in a second sandbox that the agent never reaches, from the pristine tree: the
patch without its changes to protected paths (:mod:`intercode.swe.patches`), then the
task's test patch, then the test command (:mod:`intercode.swe.specs`, with the official
``swebench`` package); the log is parsed by the repository's official parser and graded
(:mod:`intercode.swe.grading`). Reward 1.0 when the task is resolved, else 0.0, with
the fractions of ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` tests passed in ``reward_info``.
A patch that does not apply, a test patch that no longer applies, a test command that
runs out of time, a log its parser fails on or takes too long on: 0.0 with the reason,
never an error of the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import time
from typing import Any, Self

from intercode.datasets import Dataset, Task
from intercode.datasets.swe import SweTask
from intercode.envs import arguments, sandbox_state
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.info import ActionInfo
from intercode.envs.settings import EnvSettings
from intercode.errors import (
    ConfigError,
    DatasetError,
    SandboxError,
    SandboxUnavailableError,
    SnapshotError,
    TaskUnavailable,
)
from intercode.execstate import ExecState
from intercode.sandbox import create_sandbox, require_backend
from intercode.sandbox.base import Sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits, MiB
from intercode.swe import build, grading, images, patches, specs
from intercode.swe.repos import TESTBED

__all__ = ["SweCore"]

DEFAULT_TEST_TIMEOUT = 900.0
DIFF_TIMEOUT = 120.0
MAX_PATCH = 16 * MiB
LOG_TAIL = 2000
MAX_LISTED = 5000  # per-test outcomes shown in info (FAIL_TO_PASS and PASS_TO_PASS)
# The diff the agent hands in, made in its own sandbox (its git, its files: what it hands
# in is its own business); a scratch index leaves the agent's index as it was.
DIFF_SCRIPT = """cd /testbed || { echo "there is no /testbed"; exit 90; }
scratch=$(mktemp) || exit 91
cp .git/index "$scratch" 2>/dev/null
export GIT_INDEX_FILE="$scratch"
if ! out=$(git add -A 2>&1); then
    echo "git add failed: $out" | tail -n 3; rm -f "$scratch"; exit 92
fi
git diff --cached --binary --no-color --no-renames --no-ext-diff --full-index {base} 2>/dev/null
code=$?; rm -f "$scratch"; exit $code
"""


class SweCore(EnvCore):
    """The SWE environment without Gymnasium (see :class:`intercode.envs.swe.SweEnv`,
    this and :class:`~intercode.envs.base.IntercodeEnv`)."""

    env_name = "swe"

    @classmethod
    def from_settings(cls, dataset: str | Dataset, settings: EnvSettings) -> Self:
        """Limits, backend, repository mirror and test time of the settings."""
        return cls(dataset, limits=settings.limits, backend=settings.sandbox,
                   repo_mirror=settings.repo_mirror, test_timeout=settings.test_timeout,
                   image=settings.image)

    def __init__(self, dataset: str | Dataset = "swe-demo", *, limits: Limits | None = None,
                 layout: Layout | None = None, backend: str = "bwrap",
                 repo_mirror: str | None = None, test_timeout: float | None = None,
                 image: str | None = None, render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        specs.swebench_version()  # the scoring needs the package: say so before anything runs
        self.limits = arguments.optional("limits", limits, Limits) or Limits()
        self._limit_observations(self.limits.output + NOTE_CHARS)
        self.backend = require_backend(backend)
        self.layout = build.swe_layout(arguments.optional("layout", layout, Layout))
        if repo_mirror is not None and not isinstance(repo_mirror, str):
            raise ConfigError("repo_mirror must be a folder path")
        self.repo_mirror = repo_mirror or os.environ.get("INTERCODE_REPO_MIRROR") or None
        if test_timeout is not None and (isinstance(test_timeout, bool)
                                         or not isinstance(test_timeout, (int, float))
                                         or not 0 < test_timeout < 86_400):
            raise ConfigError(f"test_timeout must be a number of seconds (0 < s < 86400), "
                              f"not {test_timeout!r}")
        self.test_timeout = float(test_timeout or DEFAULT_TEST_TIMEOUT)
        if image is not None and not isinstance(image, str):
            raise ConfigError("image must be an image name or pattern")
        self.image = image
        self.parse_timeout = specs.PARSE_TIMEOUT  # seconds the log parser may take
        self._box: Sandbox | None = None
        self._scorer: Sandbox | None = None
        self._box_layout = self._scorer_layout = self.layout
        self._trees: dict[str, tuple[FileTree, Layout]] = {}
        self._last: tuple[str, Evaluation] | None = None  # (patch digest, its score)
        self.last_log = ""  # the whole log of the last test run (info keeps its end)

    # -- sandboxes -------------------------------------------------------------------------

    def _sandbox(self, layout: Layout | None = None) -> Sandbox:
        """The agent's sandbox (a new one when the task needs another root or image)."""
        want = layout or self._box_layout
        if self._box is None or not self._box.alive or want != self._box_layout:
            if self._box is not None:
                self._box.close()
            self._box, self._box_layout = None, want
            self._box = create_sandbox(self.backend, self.limits, want)
            self._box.start()
        return self._box

    def _scoring_sandbox(self, layout: Layout) -> Sandbox:
        if self._scorer is None or not self._scorer.alive or layout != self._scorer_layout:
            if self._scorer is not None:
                self._scorer.close()
            self._scorer, self._scorer_layout = None, layout
            limits = dataclasses.replace(self.limits, timeout=self.test_timeout,
                                         output=max(self.limits.output, MAX_PATCH),
                                         output_hard=max(self.limits.output_hard, 4 * MAX_PATCH))
            self._scorer = create_sandbox(self.backend, limits, layout)
            self._scorer.start()
        return self._scorer

    def warm_up(self) -> None:
        """Start the agent's sandbox."""
        self._sandbox()

    def _tree(self, task: SweTask) -> tuple[FileTree, Layout]:
        """The task's tree and the layout of its sandboxes (built or exported once)."""
        found = self._trees.get(task.task_id)
        if found is None:
            try:
                name = images.image_for(task, self.image)
                if name is not None:
                    exported = images.export_image(name)
                    found = (exported.testbed(),
                             images.image_layout(exported, self.backend, self.layout))
                else:
                    found = (build.build_env(task, self.backend, self.layout,
                                             self.repo_mirror).tree, self.layout)
            except (DatasetError, ConfigError, SandboxUnavailableError) as exc:
                raise TaskUnavailable(f"task {task.task_id}: {exc}") from None
            if len(self._trees) >= 4:
                self._trees.pop(next(iter(self._trees)))
            self._trees[task.task_id] = found
        return found

    # -- the episode -----------------------------------------------------------------------

    def load_task(self, task: Task) -> None:
        """The task's tree in the sandbox, a fresh shell in ``/testbed``."""
        if not isinstance(task, SweTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a SWE task")
        tree, layout = self._tree(task)
        box = self._sandbox(layout)
        box.load(tree)
        result = box.run(f"cd /{TESTBED}")
        if result.exit_code != 0:
            raise SandboxError(f"cannot enter /{TESTBED}: {result.observation}")
        self._last = None

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run a shell command."""
        result = self._sandbox().run(action)
        return result.observation, ActionInfo.of(result).as_dict()

    def submit(self, argument: str | None) -> Evaluation:
        """Hand in the working tree's diff: its score."""
        return self.evaluate()

    def evaluate(self) -> Evaluation:
        """The score of the working tree's diff as it is now."""
        assert isinstance(self.task, SweTask)
        patch, problem = self.current_patch()
        if problem is not None:
            return Evaluation(0.0, False, {"reason": problem, "resolved": False})
        return self.score_patch(patch)

    def current_patch(self) -> tuple[str, str | None]:
        """The working tree's diff against the base commit, or why there is none."""
        assert isinstance(self.task, SweTask)
        script = DIFF_SCRIPT.replace("{base}", shlex.quote(self.task.base_commit))
        result = self._sandbox().exec(["/bin/bash", "-c", script], timeout=DIFF_TIMEOUT,
                                      cwd="/")
        if result.timed_out:
            return "", "making the diff of the working tree took too long"
        if result.exit_code != 0:
            said = " ".join(result.output.strip().splitlines()[-2:])[:300]
            return "", f"the working tree's diff could not be made: {said or 'git failed'}"
        if result.output_truncated:
            return "", (f"the diff is larger than the {self.limits.output} bytes of output "
                        "an action may show")
        return result.output, None

    def score_patch(self, patch: str) -> Evaluation:
        """Score ``patch`` (a git diff against the base commit) on the pristine tree."""
        assert isinstance(self.task, SweTask)
        digest = hashlib.sha256(patch.encode()).hexdigest()
        if self._last is not None and self._last[0] == digest:
            return self._last[1]
        result = self._score(self.task, patch)
        self._last = (digest, result)
        return result

    def _score(self, task: SweTask, patch: str) -> Evaluation:
        plan = specs.plan(task)
        runner = patches.runner_paths(plan.command)
        kept, dropped = patches.filter_patch(patch, runner)
        raw = patch.encode()
        info: dict[str, Any] = {"patch_bytes": len(raw),
                                "patch_sha256": hashlib.sha256(raw).hexdigest()}
        if dropped:
            info["dropped_paths"] = dropped[:50]
        if len(raw) > MAX_PATCH:
            return _zero(info, f"the patch is larger than {MAX_PATCH >> 20} MiB")
        tree, layout = self._tree(task)
        box = self._scoring_sandbox(layout)
        box.load(tree)
        if kept.strip():
            before = self._changed_paths(box)
            if before is None:
                return _zero(info, "the scoring tree's git status failed before the patch")
            # what git itself reads in the patch, whatever the splitter saw in it
            named, problem = self._patch_paths(box, kept)
            if problem is None:
                problem = self._apply(box, "agent.patch", "the patch does not apply")
            if problem:
                return _zero(info, problem)
            after = self._changed_paths(box)
            if after is None:
                return _zero(info, "the scoring tree's git status failed after the patch")
            sneaked = [p for p in dict.fromkeys(named + [p for p in after if p not in before])
                       if patches.is_protected(p, runner)]
            if sneaked:
                return _zero(info, "the patch changes protected paths (tests, test "
                                   f"configuration): {', '.join(sneaked[:5])}")
        self._write(box, task.test_patch, "test.patch")
        problem = self._apply(box, "test.patch", "the test patch does not apply after the patch")
        if problem:
            return _zero(info, problem)
        started = time.monotonic()
        run = box.exec(["/bin/bash", "-c", plan.command], timeout=self.test_timeout,
                       cwd=f"/{TESTBED}")
        info["test_seconds"] = round(time.monotonic() - started, 3)
        info["test_command"] = plan.command
        info["test_exit_code"] = run.exit_code
        info["test_log_tail"] = run.output[-LOG_TAIL:]
        self.last_log = run.output
        if run.timed_out:
            return _zero(info, f"the tests ran out of time ({self.test_timeout:g} s)")
        try:
            statuses = specs.parse_log(run.output, task, plan.parser, self.parse_timeout)
        except specs.ParseFailed as exc:
            return _zero(info, str(exc))
        listed = dict.fromkeys(task.fail_to_pass + task.pass_to_pass)
        statuses.update(grading.failures_shown(run.output, listed))
        verdict = grading.grade(statuses, task.fail_to_pass, task.pass_to_pass, run.exit_code)
        info.update(verdict.info())
        if len(listed) <= MAX_LISTED:
            info["tests"] = {name: statuses.get(name, "MISSING") for name in listed}
        info["reward_parts"] = {"fail_to_pass": verdict.f2p_fraction,
                                "pass_to_pass": verdict.p2p_fraction}
        return Evaluation(1.0 if verdict.resolved else 0.0, verdict.resolved, info)

    @staticmethod
    def _write(box: Sandbox, patch: str, name: str) -> None:
        box.exec(["/bin/bash", "-c", f"cat > /tmp/{name}"], stdin=patch.encode(), cwd="/")

    @classmethod
    def _patch_paths(cls, box: Sandbox, patch: str) -> tuple[list[str], str | None]:
        """Write ``patch`` to ``/tmp/agent.patch`` in the scoring sandbox: the paths
        ``git apply`` reads in it (renames: both), or why it cannot read it."""
        cls._write(box, patch, "agent.patch")
        done = box.exec(["git", "apply", "--numstat", "-z", "/tmp/agent.patch"],
                        cwd=f"/{TESTBED}", timeout=120.0)
        if done.exit_code != 0 or done.output_truncated:
            said = " ".join(done.output.strip().splitlines()[-2:])[:300]
            return [], f"the patch does not apply: {said or 'git cannot read it'}"
        return _numstat_paths(done.output), None

    @staticmethod
    def _apply(box: Sandbox, name: str, failure: str) -> str | None:
        """Apply ``/tmp/<name>`` in the scoring sandbox's ``/testbed``: ``None``, or why not."""
        path = f"/tmp/{name}"
        said = ""
        for flags in (["--verbose"], ["--verbose", "--3way"]):
            done = box.exec(["git", "apply", *flags, path], cwd=f"/{TESTBED}", timeout=120.0)
            if done.exit_code == 0:
                return None
            said = " ".join(done.output.strip().splitlines()[-2:])[:300]
        return f"{failure}: {said}"

    @staticmethod
    def _changed_paths(box: Sandbox) -> list[str] | None:
        """Paths that differ from the base commit in the scoring sandbox (its own git),
        ignored files included (a patch may add a ``.gitignore`` line); ``None`` when
        git cannot say."""
        done = box.exec(["git", "status", "--porcelain", "-z", "--untracked-files=all",
                         "--no-renames", "--ignored"], cwd=f"/{TESTBED}", timeout=120.0)
        if done.exit_code != 0 or done.timed_out or done.output_truncated:
            return None
        return [item[3:] for item in done.output.split("\0") if len(item) > 3]

    # -- snapshots (see envs/sandbox_state.py) -------------------------------------------

    def save_state(self) -> ExecState:
        """The agent's tree (repository, venv) and shell state."""
        return sandbox_state.save(self._sandbox())

    def load_state(self, state: ExecState) -> None:
        """The agent's sandbox back in ``state`` (the next score is computed afresh)."""
        loaded = sandbox_state.load(self._sandbox(), state)
        self._last = None
        self.restore_note = loaded.note()

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """``other``'s agent sandbox in ``state``."""
        if not isinstance(other, SweCore):
            raise SnapshotError("a SWE snapshot forks only into a SWE environment")
        if other._box_layout != self._box_layout:
            raise SnapshotError("a SWE snapshot forks only into an environment on the same "
                                "root or image")
        moved = sandbox_state.copy(state, self._sandbox(), other._sandbox())
        other._last = None
        other.restore_note = moved.note()

    def close(self) -> None:
        """Stop both sandboxes."""
        for box in (self._box, self._scorer):
            if box is not None:
                box.close()
        self._box = self._scorer = None
        super().close()


def _numstat_paths(output: str) -> list[str]:
    """The paths of ``git apply --numstat -z`` output (records of added lines, deleted
    lines and the path, tab-separated; a rename has an empty path, then its old and new
    path as records of their own)."""
    items = output.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(items):
        fields = items[i].split("\t", 2)
        i += 1
        if len(fields) < 3:
            continue
        if fields[2]:
            paths.append(fields[2])
        else:
            paths += items[i:i + 2]
            i += 2
    return [p for p in paths if p]


def _zero(info: dict[str, Any], reason: str) -> Evaluation:
    info.update({"resolved": False, "reason": reason, "status": "RESOLVED_NO"})
    return Evaluation(0.0, False, info)
