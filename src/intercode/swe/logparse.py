"""The official log parsers, run in helper processes with a time bound.

A test log is written by the code under test, and some of ``swebench``'s parsers take
time quadratic in what it prints (SymPy's on one long line with many spaces, Django's on
many ``... Testing against Django installed in`` lines: minutes for a megabyte, days for
the 16 MiB a log may hold). So the host never runs a parser itself: a helper process
(``swebench`` imported once, kept for the next log) does, under a deadline; past it the
helper is killed and the log is refused (:class:`Overrun`: the patch scores 0 with the
reason). A helper also stops itself (``SIGALRM``) should its host no longer be there to.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import struct
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["Overrun", "ParserGone", "parse"]

KEEP_IDLE = 2  # helpers kept for the next log (a busy one is never shared)
MEMORY = 4 << 30  # a helper's address space
START_TIMEOUT = 120.0  # seconds a helper may take to import swebench
_HEADER = struct.Struct(">Q")
WORKER = r"""
import importlib, json, os, resource, signal, struct, sys
from types import SimpleNamespace
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
os.chdir("/")  # swebench.harness.utils loads a .env from the working directory up
parsers = importlib.import_module("swebench.harness.log_parsers")
python_parsers = importlib.import_module("swebench.harness.log_parsers.python")
def find(name):
    for fn in parsers.MAP_REPO_TO_PARSER.values():
        if fn.__name__ == "parse_log_" + name:
            return fn
    return getattr(python_parsers, "parse_log_" + name)
inp, out = sys.stdin.buffer, sys.stdout.buffer
out.write(b"ready\n"); out.flush()
while True:
    head = inp.read(8)
    if len(head) < 8:
        break
    req = json.loads(inp.read(struct.unpack(">Q", head)[0]))
    signal.alarm(int(req["timeout"]) + 5)  # the default action ends the process
    try:
        found = find(req["parser"])(req["log"], SimpleNamespace(**req["spec"]))
        res = {"ok": {str(k): str(v) for k, v in found.items()}}
    except Exception as exc:
        res = {"error": (type(exc).__name__ + ": " + str(exc))[:300]}
    signal.alarm(0)
    data = json.dumps(res).encode()
    out.write(struct.pack(">Q", len(data)) + data); out.flush()
"""


class Overrun(Exception):
    """The parser did not finish in time, or failed on the log (the message says)."""


class ParserGone(Exception):
    """The helper process could not be started (an error of the host, not of the log)."""


class _Helper:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", WORKER, str(MEMORY)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        try:
            ready = self._read(6, time.monotonic() + START_TIMEOUT)
        except Overrun:
            ready = b""
        if ready != b"ready\n":
            self.kill()
            raise ParserGone("the log parser's helper process did not start (is the "
                             "swebench package importable by this Python?)")

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = json.dumps(request).encode()
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except OSError:
            raise Overrun("the log parser's process ended while reading the log") from None
        head = self._read(_HEADER.size, deadline)
        answer: dict[str, Any] = json.loads(self._read(_HEADER.unpack(head)[0], deadline))
        return answer

    def _read(self, size: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks: list[bytes] = []
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while size:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise Overrun("the log parser took too long on this log")
                chunk = os.read(fd, min(size, 1 << 20))
                if not chunk:
                    raise Overrun("the log parser's process ended on this log")
                chunks.append(chunk)
                size -= len(chunk)
        return b"".join(chunks)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


_idle: list[_Helper] = []
_lock = threading.Lock()


# a forked child (a worker of the runner) starts its own helpers: the pipes stay the parent's
os.register_at_fork(after_in_child=_idle.clear)


@atexit.register
def _close_idle() -> None:
    with _lock:
        while _idle:
            _idle.pop().kill()


def parse(parser: str, log: str, spec: dict[str, Any], timeout: float) -> dict[str, str]:
    """Test name -> status as ``swebench``'s ``parse_log_<parser>`` reads ``log``, in a
    helper process: :class:`Overrun` past ``timeout`` seconds or when the parser fails."""
    with _lock:
        helper = _idle.pop() if _idle else None
    if helper is None or helper.proc.poll() is not None:
        helper = _Helper()
    try:
        answer = helper.ask({"parser": parser, "log": log, "spec": spec,
                             "timeout": timeout}, timeout)
    except BaseException:
        helper.kill()
        raise
    with _lock:
        if len(_idle) < KEEP_IDLE:
            _idle.append(helper)
            helper = None
    if helper is not None:
        helper.kill()
    if "error" in answer:
        raise Overrun(f"the log parser failed: {answer['error']}")
    return dict(answer["ok"])
