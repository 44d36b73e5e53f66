"""Reading files that hostile input names: regular files only, bounded, never blocking.

A run folder someone hands us, or a user dataset and the files it names, may hold a
FIFO (an open for reading waits for a writer for ever), a symbolic link to
``/dev/zero`` (endless), a file of many GiB, a line without end or JSON nested deep
enough to overflow the parser. Every such file is opened here with ``O_NONBLOCK``,
checked with ``fstat`` to be a regular file before one byte is read, and read within a
size bound; a line past its bound is cut off unread; JSON is parsed within a nesting
bound. Anything refused is a :class:`Refused` with a one-line reason (never the
file's content).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from typing import IO, Any

__all__ = [
    "MAX_FILE",
    "UNBOUNDED",
    "Refused",
    "describe",
    "lines",
    "loads",
    "open_regular",
    "read_bytes",
    "size_text",
]

MAX_FILE = 1 << 30  # bytes of a results or messages file
UNBOUNDED = 1 << 62  # the size bound of a run's own files, read to resume it
MAX_LINE = 64 << 20  # bytes of one line, or of one whole JSON document
MAX_DEPTH = 100  # nesting of JSON objects and lists
# "[" and "{" in one JSON document: an empty list is 3 bytes on disk and over 60 in
# memory, so a line of nothing else within MAX_LINE would take gigabytes to parse
MAX_CONTAINERS = 1 << 20


class Refused(Exception):
    """A file or a line that is not read (the message is one line, no content)."""


def describe(mode: int) -> str:
    """What kind of file ``mode`` is, for an error."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def size_text(size: int) -> str:
    """``1073741824`` -> ``1 GiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


def open_regular(path: str | os.PathLike[str], max_size: int = MAX_FILE,
                 follow: bool = True, dir_fd: int | None = None) -> IO[bytes]:
    """Open a regular file for reading without ever blocking; refuse anything else and
    files larger than ``max_size``. ``follow=False`` refuses a symbolic link itself.
    Raises :class:`Refused`, or ``OSError`` when it cannot be opened at all."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise Refused("is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"is {describe(info.st_mode)}, not a regular file")
        if info.st_size > max_size:
            raise Refused(f"is larger than {size_text(max_size)}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], max_size: int = MAX_LINE,
               follow: bool = True, dir_fd: int | None = None) -> bytes:
    """The content of a regular file of at most ``max_size`` bytes (see
    :func:`open_regular`); a file that grows past the bound while read is refused."""
    with open_regular(path, max_size, follow, dir_fd) as fh:
        data = fh.read(max_size + 1)
    if len(data) > max_size:
        raise Refused(f"is larger than {size_text(max_size)}")
    return data


def lines(fh: IO[bytes], max_line: int = MAX_LINE,
          max_total: int = MAX_FILE) -> Iterator[tuple[int, bytes | None]]:
    """``(number, line)`` of each complete (newline-ended) line of ``fh``; a line longer
    than ``max_line`` is skipped unread and given as ``None``. A torn last line is left
    out; reading stops after ``max_total`` bytes."""
    number, total = 0, 0
    while total < max_total:
        line = fh.readline(max_line + 1)
        if not line:
            return
        total += len(line)
        number += 1
        if line.endswith(b"\n"):
            yield number, line
            continue
        if len(line) <= max_line:
            return  # a torn last line
        while not line.endswith(b"\n") and total < max_total:  # skip the rest of it
            line = fh.readline(1 << 20)
            if not line:
                return
            total += len(line)
        yield number, None


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` within a nesting bound; ``ValueError`` for anything refused
    (not JSON, too deep, a number too long, more than :data:`MAX_CONTAINERS` lists and
    objects, the brackets in strings counted too). Bytes that are not UTF-8 are replaced."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") > MAX_CONTAINERS:
        raise ValueError(f"more than {MAX_CONTAINERS} lists and objects")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth}") from None
    if depth_over(value, max_depth):
        raise ValueError(f"nested deeper than {max_depth}")
    return value


def depth_over(value: Any, max_depth: int) -> bool:
    """Whether objects and lists in ``value`` nest deeper than ``max_depth``."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False
