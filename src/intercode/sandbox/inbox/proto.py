"""Framing of the control channel between the host and the in-sandbox supervisor.

A frame is an 8-byte header (big-endian JSON length, blob length), a JSON object and
an optional binary blob. This module runs on both sides, so it uses only the
standard library and syntax that old Python 3 versions accept.
"""

import fcntl
import json
import os
import struct

HEADER = struct.Struct(">II")
MAX_JSON = 64 * 1024 * 1024
MAX_BLOB = 2 * 1024 * 1024 * 1024 - 1


def move_high(fd, first):
    """``fd`` moved to a number of at least ``first``, close-on-exec (the original closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, first)
    os.close(fd)
    return moved


def encode(msg, blob=b""):
    """Return the bytes of one frame."""
    body = json.dumps(msg, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body), len(blob)) + body + blob


class Parts(list):
    """A blob in pieces (the files of a tree), written one after another: never joined
    into one copy in the supervisor's memory (see :func:`write_frame`)."""


def write_frame(fd, msg, blob=b""):
    """Write one frame to a blocking descriptor; ``blob`` may be :class:`Parts`."""
    if not isinstance(blob, Parts):
        write_all(fd, encode(msg, blob))
        return
    body = json.dumps(msg, separators=(",", ":")).encode("utf-8")
    write_all(fd, HEADER.pack(len(body), sum(len(p) for p in blob)) + body)
    for part in blob:
        write_all(fd, part)


def write_all(fd, data):
    """Write all of ``data`` to a blocking file descriptor."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd, n):
    """Read exactly ``n`` bytes from a blocking descriptor; EOFError at end of stream."""
    chunks = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("control channel closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    """Read one frame from a blocking descriptor and return ``(msg, blob)``."""
    jlen, blen = HEADER.unpack(read_exact(fd, HEADER.size))
    if jlen > MAX_JSON or blen > MAX_BLOB:
        raise ValueError("frame too large")
    msg = json.loads(read_exact(fd, jlen).decode("utf-8"))
    blob = read_exact(fd, blen) if blen else b""
    return msg, blob


class FrameBuffer:
    """Incremental decoder for frames arriving on a non-blocking descriptor."""

    def __init__(self):
        self._buf = bytearray()

    def feed(self, data):
        """Add bytes; return the list of complete ``(msg, blob)`` frames."""
        self._buf += data
        frames = []
        while len(self._buf) >= HEADER.size:
            jlen, blen = HEADER.unpack_from(self._buf, 0)
            end = HEADER.size + jlen + blen
            if len(self._buf) < end:
                break
            body = bytes(self._buf[HEADER.size:HEADER.size + jlen])
            blob = bytes(self._buf[HEADER.size + jlen:end])
            del self._buf[:end]
            frames.append((json.loads(body.decode("utf-8")), blob))
        return frames


def pack_entries(entries, joined=True):
    """Serialise tree entries ``(path, kind, mode, mtime_ns, payload)`` to (json list, blob).

    ``payload`` is the file content (bytes) for kind ``f``, the link target (str) for
    ``l`` and ``None`` for ``d``. ``joined=False``: the blob as :class:`Parts`.
    """
    meta = []
    parts = []
    for path, kind, mode, mtime_ns, payload in entries:
        if kind == "f":
            meta.append([path, kind, mode, mtime_ns, len(payload)])
            parts.append(payload)
        elif kind == "l":
            meta.append([path, kind, mode, mtime_ns, payload])
        else:
            meta.append([path, kind, mode, mtime_ns, None])
    return meta, (b"".join(parts) if joined else Parts(parts))


def unpack_entries(meta, blob):
    """Inverse of :func:`pack_entries`."""
    entries = []
    offset = 0
    for path, kind, mode, mtime_ns, extra in meta:
        if kind == "f":
            payload = blob[offset:offset + extra]
            offset += extra
        elif kind == "l":
            payload = extra
        else:
            payload = None
        entries.append((path, kind, mode, mtime_ns, payload))
    if offset != len(blob):
        raise ValueError("tree blob length does not match its entries")
    return entries
