"""The Bash environment: NL2Bash tasks in a persistent shell inside a sandbox.

The agent's actions run in one sandbox; the gold command runs in a second,
pristine sandbox of the same task when the state is evaluated. Both sandboxes live
as long as the environment, and a reset only restores what changed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from typing import Any

from intercode.datasets import BashTask, Dataset, Task
from intercode.datasets.fsbuild import prepared_fs, script_fs
from intercode.envs import arguments, sandbox_state
from intercode.envs import gold_cache as gold_store
from intercode.envs.bash_upstream import (
    date_access_times,
    rewritten_by_reset,
    run_like_upstream,
    settle_skeleton,
    upstream_hashes,
    upstream_tree,
)
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.gold_cache import GoldCache, GoldResult
from intercode.envs.info import ActionInfo
from intercode.errors import ConfigError, RewardError, SandboxError, SnapshotError
from intercode.execstate import ExecState
from intercode.rewards.bash import (
    ANSWER_CHECKS,
    BashReward,
    BashSnapshot,
    bash_reward,
    common_added,
)
from intercode.sandbox import create_sandbox, require_backend
from intercode.sandbox.base import Change, ExecResult, Sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits

__all__ = ["BashCore"]

# Upstream's docker.gitignore: these names are ignored at any depth by the diff.
IGNORED_NAMES = ("bin", "boot", "dev", "etc", "home", "lib", "media", "opt", "proc", "root",
                 "run", "sbin", "srv", "sys", "usr", "var", ".dockerenv")
# What ``info`` shows of each list of changes (the reward counts all of them): an agent
# that makes 100,000 files must not write megabytes into every record of its episode.
SHOWN_CHANGES = 100
SHOWN_PATH_CHARS = 512

SandboxFactory = Callable[[Limits], Sandbox]
EMPTY = FileTree.of([])


def _image_of(task: Task) -> tuple[object, ...]:
    """What upstream's image of ``task`` was made from (its setup script or file system)."""
    assert isinstance(task, BashTask)
    return (task.setup_path, task.setup_sha256, task.fs)


def task_fs(task: BashTask) -> FileTree:
    """The file system a task starts on: its setup script's (a user dataset), its named
    prepared file system, or, with neither, an empty tree (the sandbox's skeleton only)."""
    if task.setup_path:
        return script_fs(task.setup_path, task.setup_sha256).tree
    if task.fs:
        return prepared_fs(task.fs).tree
    return EMPTY


