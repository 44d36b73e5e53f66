"""The execution state of a sandbox for snapshots: its file tree and its shell.

The file tree is kept inside the sandbox by its supervisor (only the changed files
are copied; see ``inbox/snaps.py``). A Bash shell's state (variables, functions,
aliases, shell options, traps, umask and directory) is captured by a script the
shell runs and replayed in the fresh shell a restore starts; a Python interpreter is
held whole, as a paused fork (``inbox/pyhold.py``). Background processes are not
carried over: :meth:`SandboxState.note` says so after a restore that had them.
"""

from __future__ import annotations

import itertools
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from intercode.errors import SnapshotError
from intercode.sandbox.base import Sandbox, snapshots_of

__all__ = ["copy", "load", "save"]

# Variables of bash itself (read-only, or describing the process or the moment), and
# the shell loop's own (``__ic_*``): never replayed.
_BASH_VARIABLES = (
    "BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS "
    "BASH_COMMAND BASH_EXECUTION_STRING BASH_LINENO BASH_LOADABLES_PATH BASH_REMATCH "
    "BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION COLUMNS DIRSTACK EPOCHREALTIME "
    "EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD HOSTNAME HOSTTYPE LINENO LINES MACHTYPE "
    "OSTYPE PIPESTATUS PPID PWD RANDOM SECONDS SHELLOPTS SHLVL SRANDOM UID _")
SKIP = frozenset(_BASH_VARIABLES.split())
_DECLARE = re.compile(r"declare -[-a-zA-Z]* ([A-Za-z_][A-Za-z0-9_]*)(=|$)")
_OPTION = re.compile(r"(shopt -[su]|set [-+]o) ([a-z_-]+)$")


def capture_script(marker: str) -> str:
    """What the shell runs to print its state: variables, then ``marker``, then the rest."""
    return ("builtin declare -p; builtin printf '\\n%s\\n' " + marker + "; builtin shopt -p; "
            "builtin umask -p; builtin alias -p; builtin declare -f; builtin trap -p; "
            "builtin set +o")


def replay_script(output: str, marker: str) -> str | None:
    """The script that rebuilds the captured state (``None``: the capture is garbled).

    The variables of bash and of the shell loop are dropped (a record of ``declare
    -p`` starts with ``declare -<flags> <name>``; other lines continue the record
    before them); the options are grouped into one command per kind.
    """
    variables, sep, rest = output.partition("\n" + marker + "\n")
    if not sep:
        return None
    kept: list[str] = []
    keep = False
    for line in variables.split("\n"):
        m = _DECLARE.match(line)
        if m is not None:
            name = m.group(1)
            keep = name not in SKIP and not name.startswith("__ic_")
        if keep:
            kept.append(line)
    options: dict[str, list[str]] = {}
    other: list[str] = []
    for line in rest.split("\n"):
        m = _OPTION.match(line)
        if m is None:
            other.append(line)
        else:
            options.setdefault(m.group(1), []).append(m.group(2))
    grouped = [f"shopt {kind[-2:]} {' '.join(names)}" if kind.startswith("shopt")
               else f"set {' '.join(kind[4] + 'o ' + n for n in names)}"
               for kind, names in options.items()]
    sets = [g for g in grouped if g.startswith("set")]
    return "\n".join([*kept, *[g for g in grouped if g.startswith("shopt")], *other, *sets])


_ids = itertools.count(1)


@dataclass
class SandboxState:
    """A snapshot of one sandbox (see the module's docstring)."""

    box: Sandbox
    cwd: str
    background: int
    held: int | None = None
    shell: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    ident: int = field(default_factory=lambda: next(_ids))
    released: bool = False

    def release(self) -> None:
        """Forget the tree copy and kill the held interpreter (if the sandbox still runs)."""
        if self.released:
            return
        self.released = True
        if self.box.alive:
            snaps = snapshots_of(self.box)
            snaps.tree_drop(self.ident)
            if self.held is not None:
                snaps.drop_held(self.held)

    def note(self) -> str:
        """What the first observation after a restore says (``""``: nothing)."""
        if not self.background:
            return ""
        return (f"[intercode] the snapshot restored had {self.background} background "
                "process(es); processes are not carried over by a restore")


def save(box: Sandbox, python: bool = False, **extra: Any) -> SandboxState:
    """The sandbox's state now: its tree, and its shell (Bash) or its interpreter."""
    snaps = snapshots_of(box)  # SnapshotUnsupported for a backend without them
    state = SandboxState(box=box, cwd="/", background=0, extra=extra)
    try:
        if python:  # the interpreter's hold and the tree's copy at once
            state.held, info = snaps.hold_during(state.ident)
        else:  # the shell's capture and the tree's copy at once
            marker = "__ic_state_" + secrets.token_hex(8)
            result, info = snaps.tree_snapshot_during(state.ident, capture_script(marker))
            state.shell = replay_script(result.output, marker)
            if state.shell is None or result.output_truncated or result.timed_out:
                raise SnapshotError("the shell's state could not be captured: "
                                    f"{result.observation[-200:]!r}")
        state.cwd, state.background = info.cwd, info.background
    except BaseException:
        state.release()
        raise
    return state


def load(box: Sandbox, state: object) -> SandboxState:
    """Bring ``box`` to ``state`` (taken of that same box)."""
    if not isinstance(state, SandboxState) or state.released:
        raise SnapshotError("not a live snapshot of this environment")
    if state.box is not box or not box.alive:
        raise SnapshotError("the sandbox was replaced since the snapshot was taken (it "
                            "stopped); its state is lost")
    counted = snapshots_of(box).tree_restore(state.ident, state.cwd, state.held,
                                             replay=state.shell)
    if counted is not None:  # counted once the held interpreter was registered
        state.background = counted
    return state


def copy(state: object, box: Sandbox, other: Sandbox) -> SandboxState:
    """``state`` (of ``box``, a Bash shell's) moved into ``other``, restored there."""
    if not isinstance(state, SandboxState) or state.released or state.box is not box:
        raise SnapshotError("not a live snapshot of this environment")
    if state.held is not None:
        raise SnapshotError("a held interpreter cannot move to another sandbox")
    moved = SandboxState(box=other, cwd=state.cwd, background=state.background,
                         shell=state.shell, extra=dict(state.extra))
    try:
        counted = snapshots_of(box).tree_copy_restore(state.ident, other, moved.ident,
                                                      moved.cwd, replay=moved.shell)
        if counted is not None:
            moved.background = counted
    finally:
        moved.release()
    return moved
