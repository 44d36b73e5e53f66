"""Waiting for a descriptor to be readable, at any descriptor number.

``select(2)`` cannot watch a descriptor numbered 1024 or more (``FD_SETSIZE``; Python
raises ``ValueError``), and a process holding a hundred and more sandboxes has such
numbers (each sandbox keeps a few pipes open on the host). ``poll(2)`` has no such
bound.
"""

from __future__ import annotations

import errno
import math
import os
import select

__all__ = ["readable"]


def readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` is readable (or at its end, or failed: a read then tells) within
    ``timeout`` seconds (``None``: as long as it takes). A closed descriptor raises
    ``OSError(EBADF)``, as ``select`` does."""
    poller = select.poll()  # about 1.6 us a call, select's 1.2: a new one each time
    poller.register(fd, select.POLLIN)
    ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
    events = poller.poll(ms)
    if any(mask & select.POLLNVAL for _, mask in events):
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    return bool(events)
