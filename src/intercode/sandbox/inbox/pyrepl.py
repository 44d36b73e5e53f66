"""A persistent Python interpreter for agents, forked from the zygote (see ``zygote``).

It speaks the shell's protocol (see ``shell``): a header ``<seq> <length> [kind]``, the
action's bytes, and a status record ``<seq> <code> <cwd>`` plus NUL on descriptor 62.
``exec`` actions behave like the interactive interpreter: statements run in one
persistent namespace, the value of a final expression is printed with ``repr``, and
an exception prints its traceback (code 1) without ending the session. ``SystemExit``
is reported and contained. ``eval``, ``probe``, ``judge`` and ``program`` actions (sent by the host,
never by the agent) carry JSON scoring requests (see ``pyscore``): each runs in a fork
(a judge's request that can change nothing, in the interpreter itself), leaves the
interpreter's own state untouched, and its JSON reply goes to the host as a
record ``<seq> reply\n<json>`` on the status descriptor, just before the status.
``replay`` (sent by the host for a fork: the episode's own earlier actions, a JSON list)
runs each of them as an ``exec`` action, in this interpreter, one after another.
"""

import _signal
import ast
import builtins
import io
import json
import os
import signal
import sys
import traceback

from . import pyhold, pyprogram, pyscore, shell

NAMESPACE_NAME = "__main__"
SPARE_OUTPUT_FD = 61  # a copy of the output pipe, to recover if the agent closes 1 or 2
REQUESTS = {"eval": pyscore.evaluate, "probe": pyscore.probe, "judge": pyscore.judge,
            "program": pyprogram.program}


# an interpreter's own handlers, over those it inherits
OWN_SIGNALS = ((signal.SIGCHLD, signal.SIG_DFL), (signal.SIGTERM, signal.SIG_DFL),
               (signal.SIGHUP, signal.SIG_DFL), (signal.SIGALRM, signal.SIG_DFL),
               (signal.SIGINT, signal.default_int_handler), (signal.SIGPIPE, signal.SIG_IGN))


def child_setup(fds, env, extra_keep=(), prepared=False):
    """Turn a fresh fork of the zygote (a copy of the supervisor at boot) into a clean
    interpreter process.

    It stays not dumpable, as the supervisor is: until :func:`dumpable` (once the spare
    is handed its episode), no process of the agent may trace it, read or write its
    memory, or take a descriptor from it. A spare is forked while the agent's processes
    run, holds the supervisor's descriptors until the loop below closes them, and is the
    next episode's interpreter: dumpable, an agent wrote into its memory (the next
    episode's ``1 + 1`` was ``3``). ``prepared``: the zygote already did what
    :func:`prepare` does, and the fork set its handlers from :func:`signal_table`."""
    action_r, output_w, status_w = fds
    os.setsid()
    if not prepared:
        for sig, handler in OWN_SIGNALS:
            signal.signal(sig, handler)
    signal.set_wakeup_fd(-1)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(output_w, 1)
    os.dup2(output_w, 2)
    os.dup2(action_r, shell.ACTION_FD)
    os.dup2(status_w, shell.STATUS_FD)
    os.dup2(output_w, SPARE_OUTPUT_FD)
    keep = (0, 1, 2, shell.STATUS_FD, shell.ACTION_FD, SPARE_OUTPUT_FD, *extra_keep)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    for fd in (shell.STATUS_FD, shell.ACTION_FD, SPARE_OUTPUT_FD):
        os.set_inheritable(fd, False)
    if not prepared:
        prepare(env)
    _fresh_streams()


def prepare(env):
    """What every interpreter needs and none of its parents minds: the agent's
    environment, and no module of the supervisor left to import. The zygote does it
    once, before its first fork: an interpreter that did it itself copied some 130 pages
    of the zygote's memory (each written page is copied at its first write), on every
    reset."""
    os.environ.clear()
    os.environ.update(env)
    for name in [m for m in sys.modules if m == "icbox" or m.startswith("icbox.")]:
        del sys.modules[name]
    sys.argv = [""]


def signal_table(inherited):
    """``((signal, handler), ...)`` that gives a fork of the zygote (which ignores every
    signal it can) the handlers of a fork of pid 1 (``inherited``, as
    ``signal.getsignal`` gave them) with the interpreter's own over them; in the form
    :func:`set_signals` passes to ``_signal.signal`` (without the ``signal`` module's
    enum conversions). Computed once in the zygote."""
    final = {sig: handler for sig, handler in inherited.items() if handler is not None}
    final.update(OWN_SIGNALS)
    raw = {int(signal.SIG_DFL): _signal.SIG_DFL, int(signal.SIG_IGN): _signal.SIG_IGN}
    return tuple((int(sig), raw[int(handler)] if isinstance(handler, int) else handler)
                 for sig, handler in final.items())


def set_signals(table):
    """Install :func:`signal_table`'s handlers (a signal that cannot be set is skipped)."""
    for sig, handler in table:
        try:
            _signal.signal(sig, handler)
        except (OSError, ValueError):
            pass


def dumpable():
    """Dumpable again, like any program (its ``/proc`` files the agent's to read): only
    once this process serves the episode that may touch it (see :func:`child_setup`)."""
    pyhold._dumpable(True)


def _fresh_streams():
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.__stdout__, sys.__stderr__, sys.__stdin__ = (  # type: ignore[misc]
        sys.stdout, sys.stderr, sys.stdin)


