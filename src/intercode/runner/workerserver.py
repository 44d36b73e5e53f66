"""The fork server a local run's workers are forked from, and starting it early.

Light on purpose (``multiprocessing`` and nothing of intercode's): the command line starts
the server with it before it imports its own modules and builds its parser (see
``intercode.cli``), so that the server's imports, most of a run's start-up, overlap them.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

__all__ = ["BUILTIN_ENV_MODULES", "LAST", "PRELOAD", "PRELOAD_GYMNASIUM", "importing_main",
           "signal_ignored", "start", "stop", "worker_context"]

# what a fork server imports once for all the workers it forks (besides the environment's
# own module): a worker forked from it starts without importing anything. A built-in
# benchmark's workers build its environment's core (see intercode.envs.core), so neither
# Gymnasium nor numpy is imported.
PRELOAD = ("intercode.runner.worker", "intercode.runner.episode", "intercode.envs.factory",
           "intercode.agents.gold", "intercode.agents.replay", "intercode.runner.preload")

# what a plugin's environment, a ``gymnasium.Env``, needs besides: Gymnasium. The first
# tells the math libraries one thread (see onethread), before numpy is imported.
PRELOAD_GYMNASIUM = ("intercode.runner.onethread", "gymnasium")

# imported after everything else: Ctrl-C's default handler back (see ``start``)
LAST = "intercode.runner.preloaded"

# the module of each built-in benchmark's environment core (a test checks them against
# the registry), so that the server can start before the registry is imported
BUILTIN_ENV_MODULES = {name: f"intercode.envs.core.{name}"
                       for name in ("bash", "sql", "python", "ctf", "swe")}


def worker_context(env: str, quiet_start: bool = False) -> Any:
    """The multiprocessing context workers start from: a fork server that preloaded the
    modules every worker needs (a worker costs a fork, not an interpreter's start-up and
    its imports), where the platform has one; else ``spawn``. ``quiet_start``: the server
    is started with SIGINT ignored (see :func:`start`), and its last import puts Python's
    default handler back."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # taken when the server starts: the first run of this process chooses them
    extra = [] if env in BUILTIN_ENV_MODULES else list(PRELOAD_GYMNASIUM)
    ctx.set_forkserver_preload([*extra, *PRELOAD, *_env_module(env),
                                *([LAST] if quiet_start else [])])
    return ctx


def start(env: str, fork: bool = False) -> int | None:
    """Start the fork server of benchmark ``env``'s workers now, unless one runs; the pid
    of the server this call started (``None``: none).

    Nothing in a worker still importing the run's main script (one that starts a run when
    imported): the run's own check says so in one line (``executors.refuse_nested_start``),
    where multiprocessing would raise its long bootstrapping error here.

    In the main thread, where Ctrl-C has a handler, the server starts with SIGINT ignored,
    as it ignores it once its imports are done: a Ctrl-C meanwhile (sent to the whole
    process group) stops the run, which the server then follows, instead of printing the
    traceback of the import it interrupted; its last import (:data:`LAST`) puts Python's
    default handler back for the processes it forks, which they would have had without
    this. A caller that ignores SIGINT (or whose handler is not Python's) is left as it
    is: its processes ignore it, or get the default, as they would have.

    ``fork``: the server is a fork of this process (see :func:`_fork_server`), for the
    program's own process only (``intercode.cli.run``): it never returns into the caller
    and keeps none of its descriptors, so no object of a caller's may own one (a
    logging handler's file, say: the fork's garbage collector or its workers would close
    or write to whatever reused the number)."""
    if importing_main():
        return None
    from multiprocessing import forkserver

    server = forkserver._forkserver
    before = getattr(server, "_forkserver_pid", None)
    quiet = (threading.current_thread() is threading.main_thread()
             and callable(signal.getsignal(signal.SIGINT)))
    ctx = worker_context(env, quiet_start=quiet)
    if ctx.get_start_method() != "forkserver":
        return None
    _untracked()
    with signal_ignored(signal.SIGINT) if quiet else nullcontext():
        if not (fork and _fork_server(server)):
            forkserver.ensure_running()
    pid = getattr(server, "_forkserver_pid", None)
    return pid if isinstance(pid, int) and pid != before else None


# the arguments of multiprocessing's fork server loop (``forkserver.main``) as Python 3.11
# to 3.13 have them; where they differ (3.14 adds an authentication key), the server is
# started as multiprocessing starts it
_SERVER_MAIN_ARGS = ("listener_fd", "alive_r", "preload", "main_path", "sys_path")