class BashCore(EnvCore):
    """The Bash environment without Gymnasium (see :class:`intercode.envs.bash.BashEnv`,
    this and :class:`~intercode.envs.base.IntercodeEnv`)."""

    env_name = "bash"

    def __init__(self, dataset: str | Dataset = "nl2bash-fs1", *, limits: Limits | None = None,
                 layout: Layout | None = None, sandbox: SandboxFactory | None = None,
                 backend: str = "bwrap", upstream_quirks: bool = False,
                 gold_cache: bool = True, answer_check: str = "tfidf",
                 render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        self.limits = arguments.optional("limits", limits, Limits) or Limits()
        self.layout = arguments.optional("layout", layout, Layout) or Layout()
        self._limit_observations(self.limits.output + NOTE_CHARS)  # outputs are cut there
        self.backend = require_backend(backend)
        sandbox = arguments.factory(sandbox)
        arguments.flag("upstream_quirks", upstream_quirks)
        arguments.flag("gold_cache", gold_cache)
        # a partial, not a lambda: the constructor's arguments and defaults must pickle
        self._factory: SandboxFactory = sandbox or partial(create_sandbox, self.backend,
                                                           layout=self.layout)
        self.upstream_quirks = upstream_quirks
        if answer_check not in ANSWER_CHECKS:
            raise ConfigError(f"answer_check must be one of {', '.join(ANSWER_CHECKS)}, not "
                              f"{answer_check!r}")
        self.answer_check = answer_check
        self._agent: Sandbox | None = None
        self._booting = False  # the agent's sandbox was begun by _prestart()
        self._gold: Sandbox | None = None
        self._gold_cache: tuple[BashSnapshot, ExecResult] | None = None
        # the fingerprints of a stored gold result (the gold sandbox then never ran)
        self._gold_diskd: GoldResult | None = None
        # what the gold's stored results depend on besides the task (see _gold_key)
        self._gold_key_settings: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self._gold_disk = (GoldCache() if sandbox is None and gold_store.enabled(gold_cache)
                            else None)
        self._workdir = "/"
        # --upstream-quirks: the task, the start of its episode and the tree dated from it
        self._upstream_tree: tuple[Task, int, FileTree] | None = None
        # and the history of upstream's two containers, which lived from episode to
        # episode: the paths their resets wrote anew (with their new date), and those the
        # gold container's next reset (at the next scoring) will
        self._agent_redated: dict[str, int] = {}
        self._gold_redated: dict[str, int] = {}
        self._gold_rewrites: set[str] = set()
        self._gold_turn = -1  # the turn of the last scoring counted as upstream's

    # -- sandboxes -----------------------------------------------------------------------

    def _sandbox(self, which: str) -> Sandbox:
        current = self._agent if which == "agent" else self._gold
        if which == "agent" and self._booting:  # begun by _prestart(): wait until ready
            self._booting = False
            if current is not None:
                current.finish_begun()  # (died while booting: a new one starts below)
        if current is None or not current.alive:
            if current is not None:
                current.close()
            current = self._factory(self.limits)
            current.start()
            if which == "agent":
                self._agent = current
            else:
                self._gold = current
        return current

    def warm_up(self) -> None:
        """Start the agent's sandbox, and the gold's unless the gold's results come from
        the disk cache (it then starts with the first task whose result is not stored:
        a run whose golds are all stored never starts it)."""
        self._sandbox("agent")
        if self._gold_disk is None:
            self._sandbox("gold")

    def _prestart(self) -> bool:
        """Begin the agent's sandbox (a fork's spare; the gold's starts when scoring)."""
        if self._agent is None:
            box = self._factory(self.limits)
            box.begin()
            self._agent, self._booting = box, True
        return True

    def load_task(self, task: Task) -> None:
        """Restore the task's prepared file system and start a fresh shell."""
        if not isinstance(task, BashTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a Bash task")
        if self.upstream_quirks:
            self._gold_turn = -1
            self._carry_upstream_history(task)
            self._load_like_upstream(self._sandbox("agent"), task, self._agent_redated)
        else:
            self._sandbox("agent").load(task_fs(task))
        self._gold_cache = None
        self._gold_diskd = None
        self._workdir = "/"

    # -- actions -------------------------------------------------------------------------

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run an action in the agent's shell."""
        result = self._run(self._sandbox("agent"), action, track_cd=True)
        return result.observation, ActionInfo.of(result).as_dict()

    def _run(self, sandbox: Sandbox, action: str, track_cd: bool) -> ExecResult:
        if not self.upstream_quirks:
            return sandbox.run(action)
        result, workdir = run_like_upstream(sandbox, action, self._workdir, track_cd)
        if track_cd:
            self._workdir = workdir
        return result

    # -- reward --------------------------------------------------------------------------

    def evaluate(self) -> Evaluation:
        """The reward submitting now would give (upstream's Try Again evaluation)."""
        reward = self.reward()
        info = {"reward_parts": reward.parts(), "similarity": reward.similarity,
                "answer_exact": reward.answer_exact,
                "diff_miss": _shown(reward.diff_miss),
                "diff_extra": _shown(reward.diff_extra),
                "diff_same": {"files": _shown(reward.diff_same),
                              "correct": reward.same_correct, "total": len(reward.diff_same)},
                "diff_total": {"miss": len(reward.diff_miss), "extra": len(reward.diff_extra)},
                "gold_exit_code": self._gold_cache[1].exit_code if self._gold_cache else None}
        return Evaluation(reward.reward, reward.success, info)

    def reward(self) -> BashReward:
        """Compute the full reward of the current state."""
        if self.task is None:
            raise RewardError("no task loaded")
        # --upstream-quirks: upstream scored once a turn, after the turn's action; each
        # scoring reset the gold's container, which wrote anew what the gold had changed
        # at the one before, and ran the gold again (a scoring at turn 0, or a second
        # one in a turn, is not one of upstream's: it leaves that history as it is)
        counted = self.upstream_quirks and self.turn > 0 and self.turn != self._gold_turn
        if counted and self._gold_rewrites:
            now = time.time_ns()
            self._gold_redated.update(dict.fromkeys(self._gold_rewrites, now))
            self._gold_rewrites, self._gold_cache = set(), None
        try:
            agent_box = self._sandbox("agent")
            agent = BashSnapshot(tuple(agent_box.diff(IGNORED_NAMES)), self._last_observation())
            gold, _ = self._gold_result()
            if counted and self._upstream_tree is not None:
                self._gold_rewrites = rewritten_by_reset(gold.changes, self._upstream_tree[2])
                self._gold_turn = self.turn
            paths = common_added(agent.changes, gold.changes)
            stored = self._gold_diskd
            if paths and stored is not None and paths != sorted(stored.hashes):
                # stored fingerprints answer only the request they were made by (one
                # request shares a byte budget): another set of paths runs the gold
                self._gold_cache = self._gold_diskd = None
                gold, _ = self._gold_result(use_store=False)
                paths = common_added(agent.changes, gold.changes)
                stored = None
            if self.upstream_quirks:  # the golds of this mode are never stored
                agent_hashes = upstream_hashes(paths, agent_box.hashes)
                gold_hashes = upstream_hashes(paths, self._sandbox("gold").hashes)
            else:
                agent_hashes = agent_box.hashes(paths)
                gold_hashes = (self._sandbox("gold").hashes(paths) if stored is None
                               else {p: stored.hashes[p] for p in paths})
        except SandboxError as exc:
            raise RewardError(f"could not evaluate task {self.task.index}: {exc}") from exc
        return bash_reward(agent, gold, agent_hashes, gold_hashes, self.answer_check)

    def _gold_result(self, use_store: bool = True) -> tuple[BashSnapshot, ExecResult]:
        """Run the gold command once per episode in the pristine gold sandbox (or take
        its stored result, see :mod:`intercode.envs.gold_cache`)."""
        if self._gold_cache is None:
            assert isinstance(self.task, BashTask)
            key = self._gold_key(self.task) if use_store else None
            stored = None if key is None or self._gold_disk is None \
                else self._gold_disk.get(key)
            if stored is not None:
                self._gold_diskd = stored
                self._gold_cache = (BashSnapshot(stored.changes, stored.result.observation),
                                    stored.result)
                return self._gold_cache
            box = self._sandbox("gold")
            if self.upstream_quirks:
                self._load_like_upstream(box, self.task, self._gold_redated)
            else:
                box.load(task_fs(self.task))
            saved = self._workdir
            try:
                result = self._run(box, self.task.gold, track_cd=False)
            finally:
                self._workdir = saved
            snapshot = BashSnapshot(tuple(box.diff(IGNORED_NAMES)), result.observation)
            self._gold_cache = (snapshot, result)
            if key is not None:
                self._store_gold(box, key, snapshot, result)
        return self._gold_cache

    def _carry_upstream_history(self, task: BashTask) -> None:
        """--upstream-quirks, at a reset: upstream's containers lived on while the tasks
        shared their image (their file system). Its reset wrote anew what the last
        episode's agent changed, dated now (:func:`rewritten_by_reset`); another image
        meant new containers, with no history."""
        previous, self._upstream_tree = self._upstream_tree, None
        if previous is None or _image_of(previous[0]) != _image_of(task):
            self._agent_redated, self._gold_redated, self._gold_rewrites = {}, {}, set()
            return
        if self._agent is None or self._booting:  # no episode ran in it
            return
        try:
            changes = self._agent.diff(IGNORED_NAMES)
        except SandboxError:  # the agent's sandbox is gone: a new container
            self._agent_redated = {}
            return
        now = time.time_ns()
        self._agent_redated.update(dict.fromkeys(rewritten_by_reset(changes, previous[2]), now))

    def _load_like_upstream(self, box: Sandbox, task: BashTask,
                            redated: dict[str, int] | None = None) -> None:
        """Load the tree the episode of ``task`` started on in upstream's container
        (:mod:`intercode.envs.bash_upstream`): the same for the agent and the gold, but
        for the paths the gold container's resets wrote anew (``redated``)."""
        if self._upstream_tree is None or self._upstream_tree[0] is not task:
            start = time.time_ns()
            self._upstream_tree = (task, start, upstream_tree(task_fs(task), start,
                                                              IGNORED_NAMES))
        _task, start, tree = self._upstream_tree
        if redated:
            tree = upstream_tree(task_fs(task), start, IGNORED_NAMES, redated)
        box.load(tree)
        date_access_times(box, tree, start, redated or ())
        settle_skeleton(box, tree, start)

    def _gold_key(self, task: BashTask) -> dict[str, Any] | None:
        """What decides the gold's result (None: not to be stored or reused; so with
        --upstream-quirks, whose trees are dated from each episode's start)."""
        from intercode.datasets.known_issues import issue_of
        from intercode.version import __version__

        if self._gold_disk is None or self.upstream_quirks:
            return None
        issue = issue_of(task.source, task.source_index)
        if issue is not None and issue.kind in gold_store.UNCACHEABLE_KINDS:
            return None
        confirm = issue is not None and issue.kind in gold_store.CONFIRMED_KINDS
        if confirm and issue is not None and issue.gold_scores_one is not True:
            return None  # its gold does not even agree with itself
        settings = (self.layout, self.limits, self._root_identity(), self.backend)
        if self._gold_key_settings is None or self._gold_key_settings[0] != settings:
            # the same for every task of this environment: made once (asdict is costly)
            self._gold_key_settings = (settings, {
                "kernel": gold_store.kernel_identity(), "cpus": gold_store.cpu_count(),
                "rootfs": settings[2],
                "layout": asdict(self.layout), "limits": asdict(self.limits),
                "upstream_quirks": self.upstream_quirks, "backend": self.backend,
                "ignored": list(IGNORED_NAMES),
                "sandbox_code": gold_store.sandbox_code_digest(), "intercode": __version__})
        return {"confirm": confirm,
                "task": {"dataset": self.dataset.name, "source": task.source,
                         "source_index": task.source_index,
                         "gold_sha256": hashlib.sha256(task.gold.encode()).hexdigest(),
                         "tree": task_fs(task).id},
                **self._gold_key_settings[1]}  # (never changed: only serialized)

    def _root_identity(self) -> str:
        """What the sandboxes' root is (see :func:`gold_cache.root_identity`)."""
        return gold_store.root_identity(self._sandbox("agent"), self.layout)

    def _store_gold(self, box: Sandbox, key: dict[str, Any], snapshot: BashSnapshot,
                    result: ExecResult) -> None:
        """Keep a gold result that is a function of its key: not one that timed out, nor
        one whose fingerprints ran out of their budget (their marker is random)."""
        if result.timed_out or self._gold_disk is None:
            return
        paths = common_added(snapshot.changes, snapshot.changes)
        hashes = box.hashes(paths)
        if any("(not hashed:" in h for h in hashes.values()):
            return
        entry = GoldResult(result, snapshot.changes, hashes)
        if key["confirm"]:  # a candidate until another run of the gold gives the same
            confirmed = self._gold_disk.candidate(key) == entry
            self._gold_disk.put(key, entry, confirmed=confirmed)
            return
        self._gold_disk.put(key, entry)

    # -- snapshots (see envs/sandbox_state.py) -------------------------------------------

    def save_state(self) -> ExecState:
        """The agent sandbox's tree and shell state (with --upstream-quirks, also the
        gold container's history, which the episode's scorings made)."""
        return sandbox_state.save(self._sandbox("agent"), workdir=self._workdir,
                                  gold_history=self._gold_history())

    def load_state(self, state: ExecState) -> None:
        """The agent's sandbox back in ``state``."""
        loaded = sandbox_state.load(self._sandbox("agent"), state)
        self._workdir = loaded.extra["workdir"]
        self._set_gold_history(loaded.extra.get("gold_history"))
        self.restore_note = loaded.note()

    def _gold_history(self) -> list[Any] | None:
        if not self.upstream_quirks:
            return None
        return [dict(self._gold_redated), sorted(self._gold_rewrites), self._gold_turn]

    def _set_gold_history(self, history: Any) -> None:
        """The gold container's history of a snapshot (the gold runs again on it)."""
        if self.upstream_quirks and history is not None:
            redated, rewrites, turn = history
            self._gold_redated, self._gold_rewrites = dict(redated), set(rewrites)
            self._gold_turn, self._gold_cache = turn, None

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """``other``'s agent sandbox in ``state``."""
        if not isinstance(other, BashCore):
            raise SnapshotError("a Bash snapshot forks only into a Bash environment")
        moved = sandbox_state.copy(state, self._sandbox("agent"), other._sandbox("agent"))
        other._workdir = moved.extra["workdir"]
        other._upstream_tree = self._upstream_tree
        other._agent_redated = dict(self._agent_redated)
        other._set_gold_history(self._gold_history())
        other.restore_note = moved.note()

    def forget_history(self) -> None:
        """The next episode starts as in a new pair of upstream containers."""
        self._upstream_tree = None
        self._agent_redated, self._gold_redated, self._gold_rewrites = {}, {}, set()
        self._gold_turn = -1

    def _measure_baseline(self) -> None:
        """``baseline`` mode: with --upstream-quirks, the untouched state's reward is
        measured at every reset (it depends on the containers' history; being at turn 0,
        it is not one of upstream's scorings)."""
        if self.upstream_quirks and self.task is not None:
            self.__dict__.setdefault("_baselines", {}).pop(self.task.index, None)
        super()._measure_baseline()

    def diff(self) -> list[Change]:
        """The agent's changes to the file system so far."""
        return self._sandbox("agent").diff(IGNORED_NAMES)

    def _agent_alive(self) -> bool:
        """Whether the agent's sandbox runs."""
        return self._agent is not None and self._agent.alive

    def _detach_agent(self) -> Sandbox | None:
        """The agent's sandbox, taken out (see :meth:`EnvCore._detach_agent`)."""
        box, booting = self._agent, self._booting
        if box is None or booting:
            return None
        self._agent = None
        return box

    def _adopt_agent(self, box: Sandbox) -> None:
        """``box`` becomes the agent's sandbox (see :meth:`EnvCore._adopt_agent`)."""
        self._agent, self._booting = box, False

    def close(self) -> None:
        """Stop both sandboxes (a closed fork's agent sandbox may become a warm spare of
        the environment it was forked from: see :meth:`intercode.envs.spares.Spares.recycle`)."""
        self._recycle()
        for box in (self._agent, self._gold):
            if box is not None:
                box.close()
        self._agent = self._gold = None
        super().close()


def _shown(changes: tuple[Change, ...]) -> list[list[str]]:
    """The first ``SHOWN_CHANGES`` changes as ``[path, code]`` lists; bytes of a name that
    are not UTF-8 as ``\\xNN``, a path cut at ``SHOWN_PATH_CHARS`` (``diff_total`` counts
    them all)."""
    shown = []
    for change in changes[:SHOWN_CHANGES]:
        path = change.path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if len(path) > SHOWN_PATH_CHARS:
            path = path[:SHOWN_PATH_CHARS] + "..."
        shown.append([path, change.code])
    return shown

