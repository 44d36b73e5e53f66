"""The warm spares of :meth:`EnvCore.fork`: siblings whose sandboxes boot in the
background, so that a fork hands one over instead of starting a new environment.

Each environment holds one :class:`Spares`: the spares it keeps for its next forks (begun
by each fork, or given back by a closed fork: its agent's sandbox, reset), and, for a
spare or a fork, what links it to the environment it came from. The spares are built and
prepared on the process's spare-starting threads (:func:`spare_starter`); their sandboxes
then live until they are closed, whichever thread uses them.

The environment's hooks this module calls (subclasses implement them): ``_prestart``
(begin the agent's sandbox without waiting), ``_agent_alive``, ``_detach_agent`` /
``_adopt_agent`` (a closed fork's sandbox moves to a new sibling), ``_spare_plan`` /
``_prepare_fork`` (what a spare does ahead of the next fork, e.g. Python's replay).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from intercode.envs.core.base import EnvCore
    from intercode.sandbox.base import Sandbox

__all__ = ["DEFAULT_SPARES", "Spares", "spares_wanted"]

log = logging.getLogger(__name__)

DEFAULT_SPARES = 2  # warm spares of fork() per environment (see EnvCore.fork_spares)
MAX_SPARES = 8
# spares prepared at once (each: a bubblewrap spawn, 10-20 ms of the host's CPU, then a
# wait for the boot and the reset to the parent's task, and a Python spare's replay)
STARTER_THREADS = 4

_starter: ThreadPoolExecutor | None = None
_starter_lock = threading.Lock()


def spares_wanted(setting: str) -> int:
    """The number of warm spares ``INTERCODE_FORK_SPARE`` asks for (empty or not a
    number: the default; ``0``: none)."""
    setting = setting.strip()
    if setting.isdigit():
        return min(int(setting), MAX_SPARES)
    return DEFAULT_SPARES


def spare_starter() -> ThreadPoolExecutor:
    """The process's threads that begin the warm spares of ``fork()`` (made on first use,
    kept until the process ends: a sandbox dies with the thread that spawned it)."""
    global _starter
    with _starter_lock:
        if _starter is None:
            _starter = ThreadPoolExecutor(max_workers=STARTER_THREADS,
                                          thread_name_prefix="intercode-spare")
        return _starter


class Spares:
    """One environment's warm spares, and its link to the environment it was forked from.

    ``pending``: the spares being begun or ready, first begun first (each a future of the
    spare, ``None`` if it could not be begun); ``wanted``: how many to keep;
    ``ready_task``: for a spare, the task whose episode it began in the background (never
    handed out since); ``parent`` / ``forked_on``: for a fork, the environment it was
    forked from and the thread that forked it (its agent's sandbox goes back to that
    environment as a warm spare when it is closed on that thread).
    """

    def __init__(self, wanted: int) -> None:
        self.pending: deque[Future[EnvCore | None]] = deque()
        self.wanted = wanted
        self.spareless = False  # _prestart() said this environment cannot keep a spare
        self.ready_task: int | None = None
        self.parent: weakref.ref[EnvCore] | None = None
        self.forked_on = 0

    def set_wanted(self, count: int) -> None:
        """Keep ``count`` spares (bounded by :data:`MAX_SPARES`), closing those beyond."""
        self.wanted = max(0, min(int(count), MAX_SPARES))
        while len(self.pending) > self.wanted:
            close_pending(self.pending.pop())

    def take(self) -> EnvCore | None:
        """The first warm spare that is ready, else the one begun first, handed over
        (``None`` if there is none or it failed)."""
        if not self.pending:
            return None
        for i, pending in enumerate(self.pending):
            if pending.done():
                del self.pending[i]
                break
        else:
            pending = self.pending.popleft()
        spare = pending.result()
        if spare is not None:
            spare._spares.wanted = self.wanted
        elif self.spareless:
            self.set_wanted(0)  # this environment cannot begin one: stop trying
        return spare

    def refill(self, owner: EnvCore) -> None:
        """Begin new warm spares of ``owner`` for its next forks, up to ``wanted``.

        The spare is a sibling of its own, sandboxes included: nothing of it is reachable
        from the owner's sandboxes, and it is closed with the owner. It is built on the
        process's spare-starting thread (:func:`spare_starter`), so that the caller does
        not wait for its processes to be spawned; its sandboxes then live until it is
        closed (or the process ends), whichever thread uses it.
        """
        index = owner.task.index if owner.task is not None else None
        while len(self.pending) < self.wanted and not self.spareless:
            plan = owner._spare_plan() if index is not None else None
            self.pending.append(spare_starter().submit(begin_spare, owner, index, plan))

    def drop(self) -> None:
        """Close the spares kept now."""
        while self.pending:
            close_pending(self.pending.popleft())

    def forked_from(self, parent: EnvCore) -> None:
        """Remember that this environment's owner is a fork of ``parent``, made now on
        this thread."""
        self.parent, self.forked_on = weakref.ref(parent), threading.get_ident()

    def recycle(self, fork: EnvCore) -> None:
        """On the close of ``fork`` (this object's owner): its agent's sandbox goes back to
        the environment it was forked from as a warm spare (reset on the spare-starting
        thread: every process killed, the pristine tree, a fresh shell, then reset to that
        environment's task as any spare), so that a fork that follows a closed one needs
        no sandbox's boot. Only when closed on the thread that forked it, while that
        environment is open and keeps no more than ``wanted`` spares (so one more at
        most: forks that are closed in turn need no new spare); otherwise the sandbox
        stops."""
        ref, self.parent = self.parent, None
        parent = ref() if ref is not None else None
        if (parent is None or parent._closed or not parent._spares.wanted
                or threading.get_ident() != self.forked_on
                or len(parent._spares.pending) > parent._spares.wanted):
            return
        box = fork._detach_agent()
        if box is None:
            return
        index = parent.task.index if parent.task is not None else None
        plan = parent._spare_plan() if index is not None else None
        try:
            pending = spare_starter().submit(recycled_spare, parent, box, index, plan)
        except RuntimeError:  # the process is ending (no new work for its threads)
            box.close()
            return
        parent._spares.pending.append(pending)


def close_pending(pending: Future[EnvCore | None]) -> None:
    """Close the spare of ``pending`` (waits until it was begun)."""
    spare = pending.result()
    if spare is not None:
        spare.close()


def begin_spare(owner: EnvCore, index: int | None = None,
                plan: object = None) -> EnvCore | None:
    """A sibling of ``owner`` whose sandboxes were begun (on the spare-starting thread), or
    ``None`` (a failure to begin one is not an error: the next fork starts a sibling
    itself). With ``index`` (the owner's task when the spare was begun), the spare also
    finishes its boot and starts an episode of that task there, then follows ``plan``
    (``_spare_plan``), so that a fork of the same task has less left to do (see
    :func:`prepare_spare`)."""
    spare = None
    try:
        spare = owner.sibling()
        spare._spares.wanted = 0  # a spare keeps no spare of its own
        if spare._prestart():
            if index is not None:
                prepare_spare(spare, index, plan)
            return spare
        owner._spares.spareless = True  # nothing to gain here: do not build siblings again
    except Exception:  # e.g. no sandbox can start now: fork() will say why
        log.debug("could not begin a spare environment for fork()", exc_info=True)
    if spare is not None:
        spare.close()
    return None


def prepare_spare(spare: EnvCore, index: int, plan: object = None) -> None:
    """On the spare-starting thread: wait for ``spare``'s boot, reset it to task ``index``
    (what :meth:`EnvCore.fork` would do first) and follow ``plan``
    (``_prepare_fork``). A failure is left to the fork, which then resets the spare
    itself (and says why, if it cannot)."""
    try:
        spare.reset(options={"task": index})
        if plan is not None:
            spare._prepare_fork(plan)
    except Exception:
        spare._spares.ready_task = None  # whatever was done: the fork resets it
        log.debug("a warm spare could not start task %s in the background", index,
                  exc_info=True)
        return
    spare._spares.ready_task = index


def recycled_spare(parent: EnvCore, box: Sandbox, index: int | None,
                   plan: object) -> EnvCore | None:
    """A sibling of ``parent`` around ``box``, a closed fork's agent sandbox (see
    :meth:`Spares.recycle`), or ``None`` (it is stopped: the next fork takes another spare
    or starts one)."""
    spare = None
    try:
        if not box.alive:
            raise RuntimeError("the closed fork's sandbox stopped")
        box.reset()  # nothing of the closed fork's agent is left running
        spare = parent.sibling()
        spare._spares.wanted = 0
        spare._adopt_agent(box)
        if index is not None:
            prepare_spare(spare, index, plan)
        return spare
    except Exception:
        log.debug("a closed fork's sandbox could not become a warm spare", exc_info=True)
        if spare is not None:
            spare.close()
        box.close()
        return None
