"""Snapshots of a live episode: the handle, and the checks that guard its restore.

A :class:`Snapshot` holds what the base environment keeps (task, turn count, history,
whether the episode ended) and an environment-specific :class:`ExecState` (the
execution state: a database image, a held interpreter, a file-tree copy and a shell's
state). The handle is opaque and immutable; the environment that took it keeps a weak
registry of the handles it issued, so a forged or copied object, one of another
environment, of an earlier episode or one already released is refused with a
:class:`~intercode.errors.SnapshotError`. Releasing frees the execution state (held
processes, copies inside the sandbox); it is idempotent and also happens when the
handle is garbage-collected and when its environment resets or closes. The state is
freed by the environment at its next call, on its own thread (a release may come from
the garbage collector in the middle of a sandbox request).
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Callable
from typing import Any, NoReturn, SupportsIndex

from intercode.datasets import Task
from intercode.errors import SnapshotError
from intercode.execstate import ExecState

__all__ = ["Registry", "Snapshot"]

_ids = itertools.count(1)
log = logging.getLogger(__name__)


class Snapshot:
    """An opaque handle to a saved episode state (see :meth:`IntercodeEnv.snapshot`)."""

    __slots__ = ("__weakref__", "_done", "_episode", "_finalizer", "_history", "_id",
                 "_owner", "_state", "_task", "_turn")
    _id: int
    _owner: int
    _episode: int
    _task: Task
    _turn: int
    _done: bool
    _history: tuple[tuple[str, str], ...]
    _state: ExecState
    _finalizer: weakref.finalize[[ExecState], None]

    def __init__(self, owner: int, episode: int, task: Task, turn: int, done: bool,
                 history: tuple[tuple[str, str], ...], state: ExecState,
                 pending: list[ExecState]) -> None:
        setter = object.__setattr__
        setter(self, "_id", next(_ids))
        setter(self, "_owner", owner)
        setter(self, "_episode", episode)
        setter(self, "_task", task)
        setter(self, "_turn", turn)
        setter(self, "_done", done)
        setter(self, "_history", history)
        setter(self, "_state", state)
        finalizer = weakref.finalize(self, pending.append, state)
        finalizer.atexit = False  # the sandboxes die with the process anyway
        setter(self, "_finalizer", finalizer)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("a Snapshot is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("a Snapshot is immutable")

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError("a Snapshot refers to live sandbox state and cannot be pickled or "
                        "copied; use env.fork() for an independent copy")

    @property
    def task(self) -> Task:
        """The task of the episode."""
        return self._task

    @property
    def turn(self) -> int:
        """The turn count when it was taken."""
        return self._turn

    @property
    def history(self) -> tuple[tuple[str, str], ...]:
        """The ``(action, observation)`` pairs up to then."""
        return self._history

    @property
    def done(self) -> bool:
        """Whether the episode had ended."""
        return self._done

    @property
    def released(self) -> bool:
        """Whether :meth:`release` ran (or the environment reset or closed)."""
        return not self._finalizer.alive

    @property
    def state(self) -> ExecState:
        """The environment's execution state (for the environment that took it)."""
        return self._state

    def release(self) -> None:
        """Free the execution state (idempotent). The environment frees it at its next
        call (on its own thread: a release may come from any thread, or from the
        garbage collector in the middle of another call)."""
        self._finalizer()

    def __repr__(self) -> str:
        what = "released" if self.released else f"turn {self._turn}"
        return f"<Snapshot #{self._id} of task {self._task.index}, {what}>"


class Registry:
    """The snapshots one environment issued (weakly held), for the restore checks."""

    def __init__(self) -> None:
        self.owner = next(_ids)
        self.episode = 0
        self.pending: list[ExecState] = []  # released, to free on the environment's thread
        self._issued: weakref.WeakValueDictionary[int, Snapshot] = (
            weakref.WeakValueDictionary())

    def issue(self, make: Callable[[int, int, list[ExecState]], Snapshot]) -> Snapshot:
        """Record the snapshot ``make(owner, episode, pending)`` returns."""
        snap = make(self.owner, self.episode, self.pending)
        self._issued[snap._id] = snap
        return snap

    def check(self, snap: object, task: Task | None) -> Snapshot:
        """``snap`` if this environment may restore it, else a one-line SnapshotError."""
        if not isinstance(snap, Snapshot) or self._issued.get(snap._id) is not snap:
            if isinstance(snap, Snapshot) and snap._owner == self.owner:
                raise SnapshotError("this snapshot was released or belongs to an earlier "
                                    "episode of this environment")
            raise SnapshotError("not a snapshot taken by this environment (snapshots are "
                                "restored only where they were taken; use fork())")
        if snap.released:
            raise SnapshotError("this snapshot was released")
        if snap._episode != self.episode or task is None or snap._task.index != task.index:
            raise SnapshotError(f"this snapshot is of task {snap._task.index} in an earlier "
                                "episode; the environment has been reset since")
        return snap

    def drain(self) -> None:
        """Free the states of the snapshots released since the last call."""
        while self.pending:
            state = self.pending.pop()
            try:
                state.release()
            except Exception:  # the sandbox may be gone: what it held went with it
                log.debug("releasing a snapshot failed", exc_info=True)

    def release_all(self) -> None:
        """Release every issued snapshot (on reset and close) and start a new episode."""
        self.episode += 1
        for snap in list(self._issued.values()):
            snap.release()
        self._issued.clear()
        self.drain()
