"""Running one command to completion outside the shell, with bounded output.

Used for upstream-quirks actions (a fresh ``bash -c`` per action), for building
file systems, and for Inspect's sandbox provider (stderr apart, see ``provider``). The
output is read while the command runs: the first ``keep`` bytes are kept, the rest only
counted, and a command that writes more than ``hard`` bytes is stopped, so a flood
(``head -c 1500000000 /dev/zero``) never fills the supervisor's or the host's memory.
"""

import os
import select
import time

from . import oomguard


def run_bounded(argv, stdin, cwd, env, timeout, keep, hard):
    """``(exit_code, timed_out, output, total_bytes, stopped)`` of one command."""
    import subprocess  # not at boot: see fsops.md5_file

    try:
        proc = _start(argv, None, cwd, env, subprocess.STDOUT)
    except OSError as exc:
        text = str(exc).encode()
        return 127, False, text, len(text), False
    code, timed_out, (out,), (total,), stopped = _pump(proc, stdin, timeout, keep, hard)
    return code, timed_out, out, total, stopped


def run_apart(argv, exe, stdin, cwd, env, timeout, keep, hard):
    """``(exit_code, timed_out, (stdout, stderr), (their bytes), stopped)`` of one command
    run as the program ``exe``, with stderr apart and each stream kept up to ``keep``
    bytes (``hard``: their sum); a signal's death is ``128 + signal`` as a shell says.
    A command that cannot start raises the ``OSError`` (its ``filename`` says whether
    the program or the directory ``cwd`` was the trouble)."""
    import subprocess

    proc = _start(argv, exe, cwd, env, subprocess.PIPE)
    code, timed_out, outs, totals, stopped = _pump(proc, stdin, timeout, keep, hard)
    if code is not None and code < 0:
        code = 128 - code
    return code, timed_out, outs, totals, stopped


def _start(argv, exe, cwd, env, stderr):
    import subprocess

    return subprocess.Popen(argv, executable=exe, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=env,
                            start_new_session=True,
                            preexec_fn=oomguard.join if oomguard.active() else None)


def _pump(proc, stdin, timeout, keep, hard):
    """Feed ``stdin`` and read the outputs while ``proc`` runs (see the module)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    streams = [proc.stdout] if proc.stderr is None else [proc.stdout, proc.stderr]
    outs = {s.fileno(): bytearray() for s in streams}
    counts = dict.fromkeys(outs, 0)
    total, stopped = 0, False
    pending = memoryview(stdin or b"")
    in_fd = proc.stdin.fileno()
    if not pending:
        proc.stdin.close()
        in_fd = None
    poller = select.poll()
    for fd in outs:
        poller.register(fd, select.POLLIN)
    if in_fd is not None:
        poller.register(in_fd, select.POLLOUT)
    open_outs = set(outs)
    while open_outs:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        for fd, _ev in poller.poll(None if left is None else max(1, int(left * 1000))):
            if fd in open_outs:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    poller.unregister(fd)
                    open_outs.discard(fd)
                    continue
                total += len(chunk)
                counts[fd] += len(chunk)
                out = outs[fd]
                if len(out) < keep:
                    out += chunk[:keep - len(out)]
                if total > hard:
                    stopped = True
                    open_outs.clear()
                    break
            elif fd == in_fd:
                try:
                    pending = pending[os.write(in_fd, pending[:1 << 16]):]
                except BrokenPipeError:
                    pending = memoryview(b"")
                if not pending:
                    poller.unregister(in_fd)
                    proc.stdin.close()
                    in_fd = None
    timed_out = bool(open_outs)  # the loop ended at the deadline with output still open
    if timed_out or stopped:
        _kill_group(proc)
    code = _wait(proc, deadline)
    if code is None:
        _kill_group(proc)
        code, timed_out = _wait(proc, None), True
    for stream in streams:
        stream.close()
    if in_fd is not None:
        proc.stdin.close()
    return ((None if timed_out else code), timed_out, tuple(bytes(b) for b in outs.values()),
            tuple(counts.values()), stopped)


def _wait(proc, deadline):
    import subprocess

    try:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        return None


def _kill_group(proc):
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
