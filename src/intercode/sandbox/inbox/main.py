"""The supervisor: pid 1 of a sandbox, serving the host's requests.

It owns the writable tree (load, restore, capture, diff, hashes), starts and
restarts the persistent shell, kills runaway processes, and reaps orphans. The
agent's processes cannot signal it (pid 1 of a pid namespace ignores signals it
has no handler for, and SIGKILL from inside the namespace) nor trace it (it is
not dumpable). Requests and replies are frames (see ``proto``); replies carry
``ok``; an unsolicited ``{"ev": "shell_exit"}`` frame reports a shell that died.
"""

import ctypes
import errno
import fcntl
import os
import resource
import select
import signal
import sys
import time

from . import freezer, privs, proto, provider, rlimits, runcmd, schema, shell, snaps, tree

PR_SET_DUMPABLE = 4
LOW_FD = 64  # where the host's descriptors are moved: just above the shell's fixed ones
NO_REPLY = ("freeze", "thaw")  # requests the host does not wait for (see freezer)
NEW_EPISODE = ("load", "reset")  # where a limit that cannot be set again spends the sandbox
WATCH_AFTER_THAW = 0.005  # s: first check of the limits after stopped processes go on
RLIMITS = {
    "memory": resource.RLIMIT_AS,
    "processes": resource.RLIMIT_NPROC,
    "file_size": resource.RLIMIT_FSIZE,
    "open_files": resource.RLIMIT_NOFILE,
}


