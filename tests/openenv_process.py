"""``intercode serve openenv`` in a subprocess, for the tests and perf scripts that drive a
real server: started on a free port, its address read from the line it prints once it
listens, stopped with SIGTERM (then SIGKILL) at the end."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

START_DEADLINE = 90.0


def start(args: list[str], env: Mapping[str, str] | None = None,
          stderr: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start ``intercode serve openenv ARGS --port 0``: (the process, its http:// URL).
    A server that does not start in time raises ``RuntimeError`` with its last words."""
    err = stderr.open("w") if stderr is not None else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "intercode", "serve", "openenv", *args,
                             "--port", "0"], stdout=subprocess.PIPE, stderr=err, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], START_DEADLINE)
    line = proc.stdout.readline() if ready else ""
    if "http://" not in line:
        stop(proc)
        said = stderr.read_text()[-2000:] if stderr is not None else ""
        raise RuntimeError(f"the server did not start: {line!r} {said}")
    return proc, "http://" + line.split("http://", 1)[1].split()[0]


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL after 20 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def served(args: list[str], env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The URL of a server running for the ``with`` block."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start(args, env, Path(tmp) / "server.err")
        try:
            yield url
        finally:
            stop(proc)
