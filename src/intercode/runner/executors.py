"""Executors run many episodes at once: a local pool of worker processes, or whatever an
:class:`ExecutorFactory` the caller of :func:`intercode.runner.run.execute` hands in makes
(the command line's ``--executor ray`` hands in the Ray integration's: the runner imports
no integration)."""

from __future__ import annotations

import os
import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from intercode.agents.names import STRATEGIES
from intercode.errors import ConfigError, FatalRunError, RunAborted
from intercode.runner import pinning
from intercode.runner.worker import WorkerSpec, make_env, make_policy, worker_main
from intercode.runner.workerserver import importing_main, signal_ignored, start, worker_context

if TYPE_CHECKING:  # the run's main process imports this module: no Gymnasium there
    from intercode.envs.core.base import EnvCore
    from intercode.envs.settings import EnvSettings

OnRecord = Callable[[dict[str, Any]], None]
# told the root file system the episodes run on, by an executor whose nodes build their own
OnRoot = Callable[[dict[str, Any] | None], None]

# RunAborted lives in intercode.errors; it stays importable from here
__all__ = ["Executor", "ExecutorFactory", "InlineExecutor", "LocalExecutor",
           "LocalExecutorFactory", "OnRecord", "OnRoot", "RunAborted", "error_record",
           "refuse_nested_start", "worker_context"]


class Executor(Protocol):
    """Runs a run's episodes."""

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        """Run every task; call ``on_record`` in this process as each one finishes."""


class ExecutorFactory(ABC):
    """Where a run's episodes run (``RunConfig.executor``): checks a run before anything
    is written, says what ``config.json`` records of it, and makes the executor."""

    name: ClassVar[str]  # config.json's "executor"
    # whether the episodes run on this machine: the sandbox is checked and the root file
    # system built here, once, before the run; if not, each node does it for itself and
    # the executor reports the root through ``on_root``
    runs_here: ClassVar[bool] = True

    def check(self, agent: str, settings: EnvSettings) -> None:  # noqa: B027 -- none here
        """Refuse, with a :class:`~intercode.errors.ConfigError`, a run it cannot do."""

    def prepare(self, spec_env: str) -> None:  # noqa: B027 -- nothing to prepare here
        """Start, ahead of the run, what its workers will need (while the run's own
        checks go on); ``spec_env``: the benchmark."""

    def recorded(self) -> dict[str, Any]:
        """Its options as ``config.json`` records them (beside ``"executor"``)."""
        return {}

    @abstractmethod
    def __call__(self, spec: WorkerSpec, workers: int, on_root: OnRoot) -> Executor:
        """The executor of a run of ``spec`` with ``workers`` episodes at once."""


@dataclass(frozen=True)
class LocalExecutorFactory(ExecutorFactory):
    """Worker processes on this machine (:class:`LocalExecutor`): the default.

    ``cpu_pinning``: ``auto``, ``on`` or ``off``, whether each worker keeps a CPU of its
    own (see :mod:`intercode.runner.pinning`).
    """

    name: ClassVar[str] = "local"
    cpu_pinning: str = "auto"

    def __post_init__(self) -> None:
        pinning.check(self.cpu_pinning)

    def check(self, agent: str, settings: EnvSettings) -> None:
        """Refuse ``cpu_pinning="on"`` for the human agent, who plays in this process."""
        if agent == "human" and self.cpu_pinning == "on":
            raise ConfigError("cpu_pinning applies to worker processes; the human agent "
                              "plays in this process")

    def recorded(self) -> dict[str, Any]:
        """``cpu_pinning``, as given."""
        return {"cpu_pinning": self.cpu_pinning}

    def prepare(self, spec_env: str) -> None:
        """Start the fork server now: it imports the workers' modules while the run
        checks its sandbox and root file system."""
        start(spec_env)

    def __call__(self, spec: WorkerSpec, workers: int, on_root: OnRoot) -> Executor:
        """A :class:`LocalExecutor` (the root is this machine's: ``on_root`` unused)."""
        return LocalExecutor(spec, workers, self.cpu_pinning)


# the exit code of a worker that imported the run's own script and found it starting a
# run again (a script without ``if __name__ == "__main__":``; see ``refuse_nested_start``)
MAIN_REIMPORTED = 86
NO_MAIN_GUARD = ("the script starts a run when it is imported: worker processes import the "
                 "main script, so call execute() under `if __name__ == \"__main__\":`")


def refuse_nested_start() -> None:
    """End this process, with one line, if it is a worker still importing the run's main
    script (multiprocessing runs the script again in each worker it starts)."""
    if importing_main():
        # one write (a print is two on an unbuffered stderr): the run's own line, written
        # to the same stderr at about the same time, came between the two
        os.write(2, f"intercode: {NO_MAIN_GUARD}\n".encode())
        os._exit(MAIN_REIMPORTED)