class Supervisor(snaps.Snapshots):
    """Request loop and state of one sandbox."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.ctl_in = cfg["fds"]["ctl_in"]
        self.ctl_out = cfg["fds"]["ctl_out"]
        self.tree = tree.Tree("/", scratch_mounts=cfg.get("scratch", []))
        fds = cfg["fds"]
        self.shell = shell.Shell(cfg["shell"], fds["action_r"], fds["output_w"],
                                 fds["status_w"], cfg["env"])
        self.tree_id = None
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        watch = cfg.get("watch", {})
        self.watch_interval = watch.get("interval", 0.1)
        self.memory_total = watch.get("memory")
        self.process_alarm = watch.get("processes")
        self.files_limit = watch.get("files")
        self.files_seen = 0
        self.files_fds = []
        self.limits = rlimits.current()  # set again once set up (see setup)
        self.system_links = {}
        self.freezer = freezer.Freezer(self.shell, self.ctl_out)
        self.init_snapshots()
        self.freezer.held = self.held

    # -- setup ---------------------------------------------------------------------------

    def setup(self):
        """Harden the process, apply limits, build the skeleton."""
        try:
            ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        for fd in self.cfg["fds"].values():
            os.set_inheritable(fd, False)
        # pid 1 of a pid namespace drops the signals it has no handler for, from its own
        # namespace; the agent (same uid) could end it with SIGINT (Python's handler)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        for name, value in self.cfg.get("rlimits", {}).items():
            if value is not None:
                if name == "processes" and self.cfg["shell"] == "python":
                    value += 1  # the zygote's process is not the agent's
                # a host that runs us under a lower hard limit (``ulimit -v``) keeps it:
                # no process may raise its hard limit
                hard = resource.getrlimit(RLIMITS[name])[1]
                if hard != resource.RLIM_INFINITY:
                    value = min(value, hard)
                resource.setrlimit(RLIMITS[name], (value, value))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # the limits of this process and of everything it starts, from now on (see rlimits)
        self.limits = rlimits.current()
        self.shell.rlimits = self.limits
        self.shell.limits_text = shell.proc_read("%d/limits" % os.getpid())
        os.umask(0o022)
        epoch = self.cfg["epoch_ns"]
        for rel, mode in self.cfg["skeleton_dirs"]:
            path = "/" + rel
            if not os.path.isdir(path):
                os.mkdir(path)
            os.chmod(path, mode)
        for rel, _mode in sorted(self.cfg["skeleton_dirs"], key=lambda d: -d[0].count("/")):
            os.utime("/" + rel, ns=(epoch, epoch))
        if self.cfg["shell"] == "python":
            import site  # forked interpreters inherit sys.path with dist-packages

            site.main()
        # before anything of an episode reaches this process (the host's first request
        # comes after the ready event): see zygote
        self.shell.start_zygote()
        # held open: an agent that locks "/" (chmod 000) must not hide a mount from the count
        for mount in ["/", *("/" + m for m in self.cfg.get("scratch", []))]:
            self.files_fds.append(os.open(mount, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        # before any of the agent's code: what /bin, /lib, ... are (see provider.pin)
        self.system_links = provider.system_links()
        base, _skipped = self.tree.capture()
        self.tree.set_base(base)
        self.tree.load([])

    # -- loop ----------------------------------------------------------------------------

    def serve(self):
        """Answer requests until the host closes the channel."""
        poller = select.poll()
        poller.register(self.ctl_in, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        next_watch = time.monotonic()
        while True:
            self.shell.make_spare()
            now = time.monotonic()
            if now >= next_watch:
                self.watch()
                next_watch = now + self.watch_interval
            if self.freezer.freeze_due(now):
                self.watch()  # a fork bomb gets caught before it is stopped below the alarm
            self.freezer.tick(now)
            if self.freezer.watch_soon:
                self.freezer.watch_soon = False
                next_watch = min(next_watch, now + WATCH_AFTER_THAW)
            wake = min(next_watch, self.freezer.due() or next_watch)
            timeout_ms = max(0.0, (wake - time.monotonic()) * 1000.0)
            for fd, _ev in poller.poll(timeout_ms):
                if fd == self.wake_r:
                    self._drain_wake()
                    self.reap()
                    continue
                try:
                    msg, blob = proto.read_frame(self.ctl_in)
                except EOFError:
                    return
                self._answer(msg, blob)

    def _answer(self, msg, blob):
        bad = schema.problem(msg)
        if bad is not None:  # one line back, and nothing done
            if not (isinstance(msg, dict) and msg.get("op") in schema.NO_REPLY):
                proto.write_frame(self.ctl_out, {"ok": False, "ms": 0.0,
                                                 "error": "malformed request: " + bad}, b"")
            return  # (a request without a reply gets none: the host reads no answer)
        op = msg.get("op")
        if op in NO_REPLY:
            self.freezer.request(msg)
            return
        if op == "held":  # no reply either (see snaps.register_held)
            self.register_held(msg)
            return
        handler = getattr(self, "op_" + str(op), None)
        started = time.perf_counter()
        try:
            rlimits.apply(self.limits, strict=op in NEW_EPISODE)
            if handler is None:
                raise ValueError("unknown request %r" % (op,))
            reply, out_blob = handler(msg, blob)
            reply["ok"] = True
        except Exception as exc:  # every failure goes back to the host as data
            reply, out_blob = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}, b""
            if getattr(exc, "restart", False):  # zygote.ZygoteGone: replace the sandbox
                reply["restart"] = True
        reply["ms"] = (time.perf_counter() - started) * 1000.0
        proto.write_frame(self.ctl_out, reply, out_blob)

    def watch(self):
        """Enforce the sandbox-wide limits that no rlimit covers.

        Too many processes (a fork bomb in the background): everything but the shell
        is killed. Too much memory in all (resident memory and page tables): the largest
        processes are killed, largest first, until the rest is within the limit.
        Too many files, still growing: every process is killed (see :meth:`watch_files`).
        A frozen sandbox is checked to be still frozen.
        """
        self.watch_files()
        if self.freezer.frozen:
            self.freezer.step()
        if self.memory_total is None and self.process_alarm is None:
            return
        count, rss = shell.usage({1, os.getpid(), *self.shell.zygote_pids()})
        if self.process_alarm is not None and count >= self.process_alarm:
            shell.kill_all(self.keep_alive(), self.reap, stay=self.held)
            self.note("%d processes were running (the limit is close); all processes "
                      "except the shell were killed" % count)
            if self.freezer.frozen:
                self.freezer.freeze()
            return
        total = sum(rss.values())
        if self.memory_total is None or total <= self.memory_total or not rss:
            return
        left, killed = total, []
        for pid in sorted(rss, key=rss.get, reverse=True):
            if left <= self.memory_total:
                break
            name = shell.process_name(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            left -= rss[pid]
            killed.append((name, pid))
        if not killed:
            return
        what = "%s (pid %d) was killed" % killed[0]
        if len(killed) > 1:
            what = "%d processes were killed, the largest %s (pid %d) first" % (
                len(killed), killed[0][0], killed[0][1])
        self.note("the sandbox's processes used %d MiB of memory (the limit is %d MiB); %s"
                  % (total >> 20, self.memory_total >> 20, what))

    def watch_files(self):
        """Kill every process if the file systems hold more inodes than allowed and grow.

        tmpfs takes no inode limit from bubblewrap, so the count (of the root tmpfs and
        /dev/shm) is checked here. Only growth past the limit is punished, so that the
        agent can still delete files to get back under it.
        """
        if self.files_limit is None:
            return
        used = self.files_used()
        seen, self.files_seen = self.files_seen, used
        if used > self.files_limit and used > seen:
            shell.kill_all(self.shell.zygote_pids(), self.reap)
            self.note("the sandbox's file systems held %d files and directories (the limit "
                      "is %d); all processes, the shell included, were killed"
                      % (used, self.files_limit))

    def files_used(self):
        """Inodes in use on the writable file systems (the root tmpfs and the scratch ones)."""
        used = 0
        for fd in self.files_fds:
            st = os.fstatvfs(fd)
            used += st.f_files - st.f_ffree
        return used

    def note(self, text):
        """Tell the host something the agent should see with its next observation."""
        proto.write_all(self.ctl_out, proto.encode({"ev": "note", "text": text}))

    def _drain_wake(self):
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def reap(self):
        """Collect dead children; report the shell's death to the host."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.shell.forget(pid)
            self.forget_held(pid)
            if pid == self.shell.pid:
                self.shell.pid = None
                code = os.waitstatus_to_exitcode(status)
                if code < 0:
                    code = 128 - code
                event = {"ev": "shell_exit", "pid": pid, "status": code}
                proto.write_all(self.ctl_out, proto.encode(event))

    # -- requests ------------------------------------------------------------------------

    def op_load(self, msg, blob):
        """Make a new tree pristine (skipped if it is already the loaded one)."""
        t0 = time.perf_counter()
        self._kill(keep=())
        self.init_snapshots()
        self.freezer.held = self.held
        t1 = time.perf_counter()
        if msg.get("tree_id") is not None and msg["tree_id"] == self.tree_id:
            stats = self.tree.restore()
        elif "entries" not in msg:
            raise ValueError("tree %r is not loaded in this sandbox" % (msg.get("tree_id"),))
        else:
            self.tree_id = None
            stats = self.tree.load(proto.unpack_entries(msg["entries"], blob))
            self.tree_id = msg.get("tree_id")
        t2 = time.perf_counter()
        self._spawn_shell(msg.get("cwd", "/"))
        t3 = time.perf_counter()
        stats.update(kill_ms=(t1 - t0) * 1e3, restore_ms=(t2 - t1) * 1e3, spawn_ms=(t3 - t2) * 1e3,
                     snapshots_cleared=True)
        return {"stats": stats, "shell_pid": self.shell.pid}, b""

    def op_reset(self, msg, blob):
        """Kill everything, restore the pristine tree, start a fresh shell."""
        t0 = time.perf_counter()
        self._kill(keep=())
        self.init_snapshots()
        self.freezer.held = self.held
        t1 = time.perf_counter()
        self._begin_shell()
        try:
            stats = self.tree.restore()
        except BaseException:
            self.shell.abandon()
            raise
        t2 = time.perf_counter()
        self._spawn_shell(msg.get("cwd", "/"))
        t3 = time.perf_counter()
        stats.update(kill_ms=(t1 - t0) * 1e3, restore_ms=(t2 - t1) * 1e3, spawn_ms=(t3 - t2) * 1e3,
                     snapshots_cleared=True)
        return {"stats": stats, "shell_pid": self.shell.pid}, b""

    def op_interrupt(self, msg, blob):
        """Kill every process except the shell (the action's, and background ones).

        With ``signal`` (the Python interpreter: SIGINT), the shell gets it too, so a
        loop running inside it stops with KeyboardInterrupt.
        """
        shell.kill_all(self.keep_alive(), self.reap, stay=self.held)
        if msg.get("signal") and self.shell.pid is not None:
            try:
                os.kill(self.shell.pid, getattr(signal, msg["signal"]))
            except (ProcessLookupError, AttributeError):
                pass
        if self.freezer.frozen:
            self.freezer.freeze()
        return {"shell_alive": self.shell.pid is not None}, b""

    def op_restart(self, msg, blob):
        """Kill everything, including the shell, and start a new shell in ``cwd``."""
        cwd = msg.get("cwd") or self.shell.cwd() or "/"
        self._kill(keep=tuple(self.held))
        self._spawn_shell(cwd)
        return {"cwd": cwd, "shell_pid": self.shell.pid}, b""

    def op_status(self, msg, blob):
        return {"changes": self.tree.status(msg.get("ignore", []))}, b""

    def op_hashes(self, msg, blob):
        return {"hashes": self.tree.hashes(msg["paths"])}, b""

    def op_capture(self, msg, blob):
        entries, skipped = self.tree.capture()
        meta, data = proto.pack_entries(entries, joined=False)
        return {"entries": meta, "skipped": skipped}, data

    def op_run(self, msg, blob):
        """Run ``argv`` to completion (outside the shell); its output is bounded."""
        code, timed_out, output, total, stopped = runcmd.run_bounded(
            msg["argv"], blob, msg.get("cwd", "/"), self.cfg["env"], msg.get("timeout"),
            msg.get("keep", 1 << 20), msg.get("hard", 64 << 20))
        shell.kill_all(self.keep_alive(), self.reap, stay=self.held)
        if self.freezer.frozen:
            self.freezer.freeze()
        return {"exit_code": code, "timed_out": timed_out, "total": total,
                "stopped": stopped}, output

    # -- Inspect's sandbox provider (see provider) ----------------------------------------

    def _quiet(self):
        """Before a call of the provider: no process of the agent's runs (nor the shell,
        whose actions the provider never uses), and "/"'s system links are its own."""
        self._kill(keep=())
        provider.pin(self.system_links)

    def op_exec_apart(self, msg, blob):
        """Run ``argv`` (a name found only where the agent cannot write) with stdout and
        stderr apart; ``error`` (an errno name) and ``where`` if it could not start."""
        self._quiet()
        argv, cwd = msg["argv"], msg.get("cwd", "/")
        env = dict(self.cfg["env"])
        env.update(msg.get("env") or {})
        exe = argv[0] if "/" in argv[0] else provider.find_program(argv[0], env.get("PATH", ""))
        if exe is None:
            return {"error": "ENOENT", "where": "program", "message": "command not found"}, b""
        try:
            code, timed_out, outs, totals, stopped = runcmd.run_apart(
                argv, exe, blob, cwd, env, msg.get("timeout"), msg["keep"], msg["hard"])
        except OSError as exc:
            return {"error": errno.errorcode.get(exc.errno or 0, "EIO"),
                    "where": "cwd" if exc.filename == cwd else "program",
                    "message": exc.strerror or str(exc)}, b""
        finally:
            self._kill(keep=())
        return {"exit_code": code, "timed_out": timed_out, "stdout": len(outs[0]),
                "totals": list(totals), "stopped": stopped}, proto.Parts(outs)

    def op_read_file(self, msg, blob):
        """The contents of the regular file ``path``, up to ``limit`` bytes (else none)."""
        self._quiet()
        try:
            size, data = provider.read_file(msg["path"], msg["limit"])
        except OSError as exc:
            return provider.problem(exc), b""
        if data is None:
            return {"error": "too_large", "size": size}, b""
        return {"size": size}, data

    def op_write_file(self, msg, blob):
        """Make the regular file ``path`` hold the blob (its directories made)."""
        self._quiet()
        try:
            provider.write_file(msg["path"], blob)
        except OSError as exc:
            return provider.problem(exc), b""
        return {}, b""

    def _begin_shell(self, prelude=None):
        """Once the agent's processes are gone, before the tree is restored: start a Bash
        shell that waits for :meth:`_spawn_shell` to send it on (``Shell.begin``), so
        that its start and the restore run at once."""
        self._drain_actions()
        self.freezer.thaw()  # (before it: a thaw waits for every process to be stopped)
        self.shell.begin(prelude)

    def _spawn_shell(self, cwd, prelude=None):
        """Drop what is left of an earlier action in the pipe, then start a shell
        (``prelude``: see ``Shell.spawn``), or send the one begun on."""
        self._drain_actions()
        self.freezer.thaw()  # what survived the kill (a spare interpreter) must run
        self.files_seen = self.files_used()
        if not self.shell.go(cwd):
            self.shell.spawn(cwd, prelude)

    def _drain_actions(self):
        fd = self.cfg["fds"]["action_r"]
        os.set_blocking(fd, False)
        try:
            while os.read(fd, 1 << 16):
                pass
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(fd, True)

    def _kill(self, keep):
        if self.held:  # they stay stopped through the kill (see shell.thaw)
            self.freezer.stop_held()
        if self.shell.pid not in keep:
            self.shell.pid = None
        resident = self.shell.resident()  # the zygote and the spare
        if resident:
            # usually only the old interpreter dies here: kill it directly; anything
            # that forked in the meantime is caught by the general path below
            keep = (*tuple(keep), *resident)
            victims = shell.live_pids(set(keep) | {1, os.getpid()})
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for pid in victims:  # our own children: wait for them, blocking
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            self.reap()
            if not shell.live_pids(set(keep) | {1, os.getpid()}):
                return
        elif not keep and self._kill_and_reap_everything(5.0):
            return
        shell.kill_all(keep, self.reap, stay=self.held)
        if not shell.wait_gone(keep, self.reap, time.monotonic() + 5.0):
            raise RuntimeError("processes of the sandbox did not die")

    def _kill_and_reap_everything(self, timeout):
        """SIGKILL every other process and wait (blocking) until all are reaped.

        Every process of the namespace descends from pid 1, so once all are dead and
        their orphans reparented to us, ``waitpid`` reports no children left.
        """
        def expire(*_):
            raise TimeoutError

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            shell.kill_all((), lambda: None)
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    return True
        except TimeoutError:
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def main(argv):
    """Entry point: ``argv[0]`` is the descriptor of the configuration frame."""
    cfg_fd = int(argv[0])
    cfg, data = proto.read_frame(cfg_fd)
    os.close(cfg_fd)  # no process of the agent may inherit it
    try:
        if cfg.pop("confine", True):  # not where the host refuses pid 1 the capabilities
            # bubblewrap's pid 1: its capabilities used, then dropped
            privs.confine(cfg.get("pty_max"))
    except (OSError, ValueError, KeyError) as exc:
        msg = {"ev": "ready", "ok": False, "error": "cannot confine the sandbox: %s" % (exc,)}
        proto.write_all(cfg["fds"]["ctl_out"], proto.encode(msg))
        sys.exit(1)
    run(cfg, data)


