"""Long-lived worker threads for an async server's blocking environment calls.

Environment calls block (a sandbox's reply is waited for with ``poll``), so an async
server runs them off its event loop. They run in threads of the server's own, which
live as long as it does: bubblewrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``,
which follows the *thread* that started a sandbox, so a worker thread that retires
(as anyio's idle ones do) would take the warm sandboxes it started with it.

:class:`Workers` is the hand-off in its leanest form: a call is one item on a
``SimpleQueue`` and one ``call_soon_threadsafe`` back to the loop with its result, with
no ``concurrent.futures.Future`` in between (``loop.run_in_executor`` chains two futures
and their callbacks across the threads). A thread is started when every existing one is
busy, up to ``limit``; past it, calls queue in order.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Workers"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any],
              tuple[Any, ...], Callable[[], object] | None]


class Workers:
    """At most ``limit`` threads running blocking calls for an event loop."""

    def __init__(self, limit: int, name: str = "intercode-serve") -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self.name = name
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for an item (or about to)
        self._closed = False

    def threads(self) -> int:
        """Worker threads started so far (they never retire before :meth:`shutdown`)."""
        with self._lock:
            return len(self._threads)

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread; its result (or exception) here. Cancelled
        before a thread took it, the call does not run; once running, it runs to its
        end (its result is dropped)."""
        return await self.submit(call, *args)

    def submit(self, call: Callable[..., T], *args: Any,
               finished: Callable[[], object] | None = None) -> asyncio.Future[T]:
        """Queue ``call(*args)`` (on the running loop); the future of its result.
        ``finished`` is called on the loop once a thread is done with the call (it ran,
        or was skipped because the future had been cancelled), whether or not anyone
        still waits: what the call holds is free then, not when a waiter gave up.
        Raises (and queues nothing) once the pool is shut down."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker threads have been shut down")
            if self._idle:
                self._idle -= 1  # claimed: a second call does not count on it
            elif len(self._threads) < self.limit:
                thread = threading.Thread(target=self._work, name=f"{self.name}_"
                                          f"{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
            self._queue.put((loop, future, call, args, finished))
        return future

    def shutdown(self) -> None:
        """Let every thread end after its current call (queued calls do not run)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._queue.put(None)

    def _work(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            loop, future, call, args, finished = item
            result: Any = None
            error: BaseException | None = None
            if future.done():  # the caller gave up (or was answered) before it ran
                pass
            elif self._closed:
                error = RuntimeError("the server is shutting down")
            else:
                try:
                    result = call(*args)
                except BaseException as exc:  # handed to the caller, whatever it is
                    error = exc
            self._done()
            _settle(loop, future, result, error, finished)
            del item, future, call, args, finished, result, error

    def _done(self) -> None:
        with self._lock:
            self._idle += 1


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
            exc: BaseException | None, finished: Callable[[], object] | None) -> None:
    try:
        loop.call_soon_threadsafe(_set, future, result, exc, finished)
    except RuntimeError:  # the loop is closed: nobody waits any more
        log.debug("a worker's result arrived after its event loop closed")


def _set(future: asyncio.Future[Any], result: Any, exc: BaseException | None,
         finished: Callable[[], object] | None) -> None:
    try:
        if future.done():  # cancelled, or answered already (the server is shutting down)
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
    finally:
        if finished is not None:
            finished()
