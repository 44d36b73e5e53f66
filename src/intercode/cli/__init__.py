"""The ``intercode`` command line (the only place that configures logging).

One module per sub-command, each with its parser (``add_<command>``) and what it runs
(``cmd_<command>``), importing its dependencies when it runs: ``evaluate`` (eval),
``validate``, ``play``, ``runs`` (report, compare, show, export), ``serve``, ``doctor``,
``image``, ``datasets``. Shared: ``options`` (the environment's options), ``agent_options``
(eval's model and strategy), ``argtypes`` (option values); ``app`` builds the parser and
runs a command; ``early`` starts what ``eval`` needs before any of that is imported.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

from intercode.lazy import lazy_exports

__all__ = ["build_parser", "main", "run"]

__getattr__, __dir__ = lazy_exports(globals(), {"intercode.cli.app": ["build_parser"]})


def main(argv: Sequence[str] | None = None, *, fork_server: bool = False) -> int:
    """Run the command ``argv`` (``None``: this process's arguments); its exit status.
    ``fork_server``: ``eval``'s fork server may be a fork of this process, for the
    program's own process only (:func:`run`; see ``workerserver.start``)."""
    server: int | None = None
    code = 1
    try:
        try:
            from intercode.cli.early import start_workers_early

            server = start_workers_early(sys.argv[1:] if argv is None else argv,
                                         fork=fork_server)
        except Exception:  # the command starts it again, and says in one line why it fails
            pass
        from intercode.cli.app import main as run_command

        code = run_command(argv)
    except KeyboardInterrupt:  # before the command's own handler is in place
        print("\nintercode: interrupted", file=sys.stderr)
        code = 130
    finally:
        if server is not None and code != 0:
            from intercode.runner.workerserver import stop

            stop(server)
    return code


def run() -> int:
    """The program: ``main`` on the command's arguments (``eval``'s fork server may be a
    fork of this process), then its objects are frozen (``gc.freeze``). The process ends
    next, and Python's teardown searched every object for reference cycles several times
    over (18 ms of the exit of an ``intercode eval`` here); frozen objects are freed
    without that search. Not for callers in the same process (``main``): their later
    objects would never be searched for cycles."""
    code = main(fork_server=True)
    gc.freeze()
    return code