def _fork_server(server: Any) -> bool:
    """Start multiprocessing's fork server ``server`` as a fork of this process instead of
    a new interpreter, as its ``ensure_running`` would otherwise (the same socket, the
    same "alive" pipe, the same modules preloaded): the server skips an interpreter's
    start and the site's path handling, on the run's critical path at its start. Only
    where this process runs one thread (a fork of a threaded one may inherit a lock held
    for ever), the loop is the one known and ``/proc`` lists this process's descriptors
    (the fork closes all those a spawned server would not get); False: nothing was
    started (start it the usual way)."""
    import socket
    from multiprocessing import connection, forkserver, resource_tracker, util

    loop = getattr(forkserver, "main", None)
    code = getattr(loop, "__code__", None)
    if (code is None or code.co_varnames[:code.co_argcount] != _SERVER_MAIN_ARGS
            or code.co_kwonlyargcount or threading.active_count() != 1):
        return False
    with server._lock:
        resource_tracker.ensure_running()
        if server._forkserver_pid is not None:
            return False
        with socket.socket(socket.AF_UNIX) as listener:
            address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
            listener.bind(address)
            if not util.is_abstract_socket_namespace(address):
                os.chmod(address, 0o600)
            listener.listen()
            alive_r, alive_w = os.pipe()
            keep = (0, 1, 2, listener.fileno(), alive_r)
            try:  # the descriptors the fork gets (one thread: none is opened meanwhile)
                others = [fd for fd in _open_descriptors() if fd not in keep]
            except OSError:  # no /proc to list them: spawned
                os.close(alive_r)
                os.close(alive_w)
                return False
            try:
                pid = os.fork()
            except BaseException:
                os.close(alive_r)
                os.close(alive_w)
                raise
            if pid == 0:
                _serve_forked(server, loop, listener.fileno(), alive_r, others,
                              list(server._preload_modules))
            os.close(alive_r)
        server._forkserver_address = address
        server._forkserver_alive_fd = alive_w
        server._forkserver_pid = pid
    return True


def _open_descriptors() -> list[int]:
    """This process's open descriptors, as ``/proc`` lists them (OSError: it cannot)."""
    return [int(name) for name in os.listdir("/proc/self/fd")]


def _serve_forked(server: Any, loop: Any, listener: int, alive_r: int, others: list[int],
                  preload: list[str]) -> None:
    """The forked server's whole life; it never returns into the caller's code. It keeps
    only the descriptors a spawned server gets (the standard three, the socket, the read
    end of the "alive" pipe, whose EOF once every client is gone ends it): it closes
    ``others``, all the rest. It runs multiprocessing's own loop and exits without the
    caller's clean-up (``atexit``). The server's lock, held by the caller across the
    fork, is a new one here (the workers forked from this process start with it free),
    and the caller's resource tracker is not the server's: none, as a spawned server."""
    from multiprocessing import resource_tracker

    status = 1
    try:
        server._lock = threading.Lock()
        for fd in others:
            try:
                os.close(fd)
            except OSError:  # (the listing's own descriptor, closed before the fork)
                pass
        tracker: Any = resource_tracker._resource_tracker
        tracker._fd = tracker._pid = None
        loop(listener, alive_r, preload)
        status = 0
    except SystemExit as exc:  # how the loop ends at the pipe's EOF
        status = 0 if exc.code is None else 1
    except BaseException:  # as a spawned server would show it
        sys.excepthook(*sys.exc_info())
        sys.stderr.flush()
    finally:
        os._exit(status)


def _untracked() -> None:
    """Point this process's ``multiprocessing`` resource tracker at ``/dev/null`` instead
    of letting the fork server start it: it is a whole interpreter (about 40 ms of CPU,
    when the command line and the server's imports already compete for the cores), and
    a run's workers make nothing it tracks (named semaphores, shared memory: they talk
    over pipes). Only where this process has none yet and the tracker is the one known
    (its descriptor and process unset): anything else is left to start as usual."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    if tracker is None or getattr(tracker, "_fd", 0) is not None or getattr(
            tracker, "_pid", 0) is not None:
        return
    tracker._fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


def stop(pid: int) -> None:
    """End the fork server ``pid`` (one :func:`start` started) now, if it is still the
    one this process runs: a command that failed before its run used it (bad arguments)
    does not leave it importing for nothing, with the command's output pipe open
    (``intercode eval ... | cat`` waited for it). A server started by something else
    in the process (another run in another thread) is never touched."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    if getattr(server, "_forkserver_pid", None) != pid:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # multiprocessing's own stop (it reaps the server and forgets it), so that a later
    # run of this process starts a new one: a caller of ``intercode.cli.main`` may run
    # another command after one that failed
    forget = getattr(server, "_stop", None)
    if callable(forget):
        forget()


def importing_main() -> bool:
    """Whether this process is a worker still importing the run's main script
    (multiprocessing runs the script again in each process it starts)."""
    return bool(getattr(mp.current_process(), "_inheriting", False))


@contextmanager
def signal_ignored(signum: int) -> Iterator[None]:
    """Signal ``signum`` ignored meanwhile, then its handler back (in the main thread, the
    only one that may set it; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signum, signal.SIG_IGN)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signum, previous)


def _env_module(env: str) -> list[str]:
    """The module of the class benchmark ``env``'s workers build, if it is known here."""
    if env in BUILTIN_ENV_MODULES:
        return [BUILTIN_ENV_MODULES[env]]
    from intercode.benchmarks import get

    try:
        target = get(env).worker_env
    except Exception:  # an unknown benchmark: the worker reports it
        return []
    if isinstance(target, str):
        return [target.split(":", 1)[0]]
    module = getattr(target, "__module__", None)
    return [module] if isinstance(module, str) else []
