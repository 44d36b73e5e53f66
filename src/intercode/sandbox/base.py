"""The interface every sandbox backend implements, and what it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from intercode.errors import SandboxError, SnapshotUnsupported
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.limits import Limits

__all__ = ["Change", "ExecResult", "Sandbox", "Snapshots", "TreeSnapshotInfo", "snapshots_of"]


@dataclass(frozen=True)
class ExecResult:
    """What one action (or command) did.

    ``output`` is stdout and stderr interleaved as a terminal shows them, decoded as
    UTF-8 with invalid bytes replaced. ``notes`` are the sandbox's own messages (a
    timeout, truncated output, a restarted shell); :attr:`observation` appends them.
    ``exit_code`` is ``None`` when no status was reported (the action was not run,
    or the shell had to be replaced). ``reply`` is what an interpreter answered to a
    request of a ``kind`` (the Python scoring's values and outcomes), sent apart from
    the output; ``None`` if it sent none. It is as hostile as the output: the agent's
    code runs in that interpreter.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    output_bytes: int = 0
    output_truncated: bool = False
    shell_restarted: bool = False
    notes: tuple[str, ...] = field(default=())
    cwd: str = "/"
    reply: str | None = None

    @property
    def observation(self) -> str:
        """The output followed by the sandbox's notes, one per line."""
        if not self.notes:
            return self.output
        sep = "" if not self.output or self.output.endswith("\n") else "\n"
        return self.output + sep + "\n".join(f"[intercode] {n}" for n in self.notes)


@dataclass(frozen=True)
class TreeSnapshotInfo:
    """What a tree snapshot saw: the shell's directory and the other processes running."""

    cwd: str
    background: int


@dataclass(frozen=True)
class Change:
    """One line of the file-system diff, as ``git status --short`` showed it upstream."""

    path: str
    code: str


class Sandbox(ABC):
    """An isolated machine with a writable tree, a persistent shell and limits.

    Lifecycle: :meth:`start`, then :meth:`load` a tree (which also resets), any
    number of :meth:`run` / :meth:`reset` calls, and :meth:`close`. Methods raise
    :class:`~intercode.errors.SandboxError` on infrastructure failures only.
    """

    limits: Limits

    @classmethod
    def preflight(cls) -> None:
        """Raise :class:`~intercode.errors.SandboxUnavailableError` if this machine
        cannot run the backend at all (a missing program), before a run starts."""
        return None

    @abstractmethod
    def start(self) -> None:
        """Start the sandbox (idempotent); after :meth:`begin`, wait until it is ready."""

    def begin(self) -> None:
        """Start the sandbox's processes without waiting until they are ready, so that
        it boots while the caller goes on (a warm spare for ``fork()``); :meth:`start`
        then waits for it. By default the same as :meth:`start`."""
        self.start()

    def finish_begun(self, prepare: Callable[[], object] | None = None) -> bool:
        """After :meth:`begin`: wait until ready, then ``prepare`` it (load an empty tree,
        reset its engine). ``False``, the sandbox closed, if it died while booting (the
        caller starts another)."""
        try:
            self.start()
            if prepare is not None:
                prepare()
        except SandboxError:
            self.close()
            return False
        return True

    @abstractmethod
    def close(self) -> None:
        """Stop every process and free everything the sandbox holds (idempotent)."""

    @abstractmethod
    def load(self, tree: FileTree) -> None:
        """Make ``tree`` the pristine state, restore to it and start a fresh shell."""

    @abstractmethod
    def reset(self) -> None:
        """Kill every process, restore the pristine tree and start a fresh shell."""

    @abstractmethod
    def run(self, action: str, timeout: float | None = None,
            kind: str | None = None) -> ExecResult:
        """Run ``action`` in the persistent shell (``kind``: see the Python shell)."""

    @abstractmethod
    def exec(self, argv: Sequence[str], timeout: float | None = None, cwd: str = "/",
             stdin: bytes = b"") -> ExecResult:
        """Run ``argv`` outside the shell, to completion or timeout."""

    @abstractmethod
    def diff(self, ignore: Sequence[str] = ()) -> list[Change]:
        """Changes of the tree against the pristine state (git-status semantics)."""

    @abstractmethod
    def hashes(self, paths: Sequence[str]) -> dict[str, str]:
        """Content fingerprints of diff paths, as upstream's md5sum / md5deep compared them."""

    @abstractmethod
    def capture(self) -> FileTree:
        """The whole writable tree, with contents."""

    @property
    @abstractmethod
    def alive(self) -> bool:
        """Whether the sandbox is running."""

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class Snapshots(ABC):
    """The snapshot capability: a backend that can keep its tree (and a held Python
    interpreter) inside the sandbox and bring it back implements this besides
    :class:`Sandbox`; callers get it with :func:`snapshots_of`."""

    @abstractmethod
    def tree_snapshot(self, ident: int, held: int | None = None) -> TreeSnapshotInfo:
        """Keep the tree's state now inside the sandbox as snapshot ``ident``; ``held``:
        a copy of the interpreter (of :meth:`hold`) that the snapshot keeps."""

    def tree_snapshot_during(self, ident: int, action: str) -> tuple[ExecResult,
                                                                    TreeSnapshotInfo]:
        """Run ``action`` in the shell and keep the tree as snapshot ``ident`` (a Bash
        snapshot: the shell's state is captured while the tree is copied). By default
        one after the other; a backend may do both at once."""
        result = self.run(action)  # type: ignore[attr-defined]
        return result, self.tree_snapshot(ident)

    def hold_during(self, ident: int) -> tuple[int, TreeSnapshotInfo]:
        """Hold a copy of the interpreter and keep the tree as snapshot ``ident`` (a
        Python snapshot); returns the held copy's pid. By default one after the other;
        a backend may do both at once."""
        held = self.hold()
        return held, self.tree_snapshot(ident, held)

    @abstractmethod
    def tree_restore(self, ident: int, cwd: str, held: int | None = None,
                     replay: str | None = None) -> int | None:
        """Kill every process (held interpreters excepted), bring the tree to snapshot
        ``ident``, and start a fresh shell in ``cwd`` or, with ``held``, make a new fork
        of that held interpreter (see :meth:`hold`) the shell. ``replay``: a script
        the new Bash shell runs first, its output dropped (the shell's state). Returns
        the background processes the snapshot had if they were counted after its
        :class:`TreeSnapshotInfo` was made (see :meth:`hold_during`), else ``None``."""

    @abstractmethod
    def tree_drop(self, ident: int) -> None:
        """Forget tree snapshot ``ident``."""

    @abstractmethod
    def tree_copy(self, ident: int, other: Sandbox, other_ident: int) -> None:
        """Make tree snapshot ``ident`` snapshot ``other_ident`` of ``other`` too: a sandbox
        of the same backend only (else :class:`~intercode.errors.SnapshotError`; the
        backends lay their trees out differently)."""

    def tree_copy_restore(self, ident: int, other: Sandbox, other_ident: int, cwd: str,
                          replay: str | None = None) -> int | None:
        """:meth:`tree_copy`, then ``other``'s :meth:`tree_restore` of the copy (a fork of
        a Bash snapshot). By default one after the other; a backend may do both at once."""
        self.tree_copy(ident, other, other_ident)
        return snapshots_of(other).tree_restore(other_ident, cwd, replay=replay)

    @abstractmethod
    def hold(self) -> int:
        """Fork a held copy of the Python interpreter; its pid (pass it to the next
        :meth:`tree_snapshot`)."""

    @abstractmethod
    def drop_held(self, pid: int) -> None:
        """Kill held copy ``pid``."""


def snapshots_of(box: Sandbox) -> Snapshots:
    """``box`` as a sandbox with snapshots, else
    :class:`~intercode.errors.SnapshotUnsupported` naming its backend."""
    if isinstance(box, Snapshots):
        return box
    raise SnapshotUnsupported(f"the {type(box).__name__} backend cannot snapshot")
