"""Executors run many episodes at once: a local pool of worker processes."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

from intercode.errors import FatalRunError, RunAborted
from intercode.runner.worker import WorkerSpec, make_env, make_policy, worker_main

if TYPE_CHECKING:  # the run's main process imports this module: no Gymnasium there
    from intercode.envs.base import IntercodeEnv

OnRecord = Callable[[dict[str, Any]], None]

# RunAborted lives in intercode.errors; it stays importable from here
__all__ = ["InlineExecutor", "LocalExecutor", "OnRecord", "RunAborted", "error_record"]


@dataclass
class _Worker:
    wid: int
    proc: BaseProcess
    conn: Connection
    task: int | None = None


class LocalExecutor:
    """``workers`` processes, each with its own environment and sandboxes.

    A worker that dies mid-episode is replaced and its episode recorded as an error.
    """

    def __init__(self, spec: WorkerSpec, workers: int) -> None:
        self.spec = spec
        self.workers = max(1, workers)
        self._ctx = mp.get_context("spawn")
        self._pool: list[_Worker] = []
        self._next_id = 0

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        """Run every task; call ``on_record`` in this process as each one finishes."""
        queue = list(tasks)
        try:
            for _ in range(min(self.workers, len(queue))):
                self._spawn()
            for w in self._pool:
                self._dispatch(w, queue)
            while any(w.task is not None for w in self._pool):
                self._step(queue, on_record)
        finally:
            self.shutdown()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        wid = self._next_id
        self._next_id += 1
        proc = self._ctx.Process(target=worker_main, args=(self.spec, child, wid, os.getpid()),
                                 daemon=True)
        proc.start()
        child.close()
        worker = _Worker(wid, proc, parent)
        self._pool.append(worker)
        return worker

    def _dispatch(self, worker: _Worker, queue: list[int]) -> None:
        if queue:
            worker.task = queue.pop(0)
            worker.conn.send(worker.task)
        else:
            worker.task = None

    def _step(self, queue: list[int], on_record: OnRecord) -> None:
        busy = [w for w in self._pool if w.task is not None]
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy])
        for w in busy:
            if w.conn in ready:
                try:
                    msg = w.conn.recv()
                except (EOFError, OSError):
                    msg = None
                if msg is None:
                    self._replace(w, queue, on_record)
                elif "fatal" in msg:
                    raise RunAborted(msg["fatal"])
                else:
                    self._dispatch(w, queue)  # keep the worker busy while we write
                    on_record(msg["record"])
            elif w.proc.sentinel in ready:
                self._replace(w, queue, on_record)

    def _replace(self, worker: _Worker, queue: list[int], on_record: OnRecord) -> None:
        worker.proc.join(timeout=5)
        code = worker.proc.exitcode
        if worker.task is not None:
            on_record(_died(self.spec, worker.task, worker.wid, code))
        self._pool.remove(worker)
        worker.conn.close()
        if queue:
            self._dispatch(self._spawn(), queue)

    def shutdown(self) -> None:
        """Stop all workers (their sandboxes die with them)."""
        for w in self._pool:
            try:
                if w.task is None:
                    w.conn.send(None)
            except OSError:
                pass
        for w in self._pool:
            w.proc.join(timeout=2 if w.task is None else 0)
            if w.proc.is_alive():
                w.proc.terminate()
                w.proc.join(timeout=5)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            w.conn.close()
        self._pool = []


class InlineExecutor:
    """Episodes one after another in this process (the human agent needs the terminal)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        """Run every task in order."""
        if not tasks:
            return
        from intercode.runner.episode import run_task

        policy = make_policy(self.spec)
        env: IntercodeEnv | None = None
        try:
            for index in tasks:
                record, env = run_task(env, lambda: make_env(self.spec), index, policy,
                                       self.spec.max_turns, 0,
                                       self.spec.known_issues.get(index))
                on_record(record.to_json())
        except FatalRunError as exc:
            raise RunAborted(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if env is not None:
                env.close()


def _died(spec: WorkerSpec, task: int, wid: int, code: int | None) -> dict[str, Any]:
    return error_record(spec, task, wid,
                        f"the worker process died (exit code {code}) during this episode")


def error_record(spec: WorkerSpec, task: int, wid: int, error: str) -> dict[str, Any]:
    """The record of an episode whose worker was lost (an infrastructure error)."""
    return {"schema": 1, "env": spec.env, "dataset": spec.dataset, "task": task,
            "agent": spec.agent, "status": "error", "reward": None, "success": None,
            "turns": [], "worker": wid, "error": error}
