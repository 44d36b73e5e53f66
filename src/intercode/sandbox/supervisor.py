"""The host side of the supervisor protocol, one module for every backend.

Every backend runs the same supervisor as pid 1 of its sandbox (``inbox/main.py``),
booted from source by :func:`boot_code`, and speaks to it the same way: requests and
replies on a control channel (:class:`~intercode.sandbox.channel.Channel`), actions
straight to the shell (:class:`~intercode.sandbox.shellio.ShellIO`). This module holds
that host side: the lifecycle around a launch, load / reset / run / exec / diff /
hashes / capture, and the tree snapshots. A backend is one class that subclasses
:class:`SupervisedSandbox` and implements its launch hooks only:

``_spawn()``
    Start the sandbox's process (or container) with the boot code and the
    configuration of :meth:`SupervisedSandbox._config`, and set ``self._channel`` and
    ``self._io``; it must not wait for the supervisor (see :meth:`~base.Sandbox.begin`).
``_spawned()`` / ``_ended()``
    Whether the process was started (and not closed since); whether it is gone.
``close()``
    Stop it and free what the launch holds, then call :meth:`_forget_run`.
``_startup_failure()``
    The one-line reason a start failed (the process's own error output).

Optional: ``_config()`` (add the backend's own configuration to the common one),
``_await_ready()`` (wait for a transport first), ``_after_ready()`` (connect what needs
the running sandbox), ``_ready_notes()`` (report the supervisor's ready event).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any, TypeVar, cast

from intercode.errors import SandboxError, SandboxUnavailableError, SnapshotError
from intercode.sandbox import base, bootcache, fdwait, ptyshare
from intercode.sandbox.base import Change, ExecResult
from intercode.sandbox.channel import Channel
from intercode.sandbox.filetree import Entry, FileTree
from intercode.sandbox.inbox import MODULES, proto
from intercode.sandbox.inbox.shell import FORKED
from intercode.sandbox.layout import EPOCH_NS, SCRATCH_MOUNTS, SKELETON_DIRS, Layout
from intercode.sandbox.limits import Limits
from intercode.sandbox.requests import (
    Request,
    TreeImportRequest,
    TreeRestoreRequest,
    TreeSnapRequest,
)
from intercode.sandbox.shellio import Output, ShellIO

__all__ = ["COMPILED", "RELAY", "RELAY_MODULES", "SupervisedSandbox", "boot_code", "inbox_sources",
           "sources_digest"]

# a snapshot request (they carry the snapshots to forget, see _with_drops)
D = TypeVar("D", bound=TreeSnapRequest | TreeRestoreRequest | TreeImportRequest)
MAX_REPLAY = 100_000  # bytes of a shell replay run at spawn (inbox/shell.py MAX_PRELUDE)
# the tree snapshots the supervisor keeps in its memory, all live ones together: at most
# this many full copies of the agent's writable file systems (see _snapshot_budget; on
# Docker the container gives pid 1 room for them)
SNAPSHOT_COPIES = 1
START_TIMEOUT = 30.0  # seconds a sandbox has to boot
# the supervisor's entry points: bubblewrap's pid 1 runs main() on its descriptors,
# a container's first moves its pipes onto one stream (inbox/relay.py)
MAIN = "sys.modules['icbox.main'].main(sys.argv[1:])"
RELAY = "sys.modules['icbox.relay'].boot()"


def boot_code(entry: str = MAIN) -> str:
    """The program ``python3 -I -S -c`` runs as pid 1: it reads the supervisor's modules
    (sources, or code compiled by the same Python) from descriptor ``argv[1]``, makes
    them the package ``icbox`` and runs ``entry``."""
    return (
        "import json,os,sys,types\n"
        "from struct import unpack\n"
        "fd=int(sys.argv[1])\n"
        "def rd(n):\n"
        "    b=b''\n"
        "    while len(b)<n:\n"
        "        c=os.read(fd,n-len(b))\n"
        "        if not c: sys.exit(3)\n"
        "        b+=c\n"
        "    return b\n"
        "j,k=unpack('>II',rd(8))\n"
        "mods=json.loads(rd(j));blob=rd(k)\n"
        "pkg=types.ModuleType('icbox');pkg.__path__=[];sys.modules['icbox']=pkg\n"
        "codes=None\n"
        "skip=()\n"
        "if isinstance(mods,dict):\n"
        "    import marshal\n"
        "    skip=mods.get('skip',())\n"
        "    if blob and mods['version']==sys.version:\n"
        "        codes=marshal.loads(blob)\n"
        "    mods=mods['sources']\n"
        "if codes is None:\n"
        "    codes=[compile(src,'<icbox/'+name+'.py>','exec') for name,src in mods]\n"
        "    pkg.CODE=codes\n"
        "for (name,_),code in zip(mods,codes):\n"
        "    if name in skip: continue\n"
        "    m=types.ModuleType('icbox.'+name);m.__package__='icbox'\n"
        "    sys.modules['icbox.'+name]=m;setattr(pkg,name,m)\n"
        "    exec(code,m.__dict__)\n"
        f"{entry}\n"
    )


# The boot code's modules compiled by a sandbox's own Python (marshal), by key (the
# Python, the root file system, the sources): a sandbox that boots from them skips
# compiling (most of its start). The first sandbox of a key compiles and hands them
# over with its readiness, before any of the agent's code runs in it.
COMPILED: dict[tuple[str, str, str], tuple[str, bytes]] = {}
# the modules only the shells the supervisor forks (inbox/shell.py FORKED) import
PROVIDER_OPS = ("exec_apart", "read_file", "write_file")  # see provider_call
FORKED_ONLY = ("pyvalue", "pyscore", "pyprogram", "pyhold", "pyrepl", "zygote", "sqlconn",
               "sqlsnap", "sqlrepl")


# the in-sandbox modules a backend whose pid 1 relays (docker) boots with besides these
RELAY_MODULES = ("newroot", "link", "relay")


@functools.cache
def inbox_sources(extra: tuple[str, ...] = ()) -> list[list[str]]:
    """The supervisor's modules as the boot code reads them (``[name, source]``), with
    the ``extra`` modules of the inbox package a backend needs (read once)."""
    pkg = resources.files("intercode.sandbox.inbox")
    return [[name, (pkg / f"{name}.py").read_text(encoding="utf-8")]
            for name in (*MODULES, *extra)]


@functools.cache
def sources_digest() -> str:
    return hashlib.sha256(json.dumps(inbox_sources()).encode()).hexdigest()


class SupervisedSandbox(base.Sandbox, base.Snapshots):
    """A sandbox whose pid 1 is intercode's supervisor (see the module docstring): the
    protocol's host side; a backend adds its launch hooks."""

    name = "supervised"

    def __init__(self, limits: Limits | None = None, layout: Layout | None = None,
                 python: str = "/usr/bin/python3", shell: str | Sequence[str] = "bash",
                 shell_data: bytes = b"") -> None:
        """``shell`` is ``bash``, ``python`` (a persistent Python interpreter) or ``sqlite``
        (an SQL engine, see ``inbox/sqlrepl.py``; ``shell_data`` is what it starts with),
        or the argv of a program that speaks the shell protocol itself (an interpreter
        of another language; see ``inbox/shell.py``), its first element an absolute path."""
        if isinstance(shell, str):
            if shell not in ("bash", "python", "sqlite"):
                raise ValueError(f"unknown shell {shell!r}")
            self.shell: str | tuple[str, ...] = shell
        else:
            argv = tuple(shell)
            if not argv or not all(isinstance(a, str) for a in argv) \
                    or not argv[0].startswith("/"):
                raise ValueError("a shell program is an argv whose first element is an "
                                 f"absolute path, not {shell!r}")
            self.shell = argv
        self.limits = limits or Limits()
        self.layout = layout or Layout()
        self.python = python
        self.shell_data = shell_data
        self._channel: Channel | None = None
        self._io: ShellIO | None = None
        self._drops: list[int] = []  # snapshots released, forgotten with the next request
        self._held_drops: list[int] = []
        self._tree_id: str | None = None
        self._booting = False  # spawned by begin(), not known ready yet
        self._held_pending: int | None = None  # a held copy's registration not confirmed
        self._code_asked = False  # this start asked the supervisor for its compiled code
        self._ptys: ptyshare.Share | None = None  # this start's pseudo-terminals

    # -- launch hooks (see the module docstring) -----------------------------------------

    start_timeout = START_TIMEOUT

    def _spawn(self) -> None:
        """Start the sandbox's process with the boot code; set ``_channel`` and ``_io``."""
        raise NotImplementedError

    def _spawned(self) -> bool:
        """Whether the sandbox's process was started (and not closed since)."""
        raise NotImplementedError

    def _ended(self) -> bool:
        """Whether the sandbox's process is gone."""
        raise NotImplementedError

    def _startup_failure(self) -> str:
        """Why the sandbox did not start, in one line (its own error output)."""
        raise NotImplementedError

    def _after_ready(self) -> None:
        """What to connect once the supervisor is ready (nothing by default)."""

    def _ready_notes(self, ready: dict[str, Any]) -> None:
        """What a backend reports from the supervisor's ready event (nothing by default)."""

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """Whether the sandbox's process runs and its channel is open."""
        return (not self._ended() and self._channel is not None
                and not self._channel.closed)

    def start(self) -> None:
        """Start the sandbox and the supervisor (or finish :meth:`begin`); wait until it
        is ready."""
        self._start()

    def _start(self) -> None:
        if self._spawned() and not self._booting:
            return
        try:
            if not self._spawned():
                self._spawn()
            self._booting = True
            self._await_ready()
            self._after_ready()
            self._booting = False
        except BaseException:
            self.close()
            raise

    def begin(self) -> None:
        """Spawn the sandbox without waiting for it: it boots (the supervisor compiles
        its modules, sets up the tree) while the caller goes on; :meth:`start` waits."""
        if self._spawned():
            return
        try:
            self._spawn()
            self._booting = True
        except BaseException:
            self.close()
            raise

    def _unused_modules(self) -> list[str]:
        """The boot's modules a sandbox of this shell never runs, left out of its boot
        (the Python interpreter's and the SQL engine's, with their imports, sqlite3, ast
        and traceback among them: about a sixth of a Bash sandbox's boot)."""
        if self.shell == "python":  # nor sqlite3's: every interpreter is forked from
            return [m for m in FORKED_ONLY if m.startswith("sql")]  # pid 1's modules
        return [] if self.shell in FORKED else list(FORKED_ONLY)

    def _config(self, inside: dict[str, int]) -> dict[str, Any]:
        """The supervisor's configuration every backend sends (``inside``: the passed
        descriptors' numbers inside, if the backend passes any); a backend adds its own."""
        lim = self.limits
        if self._ptys is not None:
            self._ptys.release()
        self._ptys = ptyshare.claim()  # given back when the sandbox closes (_forget_run)
        return {
            "shell": ("/bin/bash" if self.shell == "bash"
                      else list(self.shell) if isinstance(self.shell, tuple) else self.shell),
            "env": self.layout.shell_env(),
            "epoch_ns": EPOCH_NS,
            "skeleton_dirs": [list(d) for d in SKELETON_DIRS],
            "scratch": list(SCRATCH_MOUNTS),
            "rlimits": {"memory": lim.address_space, "processes": lim.processes,
                        "file_size": lim.file_size, "open_files": lim.open_files},
            "watch": {"interval": 0.1, "memory": lim.memory, "files": lim.files,
                      "processes": max(4, int(lim.processes * 0.9))},
            "snapshot_budget": self._snapshot_budget(),
            "pty_max": self._ptys.size,
        }

    def _snapshot_budget(self) -> int:
        """Bytes of the agent's files the supervisor keeps for tree snapshots, all live
        ones together (a snapshot or an import past it is refused with a
        :class:`SnapshotError`): :data:`SNAPSHOT_COPIES` copies of its writable file
        systems."""
        return SNAPSHOT_COPIES * (self.limits.storage + self.limits.shm)

    def _await_ready(self) -> None:
        assert self._channel is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            fdwait.readable(self._channel.read_fd, 0.05)
            try:
                self._channel.pump()  # non-blocking; a stream may hold frames already read
            except SandboxError:
                break
            ready = self._channel.take_events("ready")
            if ready:
                if not ready[0].get("ok"):
                    raise SandboxError(f"sandbox supervisor failed: {ready[0].get('error')}")
                self._keep_code(ready[0])
                self._ready_notes(ready[0])
                return
            if self._ended():
                break
        raise SandboxUnavailableError(self._startup_failure())

    def _code_key(self) -> tuple[str, str, str]:
        return (f"{type(self).__name__}:{self.python}", str(self.layout.rootfs),
                sources_digest())

    def _compiled_code(self) -> tuple[str, bytes, bool]:
        """The modules compiled for this sandbox's key, kept by this process or an
        earlier one (:mod:`intercode.sandbox.bootcache`; ``("", b"")``: none), and
        whether to ask the sandbox for its own: with none, or with those of an earlier
        process (a Python updated in place: the sandbox compiles, and the cache is
        renewed with its modules)."""
        key = self._code_key()
        found = COMPILED.get(key)
        if found is not None:
            return found[0], found[1], False
        kept = bootcache.load(key)
        if kept is None:
            return "", b"", True
        COMPILED[key] = kept
        return kept[0], kept[1], True

    def _keep_code(self, ready: dict[str, Any]) -> None:
        """Keep the compiled modules a freshly booted sandbox handed over (see
        :func:`boot_code`), only if this start asked for them."""
        if not self._code_asked:
            return
        code, version = ready.get("code"), ready.get("version")
        if isinstance(code, str) and isinstance(version, str) and version:
            try:
                blob = base64.b64decode(code, validate=True)
            except ValueError:
                return
            COMPILED[self._code_key()] = (version, blob)
            bootcache.store(self._code_key(), version, blob)

    def _forget_run(self) -> None:
        """Drop what belonged to the sandbox just closed (a start begins afresh)."""
        self._channel = None
        self._io = None
        self._tree_id = None
        self._booting = False
        self._held_pending = None
        if self._ptys is not None:
            self._ptys.release()
            self._ptys = None

    def __del__(self) -> None:
        try:
            spawned = self._spawned()
        except AttributeError:  # __init__ did not finish
            return
        if spawned:
            self.close()

    # -- requests ------------------------------------------------------------------------

    def _request(self, msg: Request, blob: bytes = b"",
                 timeout: float = 120.0) -> tuple[dict[str, Any], bytes]:
        if not self.alive or self._channel is None:
            raise SandboxError("the sandbox is not running")
        return self._channel.request(msg, blob, timeout)

    def _after_new_shell(self, reply: dict[str, Any], cwd: str) -> None:
        assert self._io is not None
        if reply.get("stats", {}).get("snapshots_cleared"):
            self._drops, self._held_drops = [], []
        self._io.discard_output()
        self._io.fresh_shell(int(reply["shell_pid"]), cwd)

    def _restart(self, cwd: str) -> None:
        reply, _ = self._request({"op": "restart", "cwd": cwd})
        assert self._io is not None
        self._io.fresh_shell(int(reply["shell_pid"]), reply.get("cwd", cwd))

    def load(self, tree: FileTree) -> None:
        """Make ``tree`` pristine (plus the skeleton), restore, start a fresh shell.

        The tree is sent only when it differs from the one the sandbox already has.
        """
        if tree.id == self._tree_id:
            reply, _ = self._request({"op": "load", "tree_id": tree.id})
        else:
            meta, blob = proto.pack_entries(e.as_tuple() for e in tree.entries)
            self._tree_id = None
            reply, _ = self._request({"op": "load", "tree_id": tree.id, "entries": meta}, blob)
            self._tree_id = tree.id
        self._after_new_shell(reply, "/")

    def reset(self) -> None:
        """Kill everything, restore the pristine tree, start a fresh shell in ``/``."""
        reply, _ = self._request({"op": "reset"})
        self._after_new_shell(reply, "/")

    def run(self, action: str, timeout: float | None = None,
            kind: str | None = None) -> ExecResult:
        """Run an action in the persistent shell (see :class:`ShellIO`).

        ``kind`` is for the Python interpreter (``exec``, the default, or ``eval``: a JSON
        test request from the host) and the SQL engine (see ``inbox/sqlrepl.py``).
        """
        if not self.alive or self._io is None or self._io.shell_pid is None:
            raise SandboxError("the sandbox is not running or has no shell (call load/reset)")
        self._await_held()
        if kind is not None and self.shell == "bash":
            raise ValueError("action kinds exist only for the python and sqlite shells")
        return self._io.run(action, self.limits.timeout if timeout is None else timeout, kind)

    def exec(self, argv: Sequence[str], timeout: float | None = None, cwd: str = "/",
             stdin: bytes = b"") -> ExecResult:
        """Run a command to completion outside the shell."""
        limit = self.limits.timeout if timeout is None else timeout
        reply, data = self._request(
            {"op": "run", "argv": list(argv), "timeout": limit, "cwd": cwd,
             "keep": self.limits.output, "hard": self.limits.output_hard}, stdin,
            timeout=limit + 60.0)
        out = Output(self.limits.output)
        out.add(data[:self.limits.output])
        out.total = max(out.total, int(reply.get("total") or 0))
        notes: tuple[str, ...] = ()
        if reply.get("timed_out"):
            notes += ("the command timed out",)
        if reply.get("stopped"):
            notes += (f"the command was stopped after more than {self.limits.output_hard} "
                      "bytes of output",)
        if out.truncated:
            notes += (f"output truncated: showing the first {len(out.kept)} of {out.total} bytes",)
        return ExecResult(output=out.text(), exit_code=reply.get("exit_code"),
                          timed_out=bool(reply.get("timed_out")), output_bytes=out.total,
                          output_truncated=out.truncated, notes=notes, cwd=cwd)

    def provider_call(self, op: str, fields: dict[str, Any], blob: bytes = b"",
                      timeout: float = 120.0) -> tuple[dict[str, Any], bytes]:
        """A call of Inspect's sandbox provider, answered by pid 1 (``exec_apart``,
        ``read_file``, ``write_file``: see ``inbox/provider.py``)."""
        if op not in PROVIDER_OPS:
            raise ValueError(f"not a call of the sandbox provider: {op!r}")
        return self._request(cast(Request, {**fields, "op": op}), blob, timeout)

    def diff(self, ignore: Sequence[str] = ()) -> list[Change]:
        """Changes against the pristine tree, as upstream's ``git status --short``."""
        reply, _ = self._request({"op": "status", "ignore": list(ignore)})
        return [Change(path, code) for path, code in reply["changes"]]

    def hashes(self, paths: Sequence[str]) -> dict[str, str]:
        """Fingerprints of the given diff paths."""
        if not paths:
            return {}
        reply, _ = self._request({"op": "hashes", "paths": list(paths)})
        return dict(reply["hashes"])

    def capture(self) -> FileTree:
        """The whole writable tree (skeleton included)."""
        reply, blob = self._request({"op": "capture"})
        entries = proto.unpack_entries(reply["entries"], blob)
        return FileTree.of(Entry(*e) for e in entries)

    # -- snapshots (see inbox/snaps.py) ---------------------------------------------------

    def tree_snapshot(self, ident: int, held: int | None = None) -> base.TreeSnapshotInfo:
        """Keep the tree's state now inside the sandbox as snapshot ``ident`` (and
        register the held interpreter ``held``)."""
        reply, _ = self._request(self._with_drops(
            TreeSnapRequest(op="tree_snap", id=ident, held=held)))
        return self._snap_info(reply)

    def tree_snapshot_during(self, ident: int, action: str) -> tuple[ExecResult,
                                                                    base.TreeSnapshotInfo]:
        """Run ``action`` in the shell while the supervisor keeps the tree as snapshot
        ``ident``: both at once, one wait instead of two (the shell's capture runs only
        builtins, which neither start processes nor touch files)."""
        if not self.alive or self._io is None or self._io.shell_pid is None:
            raise SandboxError("the sandbox is not running or has no shell (call load/reset)")
        replies: list[dict[str, Any]] = []

        def snap() -> None:
            replies.append(self._request(self._with_drops(
                TreeSnapRequest(op="tree_snap", id=ident, held=None)))[0])

        result = self._io.run(action, self.limits.timeout, meanwhile=snap)
        return result, self._snap_info(replies[0])

    def hold_during(self, ident: int) -> tuple[int, base.TreeSnapshotInfo]:
        """Hold a copy of the interpreter while the supervisor keeps the tree as snapshot
        ``ident`` (one wait instead of two); the held copy is then registered with a
        request that has no reply (the supervisor checks that it is the interpreter's
        child, else a restore of this snapshot says it is gone), which also counts the
        background processes (a restore reports them: the info's count is 0)."""
        if not self.alive or self._io is None or self._io.shell_pid is None:
            raise SandboxError("the sandbox is not running or has no shell (call load/reset)")
        replies: list[dict[str, Any]] = []

        def snap() -> None:
            replies.append(self._request(self._with_drops(
                TreeSnapRequest(op="tree_snap", id=ident, held=None, count=False)))[0])

        self._await_held()
        result = self._io.run("", self.limits.timeout, kind="hold", meanwhile=snap)
        pid = self._held_pid(result)
        assert self._channel is not None
        self._channel.send({"op": "held", "pid": pid, "id": ident})
        self._held_pending = ident
        try:
            return pid, self._snap_info(replies[0])
        except SnapshotError:
            self.drop_held(pid)
            raise

    def _await_held(self, timeout: float = 30.0) -> None:
        """Wait until the supervisor confirmed the last held copy's registration (its
        ``held`` event) before the interpreter gets an action: the agent's code must
        not run before the copy is kept and the processes counted. Requests to the
        supervisor need no wait (it answers them in order)."""
        ident = self._held_pending
        if ident is None or self._channel is None:
            return
        deadline = time.monotonic() + timeout
        while True:
            self._channel.pump()  # (on docker the event may be read off the stream already)
            if any(ev.get("id") == ident for ev in self._channel.take_events("held")):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxError("the sandbox did not confirm a snapshot's held interpreter")
            fdwait.readable(self._channel.read_fd, remaining)
        self._held_pending = None

    def _held_pid(self, result: ExecResult) -> int:
        try:
            return int(json.loads(result.reply or "")["pid"])
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            raise SnapshotError("the interpreter did not hold a copy of itself: "
                                f"{result.observation[-200:]}") from exc

    def _snap_info(self, reply: dict[str, Any]) -> base.TreeSnapshotInfo:
        if reply.get("refused"):
            raise SnapshotError(f"the snapshot was refused: {reply['refused']}")
        return base.TreeSnapshotInfo(cwd=str(reply.get("cwd", "/")),
                                     background=int(reply.get("background", 0)))

    def tree_restore(self, ident: int, cwd: str, held: int | None = None,
                     replay: str | None = None) -> int | None:
        """Bring the tree to snapshot ``ident``; a fresh shell in ``cwd`` (or ``held``)
        that runs ``replay`` first (Bash; one that does not fit an argument is run as an
        action after the restore)."""
        msg, late = self._restore_request(ident, cwd, held, replay)
        reply, _ = self._request(self._with_drops(msg))
        return self._restored(reply, cwd, late)

    def _restore_request(self, ident: int, cwd: str, held: int | None,
                         replay: str | None) -> tuple[TreeRestoreRequest, str | None]:
        """A ``tree_restore`` request, and the replay to run as an action after it (one
        that does not fit an argument), if any."""
        msg: TreeRestoreRequest = {"op": "tree_restore", "id": ident, "cwd": cwd}
        if held is not None:
            msg["pid"] = held
        late = None
        if replay is not None:
            fits = (self.shell == "bash" and "\0" not in replay
                    and len(replay.encode("utf-8", "surrogateescape")) <= MAX_REPLAY)
            if fits:
                msg["replay"] = replay
            else:
                late = replay
        return msg, late

    def _restored(self, reply: dict[str, Any], cwd: str, late: str | None) -> int | None:
        """After a restore's reply: the new shell, the late replay; the count of
        background processes, if the reply has it."""
        if reply.get("gone"):
            if "shell_pid" in reply:  # it died mid-restore: a fresh interpreter took over
                self._after_new_shell(reply, cwd)
                raise SnapshotError("the snapshot's held interpreter is gone (killed inside "
                                    "the sandbox); it cannot be restored, and the episode "
                                    "goes on in a fresh interpreter")
            raise SnapshotError("the snapshot's held interpreter is gone (killed inside the "
                                "sandbox); it cannot be restored")
        self._after_new_shell(reply, cwd)
        if late is not None:
            self.run(late)
        return int(reply["background"]) if "background" in reply else None

    def tree_drop(self, ident: int) -> None:
        """Forget tree snapshot ``ident`` with the next snapshot request (no round trip)."""
        self._drops.append(ident)

    def _with_drops(self, msg: D) -> D:
        msg["drop"], self._drops = self._drops, []
        msg["drop_held"], self._held_drops = self._held_drops, []
        return msg

    def tree_copy(self, ident: int, other: base.Sandbox, other_ident: int) -> None:
        """Copy tree snapshot ``ident`` into ``other``, a sandbox of the same backend
        (the backends lay their trees out differently: a snapshot of one is not a tree
        of another)."""
        target = self._same_backend(other)
        reply, data = self._request({"op": "tree_export", "id": ident})
        reply, _ = target._request({"op": "tree_import", "id": other_ident,
                                   "entries": reply["entries"]}, data)
        if reply.get("refused"):
            raise SnapshotError(f"the snapshot was refused: {reply['refused']}")

    def tree_copy_restore(self, ident: int, other: base.Sandbox, other_ident: int, cwd: str,
                          replay: str | None = None) -> int | None:
        """The copy and its restore in ``other`` in one request there (``tree_import``
        with the ``tree_restore`` request to run once the entries are kept)."""
        other = self._same_backend(other)
        reply, data = self._request({"op": "tree_export", "id": ident})
        restore, late = other._restore_request(other_ident, cwd, None, replay)
        done, _ = other._request(other._with_drops(TreeImportRequest(
            op="tree_import", id=other_ident, entries=reply["entries"], restore=restore)), data)
        return other._restored(done, cwd, late)

    def _same_backend(self, other: base.Sandbox) -> SupervisedSandbox:
        """``other`` if it is a sandbox of this one's backend, else :class:`SnapshotError`."""
        if type(other) is not type(self) or not isinstance(other, SupervisedSandbox):
            raise SnapshotError(f"a {self.name} sandbox's snapshot is copied only to another "
                                f"{self.name} sandbox, not to a {getattr(other, 'name', '?')} "
                                "one")
        return other

    def hold(self) -> int:
        """Fork a held copy of the interpreter (registered by the next tree snapshot)."""
        return self._held_pid(self.run("", kind="hold"))

    def drop_held(self, pid: int) -> None:
        """Kill held copy ``pid`` with the next snapshot request (no round trip)."""
        self._held_drops.append(pid)

    @property
    def cwd(self) -> str:
        """The shell's working directory after the last action."""
        return self._io.cwd if self._io is not None else "/"
