"""Warm environments lent out and given back in one process (the servers' sessions,
Inspect's samples): the next borrower pays a reset (milliseconds), never a sandbox start.

Environments are kept by (benchmark, dataset, settings). Every episode starts with a
reset, which restores the pristine state and kills every process the last one left, and
a returned environment forgets what its episodes leave to later ones
(``forget_history``), so it carries nothing from one borrower to the next. A broken environment
(an infrastructure error, or the agent broke its own sandbox) is closed, never lent again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from intercode.envs.base import IntercodeEnv
from intercode.envs.factory import make_env
from intercode.envs.settings import EnvSettings

__all__ = ["PoolKey", "WarmPool", "discard"]

#: Which environments are interchangeable: (benchmark, dataset, settings).
PoolKey = tuple[str, str, EnvSettings]


class WarmPool:
    """Idle environments by :data:`PoolKey`, lent by :meth:`borrow` and taken back by
    :meth:`give_back` (thread-safe).

    ``keep``: at most this many idle environments per key (``None``: no bound).
    ``scrub``: a returned environment is reset at once (what its last episode left running
    ends now, not at the next borrower's reset) and must be reset before its next use.
    """

    def __init__(self, keep: int | None = None, scrub: bool = False) -> None:
        self.keep = keep
        self.scrub = scrub
        self._lock = threading.Lock()
        self._idle: dict[PoolKey, list[IntercodeEnv]] = {}
        self._closed = False

    def borrow(self, key: PoolKey,
               build: Callable[[], IntercodeEnv] | None = None) -> IntercodeEnv:
        """An idle environment of ``key``, or a new one (``build()``, by default
        :func:`~intercode.envs.factory.make_env` of the key)."""
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return build() if build is not None else make_env(*key)

    def give_back(self, key: PoolKey, env: IntercodeEnv, broken: bool = False) -> None:
        """Take ``env`` back to lend it again (a broken one, or one past ``keep``, or any
        after :meth:`shutdown`, is closed instead)."""
        keep = not broken and self._has_room(key)
        if keep:
            env.forget_history()  # nothing of this borrower's episodes reaches the next
        if keep and self.scrub and env.task is not None:
            try:  # end what the last episode left running now, not at the next reset
                env.reset(options={"task": env.task.index})
            except Exception:
                keep = False
            else:
                env.task = None  # the next borrower must reset first
        if keep:
            with self._lock:
                if self._has_room_locked(key):
                    self._idle.setdefault(key, []).append(env)
                    return
        discard(env)

    def idle(self) -> int:
        """Idle environments, of every key."""
        with self._lock:
            return sum(len(envs) for envs in self._idle.values())

    def idle_envs(self) -> list[IntercodeEnv]:
        """The idle environments now, of every key."""
        with self._lock:
            return [env for envs in self._idle.values() for env in envs]

    def close(self) -> None:
        """Close every idle environment (those given back later are kept again)."""
        self._close_idle()

    def shutdown(self) -> None:
        """Close every idle environment, and those given back from now on."""
        with self._lock:
            self._closed = True
        self._close_idle()

    def _close_idle(self) -> None:
        with self._lock:
            envs = [env for envs in self._idle.values() for env in envs]
            self._idle.clear()
        for env in envs:
            env.close()

    def _has_room(self, key: PoolKey) -> bool:
        with self._lock:
            return self._has_room_locked(key)

    def _has_room_locked(self, key: PoolKey) -> bool:
        return not self._closed and (self.keep is None
                                     or len(self._idle.get(key, ())) < self.keep)


def discard(env: IntercodeEnv) -> None:
    """Close ``env`` for good (a broken environment may fail to close; it is gone anyway)."""
    try:
        env.close()
    except Exception:
        pass
