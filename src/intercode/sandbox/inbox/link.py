"""Pid 1 of a Docker sandbox: its direct line to the host, a unix socket.

The engine's attach stream costs every frame two hops each way (the engine and the
container's shim). On a Linux host whose engine is local, the host listens on a unix
socket in a private directory of its own, which the engine binds into the container,
and names it in the configuration frame with a random token (``spec``: ``path``,
``token``, ``required``). Pid 1 connects here, as root, before it builds the agent's
root (:mod:`newroot` detaches the bind with every other mount of the old root, before
any agent input exists) and sends the token first; the relay then carries its frames
on this socket instead of stdin and stdout. The socket is close-on-exec and above the
shell's fixed descriptors, so no process of the agent inherits it.

Where the socket cannot be reached (Docker Desktop's file sharing does not carry unix
sockets), :func:`connect` returns ``None`` and the relay stays on the attach stream,
unless the host asked for the socket (``required``).
"""

import os
import socket

CONNECT_TIMEOUT = 10.0  # s: the host is waiting in its start for this connection


def connect(spec, high):
    """The descriptor of a connection to the host's socket at ``spec["path"]`` (blocking,
    moved by ``high`` above the fixed descriptors, close-on-exec), the token sent; or
    ``None`` if it cannot be made and ``spec["required"]`` is false (else ``OSError``)."""
    try:
        path, token = spec["path"], bytes.fromhex(spec["token"])
    except (KeyError, TypeError, ValueError) as exc:
        raise OSError(0, "bad link settings: %r" % (exc,)) from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        sock.sendall(token)
    except OSError as exc:
        sock.close()
        if spec.get("required"):
            raise OSError(exc.errno or 0, "cannot connect to the host's socket %s: %s"
                          % (path, exc)) from None
        return None
    fd = high(sock.detach())
    os.set_blocking(fd, True)  # a timeout made it non-blocking
    return fd
