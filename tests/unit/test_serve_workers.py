"""The serve layer's worker threads: results and errors come back, threads are reused and
never retire (a sandbox dies with the thread that started it), a call cancelled before
it ran does not run, and a shut-down pool refuses work."""

from __future__ import annotations

import threading

import anyio
import pytest

from intercode.integrations.serve.workers import Workers


def test_results_and_errors_come_back_from_long_lived_threads():
    workers = Workers(4)
    names: list[str] = []

    def where(x: int) -> int:
        names.append(threading.current_thread().name)
        return x * 2

    def fail() -> None:
        raise ValueError("boom")

    async def main() -> None:
        for i in range(20):  # one at a time: the first thread serves them all
            assert await workers.run(where, i) == 2 * i
        with pytest.raises(ValueError, match="boom"):
            await workers.run(fail)

    try:
        anyio.run(main)
        assert workers.threads() == 1
        assert set(names) == {"intercode-serve_0"}
        thread = next(t for t in threading.enumerate() if t.name == "intercode-serve_0")
        assert thread.is_alive()  # idle, not retired
    finally:
        workers.shutdown()


def test_blocked_calls_get_threads_of_their_own_up_to_the_limit():
    workers = Workers(3)
    gate = threading.Event()
    started = threading.Semaphore(0)

    def wait() -> str:
        started.release()
        gate.wait(30)
        return threading.current_thread().name

    async def main() -> list[str]:
        names: list[str] = []

        async def one() -> None:
            names.append(await workers.run(wait))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
            for _ in range(3):  # all three run at once: none waits for another
                await anyio.to_thread.run_sync(started.acquire, True, 30)
            gate.set()
        return names

    try:
        assert len(set(anyio.run(main))) == 3
        assert workers.threads() == 3
    finally:
        workers.shutdown()


def test_a_call_cancelled_before_it_ran_does_not_run():
    workers = Workers(1)
    gate = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    def hold() -> None:
        started.set()
        gate.wait(30)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(workers.run, hold)  # holds the only thread
            await anyio.to_thread.run_sync(started.wait, 30)
            with anyio.move_on_after(0.05):
                await workers.run(ran.append, "late")  # queued behind it, then given up
            gate.set()
        assert await workers.run(ran.append, "next") is None

    try:
        anyio.run(main)
        assert ran == ["next"]
    finally:
        workers.shutdown()


def test_a_shut_down_pool_refuses_work():
    workers = Workers(2)
    workers.shutdown()

    async def main() -> None:
        with pytest.raises(RuntimeError, match="shut down"):
            await workers.run(int)

    anyio.run(main)
    with pytest.raises(ValueError, match="at least 1"):
        Workers(0)


def test_finished_comes_when_the_thread_is_done_not_when_the_waiter_gives_up():
    workers = Workers(2)
    gate = threading.Event()
    started = threading.Event()
    events: list[str] = []

    def hold() -> str:
        started.set()
        gate.wait(30)
        events.append("call ended")
        return "late"

    async def main() -> None:
        running = anyio.Event()
        future = workers.submit(hold, finished=lambda: (events.append("finished"),
                                                        running.set()))
        await anyio.to_thread.run_sync(started.wait, 30)
        future.cancel()  # the waiter gives up while the call runs
        await anyio.sleep(0.05)
        assert events == []  # the thread is still busy with it: not finished
        gate.set()
        await running.wait()
        # a call skipped because it was cancelled before it ran is finished too
        skipped = anyio.Event()
        gate.clear()
        started.clear()
        blocker = workers.submit(hold)
        blocker2 = workers.submit(hold)  # both threads busy
        await anyio.to_thread.run_sync(started.wait, 30)
        queued = workers.submit(events.append, "must not run", finished=skipped.set)
        queued.cancel()
        gate.set()
        await skipped.wait()
        await blocker
        await blocker2

    try:
        anyio.run(main)
        assert events[:2] == ["call ended", "finished"]
        assert "must not run" not in events
    finally:
        workers.shutdown()
