"""The supervisor's side of snapshots: file-tree states and held interpreters.

Tree snapshots (``tree_snap``, ``tree_restore``, ``tree_drop``; ``tree_export`` and
``tree_import`` move one to another sandbox, for a fork) keep the tree as a
pristine-like state in the supervisor (see ``Tree.snapshot``); restoring kills every
process, brings the tree to that state incrementally, and starts a fresh shell in the
snapshot's directory (the host then replays the shell's state). Processes other than
the shell at snapshot time are counted, so that the host can say they were not
carried over.

Held interpreters: the Python interpreter forks a paused copy of itself on a ``hold``
request (see ``pyhold``) and reports its pid; the host registers it with the tree
snapshot (``held``) and drops it with a later request (``drop_held``). Held copies
survive interrupts and restarts (not resets); a ``tree_restore`` with a ``pid`` kills
the interpreter and signals the held copy, which forks a new interpreter that is our
child (``clone(CLONE_PARENT)``, else an orphan we adopt) and stays held, so that a
snapshot survives any number of restores; the new interpreter waits for a second
signal, sent once the tree is restored (its fork and the restore run at once).
"""

import os
import re
import signal
import time

from . import proto, shell, tree

RESUME_TIMEOUT = 5.0
# a line of /proc/<pid>/maps of a shared ("s") writable ("w") mapping: its device and inode
SHARED_WRITABLE = re.compile(rb"^\S+ .w.s \S+ ([0-9a-f]+):([0-9a-f]+) (\d+)", re.M)


def parent_of(pid):
    """The parent pid of ``pid`` (``None`` if it is gone or a zombie)."""
    try:
        data = shell.proc_read("%d/stat" % pid)
    except OSError:
        return None
    end = data.rfind(b")")
    fields = data[end + 2:].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1])


def signal_pending(pid, sig):
    """Whether signal ``sig`` is pending for process ``pid`` (``False`` if it is gone)."""
    try:
        status = shell.proc_read("%d/status" % pid)
    except OSError:
        return False
    bit = 1 << (sig - 1)
    for line in status.splitlines():
        if line.startswith((b"SigPnd:", b"ShdPnd:")) and int(line.split()[1], 16) & bit:
            return True
    return False


