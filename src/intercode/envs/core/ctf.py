"""The CTF environment: InterCode-CTF tasks in a sandboxed shell.

The working directory is ``/ctf/<task_id>``, holding the task's files (never the
upstream ``solution/`` write-ups). ``submit <flag>`` scores 1 when the flag equals the
gold ignoring case, as upstream; a wrong flag tells the agent so and the episode goes
on (upstream's evaluation let the agent try again), unless ``max_submissions`` is
reached. Without ``network=True`` the sandbox has no network, and tasks that need it
are skipped with their reason. ``network=True`` is an isolated user-mode network
(slirp4netns) without the host's loopback services; ``network="host"`` shares the host's
network, host loopback services (a local MariaDB, ...) included (see ``sandbox.network``).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any, Self

from intercode.datasets import CtfTask, Dataset, Task
from intercode.datasets.ctf import asset_path, folder_entries
from intercode.envs import arguments, sandbox_state
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.ctf_python import ALIAS_DIR, alias_entries, needs_crypto_alias
from intercode.envs.info import ActionInfo
from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError, SnapshotError, TaskUnavailable
from intercode.execstate import ExecState
from intercode.sandbox import create_sandbox, require_backend, require_network
from intercode.sandbox.base import Sandbox
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.layout import EPOCH_NS, Layout
from intercode.sandbox.limits import Limits
from intercode.sandbox.rootfs import default_root

__all__ = ["CtfCore"]

WRONG_FLAG = "The flag is wrong. Try again."


@lru_cache(maxsize=16)
def task_tree(task: CtfTask, crypto_alias: bool = False) -> FileTree:
    """``ctf/<id>/`` with the task's files (and the ``Crypto`` alias package if asked).

    Cached: building it reads and sha256-checks every file, which repeated resets of the
    same task (RL loops) need not pay again.
    """
    root = f"ctf/{task.task_id}"
    entries = [Entry("ctf", DIR, 0o755, EPOCH_NS), Entry(root, DIR, 0o755, EPOCH_NS)]
    if crypto_alias:
        entries += alias_entries()
    dirs = {"ctf", root}
    if task.files_path:
        for path, kind, mode, data in folder_entries(task.files_path, root):
            entries.append(Entry(path, DIR if kind == "d" else FILE, mode, EPOCH_NS, data))
    for asset in task.assets:
        parts = asset.path.split("/")
        for i in range(1, len(parts)):
            sub = f"{root}/{'/'.join(parts[:i])}"
            if sub not in dirs:
                dirs.add(sub)
                entries.append(Entry(sub, DIR, 0o755, EPOCH_NS))
        data = asset_path(asset).read_bytes()
        entries.append(Entry(f"{root}/{asset.path}", FILE, 0o755 if asset.executable else 0o644,
                             EPOCH_NS, data))
    return FileTree.of(entries)


class CtfCore(EnvCore):
    """The CTF environment without Gymnasium (see :class:`intercode.envs.ctf.CtfEnv`,
    this and :class:`~intercode.envs.base.IntercodeEnv`)."""

    env_name = "ctf"

    @classmethod
    def from_settings(cls, dataset: str | Dataset, settings: EnvSettings) -> Self:
        """Limits, network mode and upstream quirks of the settings."""
        return cls(dataset, limits=settings.limits, network=settings.network,
                   upstream_quirks=settings.upstream_quirks, backend=settings.sandbox)

    def __init__(self, dataset: str | Dataset = "intercode-ctf", *, limits: Limits | None = None,
                 layout: Layout | None = None, network: bool | str = False,
                 max_submissions: int | None = None, backend: str = "bwrap",
                 upstream_quirks: bool = False, render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        self.limits = arguments.optional("limits", limits, Limits) or Limits()
        self._limit_observations(self.limits.output + NOTE_CHARS)  # outputs are cut there
        self.backend = require_backend(backend)
        base = (arguments.optional("layout", layout, Layout)
                or Layout(rootfs=default_root("ctf")))
        self.crypto_alias = needs_crypto_alias(base.rootfs)
        extra_env = base.extra_env
        if self.crypto_alias:
            extra_env += (("PYTHONPATH", f"/{ALIAS_DIR}"),)
        self.layout = dataclasses.replace(base, network=network, extra_env=extra_env,
                                          image_profile="ctf")
        self.network = network
        # "none", "isolated" or "host"
        self.network_mode = require_network(network, self.backend)
        self.max_submissions = arguments.count("max_submissions", max_submissions)
        self.upstream_quirks = arguments.flag("upstream_quirks", upstream_quirks)
        self._box: Sandbox | None = None
        self._booting = False  # the sandbox was begun by _prestart()
        self._submissions = 0
        self._solved = False

    def _sandbox(self) -> Sandbox:
        if self._booting:  # begun by _prestart(): wait until ready
            self._booting = False
            if self._box is not None:
                self._box.finish_begun()  # (died while booting: a new one starts below)
        if self._box is None or not self._box.alive:
            if self._box is not None:
                self._box.close()
            self._box = create_sandbox(self.backend, self.limits, self.layout)
            self._box.start()
        return self._box

    def warm_up(self) -> None:
        """Start the sandbox."""
        self._sandbox()

    def _prestart(self) -> bool:
        """Begin the sandbox (a fork's spare)."""
        if self._box is None:
            box = create_sandbox(self.backend, self.limits, self.layout)
            box.begin()
            self._box, self._booting = box, True
        return True

    def unavailable(self, task: Task) -> str | None:
        """Tasks that need the network (when it is off) or miss their files cannot run."""
        if not isinstance(task, CtfTask):
            return None
        if task.needs_network and self.network_mode == "none":
            return (f"task {task.task_id} needs the network ({task.needs_network}); "
                    "run with network=True (--network) where there is one")
        if task.missing_assets:
            return f"task {task.task_id} misses its files {', '.join(task.missing_assets)}"
        return None

    def load_task(self, task: Task) -> None:
        """The task's files in ``/ctf/<id>``, a fresh shell there."""
        if not isinstance(task, CtfTask):
            raise ConfigError(f"task {task.index} of {task.dataset} is not a CTF task")
        reason = self.unavailable(task)
        if reason is not None:
            raise TaskUnavailable(reason)
        box = self._sandbox()
        box.load(task_tree(task, self.crypto_alias))
        result = box.run(f"cd /ctf/{task.task_id}")
        if result.exit_code != 0:
            raise ConfigError(f"cannot enter /ctf/{task.task_id}: {result.observation}")
        self._submissions = 0
        self._solved = False

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        """Run a shell command."""
        result = self._sandbox().run(action)
        return result.observation, ActionInfo.of(result).as_dict()

    def parse_submit(self, action: str) -> tuple[bool, str | None]:
        """``submit <flag>``: the flag is what follows the first single space, up to the next.

        This is upstream's parse (``action.split(" ")[1]``), kept so that recorded
        episodes get the same flag checks: ``submit  flag`` (two spaces) submits an empty
        flag, ``submit flag trailing words`` submits ``flag``.
        """
        if action.split(maxsplit=1)[:1] != [self.submit_keyword]:
            return False, None
        fields = action.split(" ")
        return True, fields[1] if len(fields) > 1 else ""

    def submit(self, argument: str | None) -> Evaluation:
        """1 for the right flag (ignoring case), else 0 and a message."""
        assert isinstance(self.task, CtfTask)
        self._submissions += 1
        flag = argument or ""
        gold = self.task.gold
        if self.upstream_quirks and self.task.upstream_gold is not None:
            gold = self.task.upstream_gold  # upstream's gold, before our documented fix
        right = flag.lower() == gold.lower()
        self._solved = self._solved or right
        info = {"submitted_flag": flag, "submissions": self._submissions,
                "reward_parts": {"flag": 1.0 if right else 0.0},
                "observation": "" if right else WRONG_FLAG}
        return Evaluation(1.0 if right else 0.0, right, info)

    def _submission_ends(self, result: Evaluation) -> bool:
        """A right flag ends the episode; a wrong one only at ``max_submissions``."""
        if result.success:
            return True
        return self.max_submissions is not None and self._submissions >= self.max_submissions

    def evaluate(self) -> Evaluation:
        """1 once the right flag was submitted in this episode, else 0."""
        return Evaluation(1.0 if self._solved else 0.0, self._solved,
                          {"submissions": self._submissions})

    # -- snapshots (see envs/sandbox_state.py) -------------------------------------------

    def save_state(self) -> ExecState:
        """The sandbox's tree and shell state, and the submissions so far."""
        return sandbox_state.save(self._sandbox(), submissions=self._submissions,
                                  solved=self._solved)

    def load_state(self, state: ExecState) -> None:
        """The sandbox and the submission count back in ``state``."""
        loaded = sandbox_state.load(self._sandbox(), state)
        self._submissions, self._solved = loaded.extra["submissions"], loaded.extra["solved"]
        self.restore_note = loaded.note()

    def transfer_state(self, state: ExecState, other: EnvCore) -> None:
        """``other``'s sandbox in ``state``."""
        if not isinstance(other, CtfCore):
            raise SnapshotError("a CTF snapshot forks only into a CTF environment")
        moved = sandbox_state.copy(state, self._sandbox(), other._sandbox())
        other._submissions, other._solved = moved.extra["submissions"], moved.extra["solved"]
        other.restore_note = moved.note()

    def close(self) -> None:
        """Stop the sandbox."""
        if self._box is not None:
            self._box.close()
            self._box = None
        super().close()
