"""Run a submitted program on one test: the ``program`` request (APPS).

The request (from the host, never from the agent) carries the program's source and one
test's input: ``{"source", "mode", "fn_name", "input", "timeout", "cap"}``. It runs in a
scorer interpreter that never runs the agent's code itself: each test is a fresh fork
(its own session, so its own process group), which

* ``stdin`` mode: reads the test's input on descriptor 0 (an unlinked file) and runs the
  source as ``__main__``; what it writes on descriptor 1 is the output (descriptor 2
  goes to ``/dev/null``). ``SystemExit`` ends it normally, as in APPS's harness; any
  other exception, a signal or a non-zero ``os._exit`` is a runtime error.
* ``call`` mode: runs the source, then calls ``fn_name`` (the method of a fresh
  ``Solution()`` when the source defines ``class Solution``, as APPS does) with the
  test's arguments; the return value goes back as typed JSON (``pyvalue.encode``).

The scorer waits for the fork until the test's time limit, reads at most ``cap`` bytes,
then kills the fork's process group. The reply is
``{"status": "ok"|"error"|"timeout"|"overflow"|"failed", "out": <base64>}``: only what
the agent's program said, compared with the expected output on the host. Nothing here
knows an expected output. Before forking, the scorer makes itself not dumpable, so the
fork cannot trace it, read its memory or take its descriptors through ``/proc``.
"""

import base64
import builtins
import io
import json
import os
import select
import signal
import sys
import time

from . import pyscore, pyvalue

VALUE_FD = 3  # call mode: the fork writes its return value here
# the names APPS's harness puts in front of every solution (some solutions use them
# without importing them); numpy only where the sandbox has it
PRELUDE = """\
import sys, time, itertools, collections, math, fractions, random, heapq
from itertools import accumulate, product, permutations, combinations
from collections import Counter, OrderedDict, deque, defaultdict, ChainMap
from functools import lru_cache
from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2
from typing import List, Tuple
from heapq import *
try:
    import numpy as np
except ImportError:
    pass
"""


def _undumpable():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _close_others(keep):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _stdin_fd(data):
    """A descriptor reading ``data``: an unlinked file (memory files are not allowed in
    the sandbox)."""
    import tempfile
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        fd = os.dup(fh.fileno())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _plain(value):
    """APPS compares sequences as lists: a tuple is a list; numpy values become Python's."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    return value


def _int_keys(value):
    """JSON has only string keys: APPS turns a dict argument's keys into ints."""
    try:
        return {int(k): v for k, v in value.items()}
    except (ValueError, TypeError):
        return None


def _arguments(raw):
    args = list(raw) if type(raw) is list else [raw]
    if args and type(args[0]) is dict:  # APPS then passes that dict alone
        converted = _int_keys(args[0])
        if converted is not None:
            args = [converted]
    return args


def _child(request, out_w):
    """The fork: set up its descriptors, run the agent's program, exit with its status."""
    os.setsid()
    for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    stdin = _stdin_fd(str(request.get("input", "")).encode("utf-8", "surrogateescape")
                      if request["mode"] == "stdin" else b"")
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(stdin, 0)
    if request["mode"] == "stdin":
        os.dup2(out_w, 1)
    else:
        os.dup2(null, 1)
        os.dup2(out_w, VALUE_FD)
    os.dup2(null, 2)
    _close_others((0, 1, 2) if request["mode"] == "stdin" else (0, 1, 2, VALUE_FD))
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                 encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                  encoding="utf-8", errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["solution.py"]
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    code = 0
    try:
        exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
        exec(compile(request["source"], "solution.py", "exec"), namespace)
        if request["mode"] == "call":
            _call(request, namespace)
    except SystemExit:
        pass
    except BaseException:
        code = 1
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    os._exit(code)


def _call(request, namespace):
    name = request["fn_name"]
    if "class Solution" in request["source"]:
        target = getattr(namespace["Solution"](), name)
    else:
        target = namespace[name]
    value = _plain(target(*_arguments(request.get("input"))))
    data = json.dumps(pyvalue.encode(value, pyvalue.Budget(int(request["cap"])))).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(VALUE_FD, view):]


def _watch(pid, read_fd, timeout, cap):
    """The fork's output and how it ended (``ok``, ``error``, ``timeout``, ``overflow``)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    out = bytearray()
    deadline = time.monotonic() + timeout
    open_pipe, status = True, None
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return out, "timeout"
        watched = ([read_fd] if open_pipe else []) + ([pidfd] if pidfd is not None else [])
        ready = select.select(watched, [], [], left if pidfd is not None else min(left, 0.01))[0]
        if read_fd in ready:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                open_pipe = False
            out += chunk
            if len(out) > cap:
                return out[:cap], "overflow"
        done, wstatus = os.waitpid(pid, os.WNOHANG)
        if done:
            status = "ok" if os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0 else "error"
    while open_pipe and select.select([read_fd], [], [], 0)[0]:  # what it wrote before it ended
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        out += chunk
        if len(out) > cap:
            return out[:cap], "overflow"
    if pidfd is not None:
        os.close(pidfd)
    return out, status


def _kill(pid):
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def run_test(request):
    """One test of the program, in a fresh fork: the reply's fields."""
    timeout, cap = float(request["timeout"]), int(request["cap"])
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        return {"status": "failed", "why": "could not start the program: %s" % exc}
    if pid == 0:
        try:
            os.close(read_fd)
            _child(request, write_fd)
        finally:
            os._exit(1)
    os.close(write_fd)
    try:
        out, status = _watch(pid, read_fd, timeout, cap)
    finally:
        os.close(read_fd)
        _kill(pid)
    return {"status": status, "out": base64.b64encode(bytes(out)).decode("ascii")}


def program(namespace, request):
    """The ``program`` request: reply one test's outcome (a JSON object)."""
    _undumpable()
    try:
        result = run_test(request)
    except (KeyError, TypeError, ValueError) as exc:
        result = {"status": "failed", "why": "bad request: %s" % exc}
    pyscore.reply(json.dumps(result))
    return 0