def renumber(fds):
    """Move the descriptors the host passed (``{name: fd}``, changed in place) to the
    lowest free numbers from :data:`LOW_FD`. They come with the host's numbers, which a
    process holding a hundred and more sandboxes has over 1023: over the sandbox's
    ``RLIMIT_NOFILE``, where ``posix_spawn`` refuses to hand them to the shell (EBADF)."""
    for name, fd in sorted(fds.items(), key=lambda item: item[1]):
        flags = fcntl.fcntl(fd, fcntl.F_GETFD)
        low = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC if flags & fcntl.FD_CLOEXEC
                          else fcntl.F_DUPFD, LOW_FD)
        if low < fd:
            os.close(fd)
            fds[name] = low
        else:
            os.close(low)


def run(cfg, data):
    """Set up and serve the sandbox of ``cfg`` (``data``: what the shell starts with)."""
    renumber(cfg["fds"])
    sup = Supervisor(cfg)
    sup.shell.data = data
    try:
        sup.setup()
        ready = {"ev": "ready", "ok": True, "pid": os.getpid()}
        if cfg.get("unguarded"):
            ready["unguarded"] = cfg["unguarded"]
        compiled = getattr(sys.modules.get("icbox"), "CODE", None)
        if cfg.get("send_code") and compiled is not None:
            # the boot's modules as this Python compiled them (before any of the agent's
            # code ran), so that the host's next sandboxes boot without compiling
            import base64
            import marshal

            ready["code"] = base64.b64encode(marshal.dumps(compiled)).decode("ascii")
            ready["version"] = sys.version
        proto.write_all(sup.ctl_out, proto.encode(ready))
    except Exception as exc:
        msg = {"ev": "ready", "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        proto.write_all(sup.ctl_out, proto.encode(msg))
        sys.exit(1)
    sup.serve()
