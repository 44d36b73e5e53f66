"""Scoring requests of the Python interpreter: ``eval``, ``probe`` and ``judge``.

``eval`` runs setup steps and whole test statements in a fork (the gold's tests, in an
interpreter no agent code ever ran in). MBPP tests of an agent's function are split by
the host (``intercode.rewards.python_split``) so that the agent's process never decides an
outcome and never sees an expected value:

* ``probe`` (in a fork of the agent's interpreter) evaluates only the sub-expressions that
  need the agent's namespace (calls of its functions with the tests' inputs) and reports
  each value as strictly typed JSON (``encode``), or the exception it raised, with the
  output printed meanwhile. What it reports is a claim, never trusted.
* ``judge`` (in a fork of the gold's fresh interpreter) runs each test's template, the
  assert with those values substituted (``decode``), and returns upstream's outcome of it;
  in that interpreter itself when nothing of the request can outlast it (``_here``).
"""

import _signal
import builtins
import io
import json
import os
import select
import signal
import sys
import time

from . import pyvalue

# the reply of the request being served: the interpreter sends it to the host on the
# status descriptor, beside the action's status (never mixed into the output)
REPLY = []


def reply(text):
    """Set the reply of the current request."""
    del REPLY[:]
    REPLY.append(text)

UNIT = "__ic_unit__"
GRACE = 1.0  # seconds past a test's limit before its probe is killed
TEXT_CAP = 64 * 1024  # output printed by one sub-expression that is kept
MESSAGE_CAP = 4096  # characters of an exception message


class ReplyError(Exception):
    """A value the agent's interpreter reported that is not understood."""


def outcome(source, namespace, timeout):
    """Upstream's result of ``exec(source)``: output and error text, or ``Error: <e>``."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err

    def expire(*_):
        raise TimeoutError("the test took more than %g s" % timeout)

    _signal.signal(signal.SIGALRM, expire)  # (not the enum conversions of signal's)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        exec(compile(source, "<test>", "exec"), namespace)
        result = {"output": out.getvalue().strip(), "error": err.getvalue().strip()}
    except BaseException as exc:
        result = {"error": "Error: %s" % (exc,)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = saved
    return result


def _in_fork(work):
    """Run ``work()`` (returns bytes) in a fork; return what it returned."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            data = work()
        except BaseException as exc:
            data = json.dumps({"failed": repr(exc)}).encode()
        with os.fdopen(write_fd, "wb") as fh:
            fh.write(data)
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return data


def _gold_outcomes(namespace, request):
    for step in request.get("steps", []):
        outcome(step, namespace, request["timeout"])
    return [outcome(test, namespace, request["timeout"]) for test in request["tests"]]


def evaluate(namespace, request):
    """Run setup steps and whole tests in a fork (the interpreter's state stays as it is)."""
    def work():
        return json.dumps(_gold_outcomes(namespace, request)).encode("utf-8", "replace")

    reply(_in_fork(work).decode("utf-8", "replace"))
    return 0


# -- probe: the agent's side ------------------------------------------------------------

def _clip(text, cap):
    return text if len(text) <= cap else text[:cap] + "\n[output cut]"