class Snapshots:
    """Mixed into the supervisor: its ``tree``, ``shell``, ``_kill`` and ``_spawn_shell``."""

    def init_snapshots(self):
        """State: tree snapshots by id, held interpreter pids."""
        self.tree_snaps = {}  # id -> (state, reads) of Tree.snapshot
        self.last_snap = None
        self.held = set()
        self.dying = set()  # dropped held copies, killed, maybe not gone yet
        self.counted = {}  # id -> background processes, counted when its held copy came

    def keep_alive(self):
        """The processes a kill of the agent's processes spares (with the shell)."""
        keep = set(self.held) | self.shell.zygote_pids()
        if self.shell.pid is not None:
            keep.add(self.shell.pid)
        return keep

    def snapshot_budget(self):
        """Bytes a new tree snapshot may keep (``None``: no bound): the configured budget
        (``snapshot_budget``, Docker's: the supervisor's room in the container's memory,
        where the agent's cgroup takes the rest; the kernel kills the largest process
        there when the two together are full, the supervisor if it holds the copies)
        less what the live snapshots hold."""
        budget = self.cfg.get("snapshot_budget")
        if budget is None:
            return None
        pristine, seen, held = self.tree.pristine, set(), 0
        for state, reads in self.tree_snaps.values():
            # a snapshot's values that are not the pristine ones are those it read (an
            # imported one has no reads: its whole state)
            values = [r[3] for r in reads.values()] if reads else \
                [v for rel, v in state.items() if v is not pristine.get(rel)]
            for value in values:
                if id(value) not in seen:
                    seen.add(id(value))
                    held += tree.held_size(value)
        return budget - held

    def mapped_writable(self):
        """``{(st_dev, st_ino)}`` of the files the sandbox's processes have mapped shared
        and writable (see ``Tree.snapshot``), or ``None`` if a process's mappings cannot
        be read (an agent's process may make itself not dumpable). The spare and the
        zygote are left out (forked by this process, running none of the agent's code).
        The held interpreters are not: their pids come from the agent's interpreter,
        which may report a process of its own (a real held copy is not dumpable, so
        while one is held, no file's record is trusted)."""
        spare = tuple(self.shell.resident())  # the spare and the zygote
        found = set()
        for pid in shell.live_pids({1, os.getpid(), *spare}):
            try:
                maps = shell.proc_read("%d/maps" % pid)
                if not maps:  # its first thread exited: another thread's (the same)
                    thread = shell.live_thread(pid)
                    if thread is not None:
                        maps = shell.proc_read("%d/task/%d/maps" % (pid, thread[0]))
            except OSError:
                if parent_of(pid) is None and shell.live_thread(pid) is None:
                    continue  # gone meanwhile
                return None
            # address perms offset dev inode [path]: one pass of a regular expression (an
            # interpreter maps hundreds of regions, a split of each line cost ~0.5 ms)
            for major, minor, inode in SHARED_WRITABLE.findall(maps):
                found.add((os.makedev(int(major, 16), int(minor, 16)), int(inode)))
        return found

    def background(self):
        """How many processes run besides the shell, the spare and the held copies."""
        spare = tuple(self.shell.resident())  # the spare and the zygote
        self.reap()
        self.dying = {pid for pid in self.dying if parent_of(pid) is not None}
        return len(shell.live_pids({1, os.getpid(), *self.keep_alive(), *spare, *self.dying}))

    def _forget(self, msg):
        """The drops the host queued since its last snapshot request (``drop``: tree
        snapshot ids, ``drop_held``: held pids)."""
        for ident in msg.get("drop", ()):
            self.tree_snaps.pop(int(ident), None)
            self.counted.pop(int(ident), None)
        for pid in msg.get("drop_held", ()):
            self._drop_held(int(pid))

    def register_held(self, msg):
        """Keep the held copy ``pid`` the host's last hold made for snapshot ``id`` (a
        request without reply, sent right after the hold: the tree was copied meanwhile,
        without counting the processes, which are counted now, the copy excepted, and
        reported by a restore). A pid that is not a child of the interpreter is ignored:
        restoring its snapshot says it is gone. A ``held`` event says it is done: the
        host sends the interpreter no action before it (requests to us come in order)."""
        try:
            pid, ident = int(msg["pid"]), int(msg["id"])
        except (KeyError, TypeError, ValueError):
            return
        if self.shell.pid is not None and parent_of(pid) == self.shell.pid:
            self.held.add(pid)
        if ident in self.tree_snaps:
            self.counted[ident] = self.background()
        # the host writes no action to the interpreter before this (see bwrap.py)
        proto.write_all(self.ctl_out, proto.encode({"ev": "held", "id": ident}))

    def op_tree_snap(self, msg, blob):
        """Keep the tree's state now as snapshot ``id`` (and register ``held``)."""
        self._forget(msg)
        if msg.get("held") is not None:
            pid = int(msg["held"])
            if self.shell.pid is None or parent_of(pid) != self.shell.pid:
                return {"refused": "process %d is not a copy held by the interpreter" % pid}, b""
            self.held.add(pid)
        previous = self.tree_snaps.get(self.last_snap)
        self.tree_snaps.pop(int(msg["id"]), None)
        try:
            self.tree_snaps[int(msg["id"])] = self.tree.snapshot(
                previous[1] if previous else None, self.snapshot_budget(), self.mapped_writable)
            self.last_snap = int(msg["id"])
        except MemoryError:  # the agent's files do not fit in the supervisor's memory
            return {"refused": "the sandbox's files are too large to keep a copy"}, b""
        count = self.background() if msg.get("count", True) else 0
        return {"background": count, "cwd": self.shell.cwd() or "/"}, b""

    def op_tree_restore(self, msg, blob):
        """Kill everything (held copies excepted), bring the tree to snapshot ``id``, and
        start a fresh shell in ``cwd`` or, with ``pid``, resume that held interpreter."""
        self._forget(msg)
        state, reads = self.tree_snaps[int(msg["id"])]
        pid = msg.get("pid")
        if pid is not None and (pid not in self.held or parent_of(pid) is None):
            self.held.discard(pid)
            return {"gone": True}, b""
        t0 = time.perf_counter()
        self._kill(keep=tuple(self.held))
        t1 = time.perf_counter()
        # the new shell starts while the tree is restored: a held copy's fork of a new
        # interpreter (see pyhold), a Bash shell waiting for its directory (Shell.begin)
        woke = None
        prelude = msg.get("replay")
        if pid is not None:
            try:
                self._wake(pid)
                woke = True
            except ProcessLookupError as exc:
                woke = exc
        else:
            if prelude is not None and (not isinstance(prelude, str) or "\0" in prelude
                                        or len(prelude.encode("utf-8", "surrogateescape"))
                                        > shell.MAX_PRELUDE):
                raise ValueError("a malformed shell replay")
            self._begin_shell(prelude)
        try:
            stats = self.tree.restore_to(state, reads)
        except BaseException:
            if woke is True:  # the new interpreter waits for its go: it never gets one
                self._discard_resumed()
            self.shell.abandon()
            raise
        t2 = time.perf_counter()
        if pid is None:
            self._spawn_shell(msg.get("cwd", "/"), prelude)
        else:
            try:
                if woke is not True:
                    raise woke
                self._resumed()
            except (ProcessLookupError, RuntimeError) as exc:
                # killed by the agent just before the check saw it die (its SIGKILL was
                # still on its way): it vanished, or never answered the resume signal
                if isinstance(exc, RuntimeError) and parent_of(pid) is not None:
                    raise
                self.held.discard(pid)
                self._spawn_shell(msg.get("cwd", "/"))
                return {"gone": True, "shell_pid": self.shell.pid}, b""
        t3 = time.perf_counter()
        stats.update(kill_ms=(t1 - t0) * 1e3, restore_ms=(t2 - t1) * 1e3,
                     spawn_ms=(t3 - t2) * 1e3)
        reply = {"stats": stats, "shell_pid": self.shell.pid}
        if int(msg["id"]) in self.counted:
            reply["background"] = self.counted[int(msg["id"])]
        return reply, b""

    def op_tree_export(self, msg, blob):
        """Snapshot ``id``'s entries (for a fork in another sandbox)."""
        state = self.tree_snaps[int(msg["id"])][0]
        meta, data = proto.pack_entries(((rel, *value) for rel, value in sorted(state.items())),
                                        joined=False)
        return {"entries": meta}, data

    def op_tree_import(self, msg, blob):
        """Keep entries another sandbox exported as snapshot ``id`` (values equal to the
        pristine ones are shared with it); with ``restore`` (a ``tree_restore`` request
        of that snapshot, without a held interpreter), restore it at once."""
        pristine = self.tree.pristine
        budget = self.snapshot_budget()
        if budget is not None and len(blob) > budget:
            return {"refused": "the snapshot's files (%d bytes) are more than this sandbox "
                               "may keep (%d)" % (len(blob), budget)}, b""
        state = {}
        for rel, *value in proto.unpack_entries(msg["entries"], blob):
            parts = rel.split("/")
            if rel.startswith("/") or "" in parts or "." in parts or ".." in parts \
                    or value[0] not in ("d", "f", "l"):
                raise ValueError("a malformed entry %r" % (rel,))
            value = tuple(value)
            state[rel] = pristine[rel] if pristine.get(rel) == value else value
        self.tree_snaps[int(msg["id"])] = (state, {})
        restore = msg.get("restore")
        if restore is not None:
            if not isinstance(restore, dict) or restore.get("id") != msg["id"] \
                    or restore.get("pid") is not None:
                raise ValueError("a malformed restore of an imported snapshot")
            return self.op_tree_restore({**restore, "drop": msg.get("drop") or (),
                                         "drop_held": msg.get("drop_held") or ()}, b"")
        return {}, b""

    def op_tree_drop(self, msg, blob):
        """Forget snapshot ``id``."""
        self.tree_snaps.pop(int(msg["id"]), None)
        self.counted.pop(int(msg["id"]), None)
        return {}, b""

    def _drop_held(self, pid):
        """Kill the held copy ``pid`` without waiting for it: until it is gone it is
        ``dying``, which the count of background processes leaves out."""
        if pid in self.held:
            self.held.discard(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            self.dying.add(pid)

    def _wake(self, pid):
        """Have the held copy ``pid`` fork a new interpreter to replace the (killed) one;
        the new one waits for its go (:meth:`_resumed`) before it runs anything, so that
        its fork runs while the tree is restored."""
        self._drain_actions()
        self.freezer.thaw()
        # only this one: the others stay stopped (a freeze stopped them) until their
        # own snapshots are restored (see shell.thaw)
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:  # the agent killed it: its snapshot is gone
            self.held.discard(pid)
            raise
        # a SIGUSR1 of the agent's still pending in the copy (sent while the agent had
        # stopped it) would swallow ours (a signal pending once is not queued twice): the
        # copy, running again, takes it and ignores it; no process of the agent's is left
        # to send another
        deadline = time.monotonic() + RESUME_TIMEOUT
        while signal_pending(pid, signal.SIGUSR1) and time.monotonic() < deadline:
            time.sleep(0.0001)
        os.kill(pid, signal.SIGUSR1)

    def _resumed(self):
        """Find the new interpreter :meth:`_wake` asked for and give it its go: it goes on
        with the snapshot's state, on the tree restored."""
        self.shell.pid = self._orphan(RESUME_TIMEOUT)
        try:
            os.kill(self.shell.pid, signal.SIGUSR2)
        except ProcessLookupError:  # died at once: the next action says so
            pass
        self.files_seen = self.files_used()

    def _discard_resumed(self):
        """Kill the new interpreter :meth:`_wake` asked for, if it came (a failed restore)."""
        try:
            pid = self._orphan(RESUME_TIMEOUT)
        except RuntimeError:
            return
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def _orphan(self, timeout):
        """The pid of the new interpreter: the process that is our child and no other."""
        spare = tuple(self.shell.resident())  # the spare and the zygote
        known = {1, os.getpid(), *self.held, *spare, *self.dying}
        deadline = time.monotonic() + timeout
        delay = 0.00005
        while True:
            for pid in self._children(known):
                if parent_of(pid) == os.getpid():
                    return pid
            if time.monotonic() > deadline:
                raise RuntimeError("the held interpreter did not resume")
            time.sleep(delay)
            delay = min(delay * 2, 0.0002)  # the forks take about a millisecond

    def _children(self, known):
        """Our children not in ``known`` (every process of the namespace but those,
        where the kernel does not list children)."""
        try:
            data = shell.proc_read("%d/task/%d/children" % (os.getpid(), os.getpid()))
        except OSError:
            return shell.live_pids(known)
        return [pid for pid in map(int, data.split()) if pid not in known]

    def forget_held(self, pid):
        """A held copy died."""
        self.held.discard(pid)
        self.dying.discard(pid)
