"""What ``intercode eval`` starts before the command line is even parsed: its workers'
fork server, whose imports (Gymnasium, NumPy, the environments: most of a run's start-up)
then overlap the command line's own imports and its parser. Read from the raw arguments,
so only for the plain form ``intercode eval <built-in env> ...`` and never where the
server would be wasted (help, the human agent, a Ray run); the command's own checks
still run, and a server started for a command that then fails exits with it."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["start_workers_early"]

# values that, anywhere in the arguments, mean the run has no local workers: the human
# agent (a person plays in this process) and Ray's actors (an option may be given as
# ``--agent human``, ``--agent=human`` or any prefix argparse accepts for its name)
NO_WORKERS = ("human", "ray")


def start_workers_early(argv: Sequence[str], fork: bool = False) -> int | None:
    """Start the fork server if ``argv`` (without the program's name) is a local ``eval``
    of a built-in environment; the pid of the server started (``None``: none, or one was
    running already). ``fork``: as a fork of this process (the console script's own
    process, see ``workerserver.start``)."""
    from intercode.runner import workerserver

    if len(argv) < 2 or argv[0] != "eval" or argv[1] not in workerserver.BUILTIN_ENV_MODULES:
        return None
    for token in argv[2:]:
        if token in ("-h", "--help") or token.startswith("--he"):
            return None
        value = token.split("=", 1)[1] if token.startswith("--") and "=" in token else token
        if value in NO_WORKERS:
            return None
    return workerserver.start(argv[1], fork=fork)