def _printed(text, budget):
    """Printed text as kept: at most ``TEXT_CAP`` characters and within the budget."""
    text = _clip(text, TEXT_CAP)
    size = len(json.dumps(text))
    if size > budget.left:
        text = text[:max(0, budget.left // 6 - 20)] + "\n[output cut]"
        size = len(json.dumps(text))
    budget.left -= size
    return text


def _raised(exc):
    try:
        message = str(exc)
    except BaseException:
        message = "<exception str() failed>"
    return [type(exc).__name__[:100], _clip(message, MESSAGE_CAP)]


def _probe_unit(source, namespace, budget):
    """Evaluate one sub-expression: its typed value and output, or what it raised."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        value = eval(compile(source, "<test>", "eval"), namespace)
        reply = {"v": pyvalue.encode(value, budget)}
        reply["out"] = _printed(out.getvalue(), budget)
        reply["err"] = _printed(err.getvalue(), budget)
    except BaseException as exc:
        reply = {"raise": _raised(exc)}
    finally:
        sys.stdout, sys.stderr = saved
    return reply


def _probe_test(units, namespace, timeout, budget):
    expired = []
    late = {"raise": ["TimeoutError", "the test took more than %g s" % timeout]}

    def expire(*_):
        expired.append(True)
        raise TimeoutError(late["raise"][1])

    replies = []
    _signal.signal(signal.SIGALRM, expire)  # (not the enum conversions of signal's)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for source in units:
            replies.append(late if expired else _probe_unit(source, namespace, budget))
    except BaseException:  # the alarm rang between two sub-expressions
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return replies + [late] * (len(units) - len(replies))


def _probe_child(namespace, request, write_fd):
    """The fork: setup steps, then one JSON line per test on ``write_fd``."""
    budget = pyvalue.Budget(int(request.get("budget", 1 << 19)))
    for step in request.get("steps", []):
        outcome(step, namespace, request["timeout"])
    for units in request["tests"]:
        line = json.dumps(_probe_test(units, namespace, request["timeout"], budget))
        data = (line + "\n").encode("utf-8", "surrogateescape")
        while data:
            data = data[os.write(write_fd, data):]
    os._exit(0)


def _collect(read_fd, request):
    """The fork's lines, each within its time limit; whether the last one was late."""
    lines, buf = [], b""
    timeout = request["timeout"]
    deadline = time.monotonic() + timeout * (len(request.get("steps", [])) + 1) + GRACE
    while len(lines) < len(request["tests"]):
        left = deadline - time.monotonic()
        if left <= 0:
            return lines, True
        if not select.select([read_fd], [], [], left)[0]:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(line.decode("utf-8", "surrogateescape"))
            deadline = time.monotonic() + timeout + GRACE
    return lines, False


def _probe_fork(namespace, request):
    """One fork that probes ``request["tests"]`` in order, killed when a test is late."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            _probe_child(namespace, request, write_fd)
        finally:
            os._exit(1)
    os.close(write_fd)
    try:
        lines, late = _collect(read_fd, request)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(pid, 0)
    return lines[:len(request["tests"])], late


def probe(namespace, request):
    """Reply the typed values of each test's agent-side sub-expressions (a JSON list).

    A test that outlives its limit (or ends its process) costs only itself: its fork is
    killed and a new fork of the interpreter probes the tests after it.
    """
    tests, timeout = request["tests"], request["timeout"]
    budget = int(request.get("budget", 1 << 19))
    lines = []
    while len(lines) < len(tests):
        rest = dict(request, tests=tests[len(lines):],
                    budget=budget - sum(len(line) for line in lines))
        got, late = _probe_fork(namespace, rest)
        lines += got
        if len(lines) < len(tests):
            why = ("TimeoutError", "the test took more than %g s" % timeout) if late \
                else ("RuntimeError", "the interpreter ended during the test")
            lines.append(json.dumps([{"raise": list(why)}] * len(tests[len(lines)])))
    reply("[" + ",".join(lines) + "]")
    return 0


# -- judge: a process that never ran agent code ---------------------------------------

def _replayer(replies):
    """The function a template calls for sub-expression ``k``: the reported value."""
    def unit(k):
        reply = replies[k] if type(replies) is list and 0 <= k < len(replies) else None
        if type(reply) is not dict:
            raise ReplyError("the interpreter's reply was not understood")
        if "raise" in reply:
            raise _exception(reply["raise"])
        out, err = reply.get("out", ""), reply.get("err", "")
        if type(out) is not str or type(err) is not str:
            raise ReplyError("the interpreter's reply was not understood")
        try:
            value = pyvalue.decode(reply.get("v"))
        except (ValueError, TypeError, KeyError, RecursionError, OverflowError, MemoryError):
            raise ReplyError("the interpreter's reply was not understood") from None
        sys.stdout.write(out)
        sys.stderr.write(err)
        return value
    return unit


class Reported(Exception):
    """What a sub-expression raised in the agent's interpreter, by its message alone: an
    outcome says only the text (``Error: <message>``), and a template cannot catch."""


def _exception(raised):
    """An exception with the reported message (only its text reaches an outcome; no class
    is made by the agent's name, which a judge run in place would leave behind)."""
    if type(raised) is not list or len(raised) != 2 or not all(type(x) is str for x in raised):
        return ReplyError("the interpreter's reply was not understood")
    return Reported(raised[1][:MESSAGE_CAP])


def _here(request):
    """Whether a judge request may run in this interpreter itself: no gold to run, every
    template pure (the host says so: ``rewards.python_split.pure_template``) and every
    reported value plain data, so that nothing of it can outlast the request."""
    if not request.get("here") or request.get("gold") is not None:
        return False
    for test in request["tests"]:
        units = test.get("units")
        for unit in units if type(units) is list else ():
            if type(unit) is dict and "raise" not in unit \
                    and not pyvalue.plain_data(unit.get("v")):
                return False
    return True


def judge(namespace, request):
    """Run each test's template with the reported values, in a fork of this interpreter
    (or in itself, see :func:`_here`: a fork's pages cost more than such a request).

    With a ``gold`` request (an ``eval`` one), the same fork first runs it, and the line
    printed is ``{"gold": outcomes, "pred": outcomes}``.
    """
    def work():
        gold = request.get("gold")
        gold = None if gold is None else _gold_outcomes(namespace, gold)
        fresh = {"__name__": "__main__", "__builtins__": builtins}
        pred = []
        for test in request["tests"]:
            fresh[UNIT] = _replayer(test.get("units"))
            pred.append(outcome(test["template"], fresh, request["timeout"]))
        result = pred if gold is None else {"gold": gold, "pred": pred}
        return json.dumps(result).encode("utf-8", "replace")

    try:
        here = _here(request)
    except Exception:  # a reply it cannot read: the fork's decoding says so
        here = False
    if not here:
        reply(_in_fork(work).decode("utf-8", "replace"))
        return 0
    alarm = _signal.getsignal(signal.SIGALRM)
    try:
        data = work()
    except Exception as exc:  # as a fork reports it
        data = json.dumps({"failed": repr(exc)}).encode()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _signal.signal(signal.SIGALRM, _signal.SIG_DFL if alarm is None else alarm)
    reply(data.decode("utf-8", "replace"))
    return 0