def _umask() -> int | None:
    """This process's umask, read without setting it (``os.umask`` would, for a moment,
    in every thread); ``None`` where ``/proc`` does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


# A worker whose last episode took less than this is sent its next task with the current
# one: it starts it as soon as it has sent its record, without waiting for this process
# to be scheduled, read the record and answer (on a small machine, busy with the other
# workers' sandboxes, that wait was a tenth of a short episode). Not for the agents that
# call a model (their episodes are long: the wait does not count), and not among the
# run's last tasks (one per worker): a task sent ahead waits behind the worker's current
# one, and at the end of a run another worker could have taken it at once.
PREFETCH_BELOW_S = 0.1


@dataclass
class _Worker:
    wid: int
    proc: BaseProcess
    conn: Connection
    cpu: int | None  # the CPU it is pinned to, if any
    tasks: list[int] = field(default_factory=list)  # sent, in order; the first runs
    quick: bool = False  # its last episode took less than PREFETCH_BELOW_S
    served: int = 0  # records it sent
    unsent: int | None = None  # where in tasks the first one whose send failed is

    @property
    def task(self) -> int | None:
        """The task it runs (or will run next), if any."""
        return self.tasks[0] if self.tasks else None


class LocalExecutor:
    """``workers`` processes, each with its own environment and sandboxes.

    A worker that dies mid-episode is replaced and its episode recorded as an error.
    ``cpu_pinning``: see :mod:`intercode.runner.pinning`.
    """

    def __init__(self, spec: WorkerSpec, workers: int, cpu_pinning: str = "auto") -> None:
        self.spec = spec
        self.workers = max(1, workers)
        self._pinning = pinning.check(cpu_pinning)
        self._cpus: list[int] = []  # the CPUs workers are pinned to (see run)
        self._run_cpus: list[int] = []  # this process's: an unpinned worker's
        self._ctx = worker_context(spec.env)
        self._ahead = spec.agent not in STRATEGIES  # whether tasks may be sent ahead
        self._pool: list[_Worker] = []
        self._next_id = 0

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        """Run every task; call ``on_record`` in this process as each one finishes."""
        queue = list(tasks)
        starting = min(self.workers, len(queue))
        self._run_cpus = pinning.usable_cpus()
        self._cpus = pinning.plan(self._pinning, starting, self.spec.agent,
                                  self.spec.settings.sandbox, self._run_cpus)
        with _pipes_never_kill():
            try:
                for _ in range(starting):
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
        # the worker's parent is the fork server (whose death, as the run's, stops it); it
        # gets the run's environment and umask as they are now, not as the server started
        # with them
        forked = self._ctx.get_start_method() == "forkserver"
        cpu = pinning.choose(self._cpus, [w.cpu for w in self._pool])
        proc = self._ctx.Process(target=worker_main, daemon=True, args=(
            self.spec, child, wid, None if forked else os.getpid(), dict(os.environ),
            _umask(), self._run_cpus if cpu is None else [cpu]))
        proc.start()
        child.close()
        worker = _Worker(wid, proc, parent, cpu)
        self._pool.append(worker)
        return worker

    def _dispatch(self, worker: _Worker, queue: list[int]) -> None:
        """Send tasks until the worker has one (two while its episodes are quick, see
        :data:`PREFETCH_BELOW_S`). A send to a worker that died meanwhile fails: the
        task stays its own, and its death is handled with them (see :meth:`_replace`)."""
        if worker.unsent is not None:  # it is dead: nothing more to send
            return
        ahead = self._ahead and worker.quick and len(queue) > len(self._pool)
        while queue and len(worker.tasks) < (2 if ahead else 1):
            task = queue.pop(0)
            worker.tasks.append(task)
            try:
                worker.conn.send(task)
            except OSError:  # its end of the pipe is closed: its death comes next
                worker.unsent = len(worker.tasks) - 1
                return

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
                    w.tasks.pop(0)
                    w.served += 1
                    if w.unsent is not None:
                        w.unsent -= 1
                    duration = msg["record"].get("duration_s")
                    w.quick = isinstance(duration, float) and duration < PREFETCH_BELOW_S
                    self._dispatch(w, queue)  # keep the worker busy while we write
                    on_record(msg["record"])
            elif w.proc.sentinel in ready:
                self._replace(w, queue, on_record)

    def _replace(self, worker: _Worker, queue: list[int], on_record: OnRecord) -> None:
        worker.proc.join(timeout=5)
        code = worker.proc.exitcode
        if code == MAIN_REIMPORTED:
            raise RunAborted(NO_MAIN_GUARD)
        # the first of its tasks is the one it died in, unless that one never reached it
        # (its send failed: it goes back, like those sent after it); a worker that dies
        # before it sent any record still costs each task it gets an error record (a
        # worker that cannot start must not be replaced for ever)
        running = 0 if worker.unsent == 0 and worker.served else 1
        if worker.task is not None and running:
            on_record(_died(self.spec, worker.task, worker.wid, code))
        queue[:0] = worker.tasks[running:]  # never started
        worker.tasks = []
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


def _pipes_never_kill() -> AbstractContextManager[None]:
    """``SIGPIPE`` ignored while the workers run. The command line sets it to its default
    (``intercode ... | head`` ends quietly), and with it a write to the pipe of a worker
    that had just died (a task sent, or the stop at the end) killed the whole run at
    once, silently, instead of raising the ``BrokenPipeError`` that the death's handling
    expects."""
    return signal_ignored(signal.SIGPIPE)


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
        env: EnvCore | None = None
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
