"""The bubblewrap sandbox's network: none, an isolated user-mode network, or the host's.

The ``network`` settings (:mod:`intercode.sandbox.network`: ``Layout.network``,
``CtfEnv(network=...)``, ``--network``), on bubblewrap:

* ``False`` / ``"none"``: no network; the sandbox's namespace has only its own loopback.
* ``True`` / ``"isolated"``: the sandbox keeps its own network namespace and
  ``slirp4netns`` attaches user-mode networking to it (``tap0`` 10.0.2.100/24, default
  route via 10.0.2.2, DNS at 10.0.2.3). ``--disable-host-loopback`` makes 10.0.2.2 a dead
  end instead of the host's 127.0.0.1, so host loopback services (MariaDB on
  127.0.0.1:3306) stay out of reach; the sandbox's own 127.0.0.1 is its own.
* ``"host"``: bubblewrap's ``--share-net``, the host's network namespace, host loopback
  services included. Only an explicit opt-in.

slirp4netns gets the sandbox's pid from bubblewrap's ``--info-fd``, enters the namespace
through descriptors we open (so a recycled pid cannot redirect it), runs with
``--enable-sandbox --enable-seccomp`` (as root: root in the host's user namespace; else
the host user inside the user namespace that owns the sandbox's netns), signals
``--ready-fd`` once ``tap0`` is configured, and exits when the write end of its
``--exit-fd`` pipe closes: on :meth:`SandboxNetwork.close`, or when this process dies.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
import time

from intercode.errors import SandboxUnavailableError
from intercode.sandbox import fdwait
from intercode.sandbox.network import network_mode

__all__ = ["SandboxNetwork", "find_slirp4netns"]

log = logging.getLogger(__name__)

SLIRP_MTU = 65520
READY_TIMEOUT = 15.0
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
MISSING = ("the isolated network (network=True, --network) needs slirp4netns, which is not "
           "installed: sudo apt-get install slirp4netns (or network='host' / --host-network "
           "to share the host's network, host loopback services included)")


def find_slirp4netns() -> str:
    """Path of slirp4netns, or SandboxUnavailableError naming the package."""
    path = os.environ.get("INTERCODE_SLIRP4NETNS") or shutil.which("slirp4netns")
    if not path or not os.access(path, os.X_OK):
        raise SandboxUnavailableError(MISSING)
    return path


def _parse_info(data: bytes) -> dict[str, int] | None:
    """bubblewrap's ``--info-fd`` JSON once it is complete, else ``None``."""
    try:
        info = json.loads(data)
        int(info["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None
    return info if isinstance(info, dict) else None


class SandboxNetwork:
    """The network of one bubblewrap sandbox (see the module docstring).

    Use: :meth:`bwrap_args` and :meth:`child_fds` when building bwrap's command line,
    :meth:`spawned` once bwrap runs, :meth:`attach` before the sandbox is used, and
    :meth:`close` with the sandbox.
    """

    def __init__(self, setting: bool | str | None) -> None:
        self.mode = network_mode(setting)
        self._slirp = find_slirp4netns() if self.mode == "isolated" else ""
        self._nsenter = ""
        if self._slirp and os.geteuid() != 0:
            self._nsenter = shutil.which("nsenter") or ""
            if not self._nsenter:
                raise SandboxUnavailableError("the isolated network needs nsenter when not "
                                              "run as root: sudo apt-get install util-linux")
        self._info: tuple[int, int] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._exit_w: int | None = None
        self._stderr: int | None = None
        self._ready_r: int | None = None

    def bwrap_args(self) -> list[str]:
        """bubblewrap options for this mode."""
        if self.mode == "host":
            return ["--share-net"]
        if self.mode == "isolated":
            if self._info is None:
                self._info = os.pipe2(os.O_CLOEXEC)
            return ["--info-fd", str(self._info[1])]
        return []

    def child_fds(self) -> list[int]:
        """Descriptors bwrap must inherit."""
        return [self._info[1]] if self._info is not None else []

    def spawned(self) -> None:
        """bwrap runs: drop our copy of its end of the info pipe."""
        if self._info is not None and self._info[1] >= 0:
            os.close(self._info[1])
            self._info = (self._info[0], -1)

    def attach(self) -> None:
        """Attach slirp4netns to the sandbox and wait until ``tap0`` is configured."""
        if self.mode != "isolated" or self._proc is not None:
            return
        assert self._info is not None, "bwrap_args() was not used"
        info = self._read_info()
        pid, netns_id = int(info["child-pid"]), info.get("net-namespace")
        net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        user_fd = -1
        try:
            if netns_id is not None and os.fstat(net_fd).st_ino != int(netns_id):
                raise SandboxUnavailableError("the sandbox exited before its network was attached")
            if os.geteuid() != 0:
                user_fd = fcntl.ioctl(net_fd, NS_GET_USERNS)
            self._start_slirp(net_fd, user_fd)
        finally:
            for fd in (net_fd, user_fd):
                if fd >= 0:
                    os.close(fd)
        self._await_ready()

    def _read_info(self) -> dict[str, int]:
        assert self._info is not None
        data = b""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if not fdwait.readable(self._info[0], 0.1):
                continue
            chunk = os.read(self._info[0], 1 << 16)
            if not chunk:
                break
            data += chunk
            info = _parse_info(data)
            if info is not None:
                return info
        raise SandboxUnavailableError(
            f"bubblewrap reported no sandbox pid for the network: {data[:200]!r}")

    def _start_slirp(self, net_fd: int, user_fd: int) -> None:
        ready_r, ready_w = os.pipe2(os.O_CLOEXEC)
        exit_r, self._exit_w = os.pipe2(os.O_CLOEXEC)
        self._ready_r = ready_r
        self._stderr = os.memfd_create("slirp4netns-stderr", os.MFD_CLOEXEC)
        argv = [self._slirp, "--configure", f"--mtu={SLIRP_MTU}", "--disable-host-loopback",
                "--enable-sandbox", "--enable-seccomp", f"--ready-fd={ready_w}",
                f"--exit-fd={exit_r}", "--netns-type=path", f"/proc/self/fd/{net_fd}", "tap0"]
        fds = [ready_w, exit_r, net_fd]
        if user_fd >= 0:
            # Not root: run slirp4netns in the user namespace that owns the sandbox's
            # netns, where it may configure tap0 and --enable-sandbox can drop its rights
            # (as rootless podman does). The agent's own, nested namespace has no rights
            # over it.
            argv = [self._nsenter, "--preserve-credentials", f"--user=/proc/self/fd/{user_fd}",
                    "--", *argv]
            fds.append(user_fd)
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
                pass_fds=fds, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                start_new_session=True)
        except OSError as exc:
            raise SandboxUnavailableError(f"cannot run {self._slirp}: {exc}") from exc
        finally:
            os.close(ready_w)
            os.close(exit_r)

    def _await_ready(self) -> None:
        assert self._proc is not None and self._ready_r is not None
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            readable = fdwait.readable(self._ready_r, 0.05)
            if readable and os.read(self._ready_r, 1) == b"1":
                return
            if readable or self._proc.poll() is not None:
                break
        raise SandboxUnavailableError(f"slirp4netns did not set up the network: {self._why()}")

    def _why(self) -> str:
        assert self._proc is not None
        code = self._proc.poll()
        err = ""
        if self._stderr is not None:
            os.lseek(self._stderr, 0, os.SEEK_SET)
            text = os.read(self._stderr, 1 << 16).decode("utf-8", "replace")
            lines = [ln for ln in text.splitlines() if ln and not ln.startswith("WARNING")]
            err = "; ".join(lines[-3:])
        state = "still running" if code is None else f"exit code {code}"
        return f"{err or 'no message'} ({state})"

    def close(self) -> None:
        """Stop slirp4netns (closing its exit pipe) and release every descriptor."""
        if self._exit_w is not None:
            os.close(self._exit_w)
            self._exit_w = None
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for fd in (self._ready_r, self._stderr, *(self._info or ())):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._ready_r = None
        self._stderr = None
        self._info = None