def _streams_ok():
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            if stream.closed or stream.fileno() != fd:
                return False
            os.fstat(fd)
        except (ValueError, OSError, AttributeError):
            return False
    return True


class Repl:
    """The interpreter loop."""

    def __init__(self):
        self.namespace = {"__name__": NAMESPACE_NAME, "__builtins__": builtins}

    def serve(self):
        """Read and run actions until the action pipe closes."""
        reader = os.fdopen(shell.ACTION_FD, "rb", buffering=0, closefd=False)
        while True:
            header = _read_line(reader)
            if header is None:
                os._exit(0)
            parts = header.split()
            seq, length = parts[0], int(parts[1])
            kind = parts[2] if len(parts) > 2 else "exec"
            payload = _read_exact(reader, length)
            if length <= shell.SHORT_ACTION:
                _read_exact(reader, 1)
            if not _streams_ok():
                _repair_fds()
                _fresh_streams()
            del pyscore.REPLY[:]
            if kind == "hold":  # a snapshot: the resumed copy goes on with the next action
                held = pyhold.hold(_flush)
                if held is None:
                    continue
                pyscore.REPLY.append(json.dumps({"pid": held}))
                code = 0
            else:
                code = self.run(payload.decode("utf-8", "surrogateescape"), kind)
            _flush()
            record = ("%s %d %s" % (seq, code, os.getcwd())).encode("utf-8", "replace") + b"\0"
            if (kind in REQUESTS or kind == "hold") and pyscore.REPLY:
                data = pyscore.REPLY[-1].encode("utf-8", "replace").replace(b"\0", b"")
                record = ("%s reply\n" % seq).encode("ascii") + data + b"\0" + record
            try:
                _write_all(shell.STATUS_FD, record)
            except OSError:
                os._exit(3)

    def run(self, source, kind):
        """Run one action; return 0 or 1 (an exception was shown)."""
        try:
            handler = REQUESTS.get(kind)
            if handler is not None:
                return handler(self.namespace, json.loads(source))
            return run_source(source, self.namespace)
        except KeyboardInterrupt:
            _show_exception(sys.exc_info())
            return 1


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_line(reader):
    data = bytearray()
    while True:
        c = reader.read(1)
        if not c:
            return None
        if c == b"\n":
            return data.decode("ascii")
        data += c


def _read_exact(reader, n):
    data = bytearray()
    while len(data) < n:
        chunk = reader.read(n - len(data))
        if not chunk:
            os._exit(0)
        data += chunk
    return bytes(data)


def _repair_fds():
    """The agent closed or replaced its output: point 1 and 2 at the output pipe again."""
    try:
        os.dup2(SPARE_OUTPUT_FD, 1)
        os.dup2(SPARE_OUTPUT_FD, 2)
    except OSError:
        os._exit(4)  # nothing left to write to: the host replaces the interpreter


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (ValueError, OSError):
            pass


def _show_exception(info):
    """Print a traceback without the interpreter's own frames."""
    etype, value, tb = info
    while tb is not None and tb.tb_frame.f_code.co_filename != "<stdin>":
        tb = tb.tb_next
    _flush()
    sys.stderr.write("".join(traceback.format_exception(etype, value, tb)))
    _flush()


def run_source(source, namespace):
    """Interactive semantics: statements, then the repr of a final expression."""
    try:
        tree = ast.parse(source, "<stdin>", "exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
        etype, value, _tb = sys.exc_info()
        _flush()
        sys.stderr.write("".join(traceback.format_exception_only(etype, value)))
        return 1
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    try:
        if tree.body:
            exec(compile(tree, "<stdin>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<stdin>", "eval"), namespace)
            if value is not None:
                builtins._ = value
                print(repr(value))
        return 0
    except SystemExit as exc:
        _flush()
        sys.stderr.write("SystemExit: %s (the interpreter keeps running)\n" % (exc.code,))
        return 1
    except BaseException:  # the agent's exception is the observation
        _show_exception(sys.exc_info())
        return 1


def replay(namespace, sources):
    """Run ``sources`` (the episode's earlier actions, for a fork) one after another as
    ``exec`` actions; the reply counts those run (the host replays one by one instead
    when it is not all of them, or the request timed out)."""
    ran = 0
    if isinstance(sources, list):
        for source in sources:
            if not isinstance(source, str):
                break
            if not _streams_ok():
                _repair_fds()
                _fresh_streams()
            run_source(source, namespace)
            _flush()
            ran += 1
    pyscore.REPLY.append(json.dumps({"ran": ran}))
    return 0


REQUESTS["replay"] = replay


def start(fds, env, go_fd=None, prepared=False):
    """Entry of the forked interpreter (never returns).

    With ``go_fd`` it is a spare: fully set up, it waits for the supervisor to send a
    working directory on that descriptor before it serves actions. ``prepared``: see
    :func:`child_setup`.
    """
    try:
        child_setup(fds, env, extra_keep=() if go_fd is None else (go_fd,), prepared=prepared)
        repl = Repl()
        if go_fd is not None:
            line = _read_line(os.fdopen(go_fd, "rb", buffering=0))
            if line is None:
                os._exit(0)
            try:
                os.chdir(line)
            except OSError:
                os.chdir("/")
        dumpable()
        repl.serve()
    finally:
        os._exit(1)
