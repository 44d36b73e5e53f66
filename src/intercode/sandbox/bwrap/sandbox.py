"""The default sandbox backend: bubblewrap, no daemon, no root needed.

One long-lived ``bwrap`` process per sandbox, with its own user, mount, pid, ipc,
uts, network and cgroup namespaces. Pid 1 inside is the supervisor (see
``inbox/main.py``); the host writes actions straight to the shell's pipes.
When the host runs as root, the sandbox runs as the unprivileged host user
``nobody``, so that root-only host files stay unreadable even read-only.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from intercode.errors import SandboxError, SandboxUnavailableError
from intercode.sandbox import rootfs, seccomp
from intercode.sandbox.bwrap.netns import SandboxNetwork, find_slirp4netns
from intercode.sandbox.channel import Channel
from intercode.sandbox.inbox import proto
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits
from intercode.sandbox.shellio import ShellIO
from intercode.sandbox.supervisor import SupervisedSandbox, boot_code, inbox_sources

__all__ = ["BwrapSandbox"]

log = logging.getLogger(__name__)

NOBODY = 65534
# The sandbox's pipes keep their numbers inside, where the shell gets them moved onto
# fixed descriptors (60-63, inbox/shell.py and pyrepl.py): a pipe already on one of those
# numbers would be overwritten by another before its own move (every action then timed
# out), so they are passed above them.
FIRST_PASSED_FD = 64
# What pid 1 has in the sandbox's user namespace until it drops them all, before it reads
# any of the agent's input (inbox/privs.py): to mount the sandbox's own devpts, with a
# bounded share of the host's pseudo-terminals (--dev takes no mount options)
PID1_CAPS = ("CAP_SYS_ADMIN", "CAP_SETPCAP")
# Why this host refuses pid 1 those capabilities (a setuid bwrap refuses --cap-add from
# a non-root user; AppArmor's bwrap-userns-restrict denies bwrap's children every
# capability), once seen: this process's later sandboxes start without them, and
# without their own devpts (one warning; docs/security.md, residual risks)
_caps_refused: str | None = None
BOOT = boot_code()


def _above_fixed(fd: int) -> int:
    """``fd`` moved to a number of at least :data:`FIRST_PASSED_FD` (close-on-exec)."""
    if fd >= FIRST_PASSED_FD:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FIRST_PASSED_FD)
    os.close(fd)
    return moved


def find_bwrap() -> str:
    """Path of the bwrap executable, or SandboxUnavailableError saying how to get it."""
    path = os.environ.get("INTERCODE_BWRAP") or shutil.which("bwrap")
    if path and not os.access(path, os.X_OK):
        raise SandboxUnavailableError(f"bubblewrap: {path} (INTERCODE_BWRAP) is not an "
                                      "executable program")
    if not path:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed; on Debian/Ubuntu: "
            "sudo apt-get install bubblewrap (then run `intercode doctor`)")
    return path


class BwrapSandbox(SupervisedSandbox):
    """A bubblewrap sandbox (see the module docstring)."""

    name = "bwrap"

    @classmethod
    def preflight(cls) -> None:
        """bwrap must be installed."""
        find_bwrap()

    @classmethod
    def describe_root(cls, profile: str, packages: Sequence[str]) -> dict[str, Any]:
        """The root file system a sandbox mounts (built if missing), as a run records it."""
        return rootfs.describe(rootfs.default_root(profile, packages))

    @classmethod
    def check_network(cls, mode: str) -> None:
        """The isolated network needs slirp4netns (:class:`SandboxUnavailableError`)."""
        if mode == "isolated":
            find_slirp4netns()

    def __init__(self, limits: Limits | None = None, layout: Layout | None = None,
                 python: str = "/usr/bin/python3", shell: str | Sequence[str] = "bash",
                 shell_data: bytes = b"") -> None:
        """See :class:`SupervisedSandbox`."""
        super().__init__(limits=limits, layout=layout, python=python, shell=shell,
                         shell_data=shell_data)
        self._proc: subprocess.Popen[bytes] | None = None
        self._host_fds: list[int] = []
        self._stderr_fd: int | None = None
        self._net: SandboxNetwork | None = None

    # -- launch hooks (see intercode.sandbox.supervisor) ---------------------------------

    def _spawned(self) -> bool:
        """Whether the sandbox's process was started (and not closed since)."""
        return self._proc is not None

    def _ended(self) -> bool:
        """Whether the sandbox's process is gone."""
        return self._proc is None or self._proc.poll() is not None
    def start(self) -> None:
        """Start the sandbox and the supervisor (or finish :meth:`begin`); wait until it
        is ready."""
        global _caps_refused
        if self._spawned() and not self._booting:
            return
        with_caps = _caps_refused is None
        try:
            self._start()
        except SandboxError as exc:
            text = str(exc)
            refused = with_caps and ("--cap-add" in text or (
                "cannot confine the sandbox" in text and "Operation not permitted" in text))
            if not refused:
                raise
            _caps_refused = text
            log.warning("bubblewrap: the sandbox's pid 1 cannot have CAP_SYS_ADMIN here (%s): "
                        "sandboxes start without their own devpts, so pseudo-terminals are "
                        "one pool for all of them (docs/security.md)", text[:300])
            self._start()


    def _after_ready(self) -> None:
        """Connect the network (slirp4netns), now that the namespaces exist."""
        assert self._net is not None
        self._net.attach()

    def _spawn(self) -> None:
        bwrap = find_bwrap()
        self._net = SandboxNetwork(self.layout.network)  # fails first if slirp4netns is missing
        pipes = {name: os.pipe2(os.O_CLOEXEC) for name in
                 ("ctl_in", "ctl_out", "action", "output", "status")}
        # the boot code and the configuration: a memory file written whole before the
        # sandbox starts, so that spawning never waits for the sandbox to read them
        # (begin() returns at once; a pipe blocked until the sandbox's Python ran)
        cfg_fd = os.memfd_create("intercode-cfg", os.MFD_CLOEXEC)
        inside = {name: _above_fixed(fd) for name, fd in (
            ("cfg", cfg_fd), ("ctl_in", pipes["ctl_in"][0]),
            ("ctl_out", pipes["ctl_out"][1]), ("action_r", pipes["action"][0]),
            ("output_w", pipes["output"][1]), ("status_w", pipes["status"][1]))}
        host = {"ctl_in": pipes["ctl_in"][1],
                "ctl_out": pipes["ctl_out"][0], "action_w": pipes["action"][1],
                "output_r": pipes["output"][0], "status_r": pipes["status"][0]}
        etc_fds = {}
        for name, data in self.layout.overridable_etc().items():
            fd = os.memfd_create(f"etc-{name}", os.MFD_CLOEXEC)
            os.write(fd, data)
            os.lseek(fd, 0, os.SEEK_SET)
            etc_fds[name] = fd
        self._stderr_fd = os.memfd_create("bwrap-stderr", os.MFD_CLOEXEC)
        filter_fd = seccomp.program_fd()
        self._host_fds = list(host.values())  # closed by close() if the start fails
        argv = [bwrap, *self._namespace_args(), "--seccomp", str(filter_fd),
                *self.layout.mount_args(self.limits, etc_fds),
                "--chdir", "/", "--", self.python, "-I", "-S", "-c", BOOT, str(inside["cfg"])]
        run_as: dict[str, Any] = {}
        if os.geteuid() == 0:
            run_as = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        try:
            version, compiled, self._code_asked = self._compiled_code()
            cfg = self._config(inside)
            if self._code_asked:
                cfg["send_code"] = True
            proto.write_all(inside["cfg"],
                            proto.encode({"sources": inbox_sources(), "version": version,
                                          "skip": self._unused_modules()}, compiled))
            # (apart: no copy of the shell's data, the SQLite engine's database images)
            proto.write_all(inside["cfg"], proto.encode(cfg, self.shell_data))
            os.lseek(inside["cfg"], 0, os.SEEK_SET)
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self._stderr_fd,
                pass_fds=[*inside.values(), *etc_fds.values(), *self._net.child_fds(),
                          filter_fd],
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, start_new_session=True,
                **run_as)
        except OSError as exc:
            raise SandboxUnavailableError(f"cannot run {bwrap}: {exc}") from exc
        finally:
            for fd in [*inside.values(), *etc_fds.values(), filter_fd]:
                os.close(fd)
            self._net.spawned()
        self._channel = Channel(host["ctl_in"], host["ctl_out"])
        self._io = ShellIO(host["action_w"], host["output_r"], host["status_r"],
                           self._channel, self.limits, self._restart,
                           interrupt_signal="SIGINT" if self.shell in ("python", "sqlite")
                           else None, freeze=self.shell != "sqlite")

    def _namespace_args(self) -> list[str]:
        args = ["--unshare-all", "--unshare-user", "--disable-userns",
                "--die-with-parent", "--as-pid-1",
                *(a for cap in (PID1_CAPS if _caps_refused is None else ())
                  for a in ("--cap-add", cap)),
                "--hostname", self.layout.hostname,
                "--uid", str(self.layout.uid), "--gid", str(self.layout.gid)]
        if self._net is not None:
            args += self._net.bwrap_args()
        return args

    def _config(self, inside: dict[str, int]) -> dict[str, Any]:
        cfg = super()._config(inside)
        cfg["fds"] = {k: v for k, v in inside.items() if k != "cfg"}
        cfg["confine"] = _caps_refused is None  # see privs.confine
        return cfg

    def _startup_failure(self) -> str:
        code = self._proc.poll() if self._proc else None
        err = ""
        if self._stderr_fd is not None:
            os.lseek(self._stderr_fd, 0, os.SEEK_SET)
            err = os.read(self._stderr_fd, 1 << 16).decode("utf-8", "replace").strip()
        hint = ("bubblewrap could not create its namespaces; unprivileged user namespaces "
                "may be disabled (see `intercode doctor`)")
        return f"the sandbox did not start (exit code {code}): {err or hint}"

    def close(self) -> None:
        """Kill the sandbox (everything inside dies with its pid 1) and close pipes."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log.error("bwrap process %d did not exit after SIGKILL", proc.pid)
        if self._net is not None:
            self._net.close()
            self._net = None
        for fd in self._host_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._host_fds = []
        if self._stderr_fd is not None:
            os.close(self._stderr_fd)
            self._stderr_fd = None
        self._forget_run()
