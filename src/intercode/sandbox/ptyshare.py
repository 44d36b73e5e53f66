"""Each sandbox's share of the host's pseudo-terminals, so that the shares never add up
past the pool.

The kernel counts pseudo-terminals host-wide: ``kernel.pty.max`` less
``kernel.pty.reserve`` (kept for the host's own, initial devpts) for every container's
and sandbox's devpts together. Each sandbox mounts its own instance with a ``max``
(``inbox/privs.py``, ``inbox/newroot.py``), but 48 sandboxes of 64 each took the whole
pool: one agent holding that many sessions left none to the others. Here every sandbox
takes its ``max`` out of a ledger that all of the host user's intercode processes share:
a file in which a sandbox holds an open-file-description lock on one range of bytes, a
byte per pseudo-terminal, as long as it lives (the kernel drops the lock with the
descriptor, also when the process dies). The ledger covers three quarters of the pool
(the rest stays for everything else on the host); a sandbox gets :data:`SHARE` while
the ledger has room, then half as much, down to one. Past that (thousands of sandboxes),
a sandbox starts with one unaccounted pseudo-terminal, with a warning.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import struct
import tempfile
from dataclasses import dataclass

from intercode.sandbox.inbox.privs import PTY_MAX

__all__ = ["Share", "claim"]

log = logging.getLogger(__name__)

SHARE = PTY_MAX  # a sandbox's pseudo-terminals while the ledger has room
DEFAULT_POOL = 4096 - 1024  # the kernel's defaults, where /proc/sys does not say
# struct flock (x86_64, aarch64): l_type, l_whence, l_start, l_len, l_pid
FLOCK = struct.Struct("hh4xqqi4x")
F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", 36)
F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37)
_warned = False


@dataclass
class Share:
    """A sandbox's pseudo-terminals (``size``), held until :meth:`release`."""

    size: int
    fd: int | None

    def release(self) -> None:
        """Give the share back (closing the descriptor drops its lock)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def pool() -> int:
    """Pseudo-terminals the ledger hands out: three quarters of what the kernel leaves to
    devpts instances other than the host's own."""
    try:
        with open("/proc/sys/kernel/pty/max") as f:
            most = int(f.read())
        with open("/proc/sys/kernel/pty/reserve") as f:
            reserve = int(f.read())
        total = most - reserve
    except (OSError, ValueError):
        total = DEFAULT_POOL
    return max(total, 0) * 3 // 4


def ledger_path() -> str:
    """The ledger of this host user (in a private directory of the temporary one)."""
    return os.path.join(tempfile.gettempdir(), f"intercode-{os.geteuid()}", "pty-shares")


def _open_ledger() -> int:
    path = ledger_path()
    folder = os.path.dirname(path)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.geteuid() \
            or st.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{folder} is not a private directory of this user")
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _try_lock(fd: int, start: int, length: int) -> int | None:
    """Lock ``[start, start + length)``: ``None`` if done, else where the conflicting
    lock ends (the next place to try)."""
    try:
        fcntl.fcntl(fd, F_OFD_SETLK, FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, start, length, 0))
        return None
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
    found = fcntl.fcntl(fd, F_OFD_GETLK,
                        FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, start, length, 0))
    kind, _whence, held_start, held_length, _pid = FLOCK.unpack(found)
    if kind == fcntl.F_UNLCK:  # released meanwhile: try here again
        return start
    return held_start + held_length if held_length > 0 else start + length


def claim(share: int = SHARE) -> Share:
    """The next sandbox's share: ``share`` pseudo-terminals if the ledger has room, else
    the largest half of it that fits (first fit), else one unaccounted (a warning)."""
    global _warned
    total = pool()
    try:
        fd = _open_ledger()
    except OSError as exc:
        log.warning("pseudo-terminal ledger unavailable (%s): this sandbox's share (%d) is "
                    "not accounted", exc, share)
        return Share(share, None)
    try:
        size = share
        while size >= 1:
            start = 0
            while start + size <= total:
                after = _try_lock(fd, start, size)
                if after is None:
                    return Share(size, fd)
                start = max(after, start + 1)
            size //= 2
    except OSError as exc:
        os.close(fd)
        log.warning("pseudo-terminal ledger unusable (%s): this sandbox's share (%d) is "
                    "not accounted", exc, share)
        return Share(share, None)
    os.close(fd)
    if not _warned:
        _warned = True
        log.warning("the host's pseudo-terminals (%d for sandboxes) are all shared out: "
                    "further sandboxes get one each, not accounted", total)
    return Share(1, None)
