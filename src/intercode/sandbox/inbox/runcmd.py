"""Running one command to completion outside the shell, with bounded output.

Used for upstream-quirks actions (a fresh ``bash -c`` per action) and for building
file systems. The output is read while the command runs: the first ``keep`` bytes are
kept, the rest only counted, and a command that writes more than ``hard`` bytes is
stopped, so a flood (``head -c 1500000000 /dev/zero``) never fills the supervisor's or
the host's memory.
"""

import os
import select
import time

from . import oomguard


def run_bounded(argv, stdin, cwd, env, timeout, keep, hard):
    """``(exit_code, timed_out, output, total_bytes, stopped)`` of one command."""
    import subprocess  # not at boot: see fsops.md5_file

    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                start_new_session=True,
                                preexec_fn=oomguard.join if oomguard.active() else None)
    except OSError as exc:
        text = str(exc).encode()
        return 127, False, text, len(text), False
    deadline = None if timeout is None else time.monotonic() + timeout
    out, total, stopped = bytearray(), 0, False
    pending = memoryview(stdin or b"")
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    if not pending:
        proc.stdin.close()
        in_fd = None
    poller = select.poll()
    poller.register(out_fd, select.POLLIN)
    if in_fd is not None:
        poller.register(in_fd, select.POLLOUT)
    open_out = True
    while open_out:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        for fd, _ev in poller.poll(None if left is None else max(1, int(left * 1000))):
            if fd == out_fd:
                chunk = os.read(out_fd, 1 << 16)
                if not chunk:
                    poller.unregister(out_fd)
                    open_out = False
                    continue
                total += len(chunk)
                if len(out) < keep:
                    out += chunk[:keep - len(out)]
                if total > hard:
                    stopped, open_out = True, False
            elif fd == in_fd:
                try:
                    pending = pending[os.write(in_fd, pending[:1 << 16]):]
                except BrokenPipeError:
                    pending = memoryview(b"")
                if not pending:
                    poller.unregister(in_fd)
                    proc.stdin.close()
                    in_fd = None
    timed_out = open_out  # the loop ended at the deadline with the output still open
    if open_out or stopped:
        _kill_group(proc)
    code = _wait(proc, deadline)
    if code is None:
        _kill_group(proc)
        code, timed_out = _wait(proc, None), True
    proc.stdout.close()
    if in_fd is not None:
        proc.stdin.close()
    return (None if timed_out else code), timed_out, bytes(out), total, stopped


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
