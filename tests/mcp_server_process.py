"""An MCP server subprocess over HTTP for the tests (tests/serve, tests/adversarial)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVE = [sys.executable, "-m", "intercode", "serve", "mcp"]


class HttpServer:
    """A server subprocess on a free loopback port."""

    def __init__(self, proc: subprocess.Popen[str], url: str, log: list[str]) -> None:
        self.proc, self.url, self.log = proc, url, log

    def bwraps(self) -> set[int]:
        """The sandboxes (bwrap processes) the server runs now."""
        return bwraps_of(self.proc.pid)


def bwraps_of(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid), "-x", "bwrap"], capture_output=True,
                         text=True).stdout
    return {int(p) for p in out.split() if alive(int(p))}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@contextmanager
def http_server(*args: str, token: str | None = None,
                env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    """``intercode serve mcp --transport http`` with ``args`` on a free loopback port
    (``token``: required of clients; ``env``: added to the environment); stopped with
    SIGTERM at the end, which it must survive cleanly."""
    env = {**os.environ, **(env or {})}
    if token is not None:
        env["MCP_TEST_TOKEN"] = token
        args = (*args, "--token-env", "MCP_TEST_TOKEN")
    proc = subprocess.Popen([*SERVE, "--transport", "http", "--port", "0", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    log: list[str] = []
    assert proc.stderr is not None
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:  # read the log, never let the pipe fill
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            match = re.search(r"on (http://\S+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        ready.wait(60)
        assert found, f"the server did not start: {''.join(log)}"
        yield HttpServer(proc, found[0], log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("the server did not stop on SIGTERM") from None
    assert proc.returncode == 0, "".join(log)
    assert "Traceback" not in "".join(log), "".join(log)
