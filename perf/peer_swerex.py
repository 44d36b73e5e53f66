"""Per-command latency of ``echo hi``: SWE-ReX's local bash session vs intercode's sandbox.

Measured in one process, one after another, each after a warm-up:

* ``floor``: a bare persistent ``bash`` over pipes, no sandbox; write ``echo hi; echo
  __END__`` and read until the marker (the least any shell step can cost).
* ``intercode``: ``BwrapSandbox.run("echo hi")`` on a started, loaded sandbox.
* ``swerex``: ``await LocalRuntime().run_in_session(BashAction(command="echo hi"))`` on a
  session opened with ``create_session(CreateBashSessionRequest())``.

Why SWE-ReX is slow (read from swerex/runtime/local.py, swe-rex 1.4.0, and pexpect 4.8):
each ``BashSession._run_normal`` first forks ``bash -n`` to syntax-check the command and
parses it with bashlex, then does two ``sendline`` round trips through a pexpect pty (the
command, waiting for PS1; then ``echo EXITCODESTART$?EXITCODEEND``, waiting for PS1 again).
Every pexpect ``send`` sleeps ``delaybeforesend`` = 50 ms first, so that alone is ~100 ms
per command (setting it to None drops ``echo hi`` from ~108 ms to ~5 ms); the rest is the
``bash -n`` fork, bashlex, and the ``expect`` loop sleeping ``delayafterread`` per read.

Run (needs ``pip install swe-rex`` and bubblewrap); without ``--runs``, SWE-ReX gets 200
timed runs and the others 2000:  python perf/peer_swerex.py [--runs N] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    import swerex
    from swerex.runtime import abstract as rex
    from swerex.runtime.local import LocalRuntime
except ImportError as exc:
    print(f"error: cannot import swerex ({exc}); install it with: pip install swe-rex",
          file=sys.stderr)
    raise SystemExit(2) from exc

from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import FileTree

COMMAND = "echo hi"
MARKER = b"__END__\n"


def stats(samples: list[float]) -> dict[str, float]:
    """Median, p90 and mean of samples given in seconds, in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {"runs": len(ms), "median_ms": statistics.median(ms),
            "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))], "mean_ms": statistics.fmean(ms)}


def timed(step: Callable[[], str], warmup: int, runs: int) -> list[float]:
    """Time `runs` calls of `step` after `warmup` untimed ones; each must return "hi\\n"."""
    samples: list[float] = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        out = step()
        dt = time.perf_counter() - t0
        if out.strip() != "hi":
            raise RuntimeError(f"unexpected output {out!r}")
        if i >= warmup:
            samples.append(dt)
    return samples


def bench_floor(warmup: int, runs: int) -> list[float]:
    proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    fd_in, fd_out = proc.stdin.fileno(), proc.stdout.fileno()
    line = f"{COMMAND}; echo {MARKER.decode().strip()}\n".encode()

    def step() -> str:
        os.write(fd_in, line)
        buf = b""
        while not buf.endswith(MARKER):
            chunk = os.read(fd_out, 65536)
            if not chunk:
                raise RuntimeError("bash exited")
            buf += chunk
        return buf[: -len(MARKER)].decode()

    try:
        return timed(step, warmup, runs)
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


def bench_intercode(warmup: int, runs: int) -> list[float]:
    sb = BwrapSandbox()
    try:
        sb.start()
        sb.load(FileTree.of([]))
        return timed(lambda: sb.run(COMMAND).output, warmup, runs)
    finally:
        sb.close()


def bench_swerex(warmup: int, runs: int) -> list[float]:
    # One private event loop drives the async API; its overhead is microseconds.
    loop, rt = asyncio.new_event_loop(), LocalRuntime()
    action = rex.BashAction(command=COMMAND, session="bench", timeout=10)

    def step() -> str:
        obs = loop.run_until_complete(rt.run_in_session(action))
        return obs.output if obs.exit_code == 0 else f"exit {obs.exit_code}: {obs.output}"

    try:
        loop.run_until_complete(rt.create_session(rex.CreateBashSessionRequest(session="bench")))
        return timed(step, warmup, runs)
    finally:
        if "bench" in rt.sessions:
            loop.run_until_complete(rt.close_session(rex.CloseBashSessionRequest(session="bench")))
        loop.run_until_complete(rt.close())
        loop.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=None,
                    help="timed runs for every runtime (default: 200 SWE-ReX, 2000 others)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed runs first (default 20)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = ap.parse_args(argv)
    fast, slow = (args.runs, args.runs) if args.runs else (2000, 200)

    results: dict[str, dict[str, float]] = {
        "floor": stats(bench_floor(args.warmup, fast)),
        "intercode": stats(bench_intercode(args.warmup, fast)),
        "swerex": stats(bench_swerex(args.warmup, slow)),
    }
    ratio = results["swerex"]["median_ms"] / results["intercode"]["median_ms"]

    print(f"command: {COMMAND!r}   swe-rex {swerex.__version__}   warmup {args.warmup}")
    print(f"{'runtime':<10} {'runs':>6} {'median ms':>10} {'p90 ms':>9} {'mean ms':>9}")
    for name, r in results.items():
        print(f"{name:<10} {r['runs']:>6} {r['median_ms']:>10.3f} "
              f"{r['p90_ms']:>9.3f} {r['mean_ms']:>9.3f}")
    print(f"median ratio swerex / intercode: {ratio:.1f}x")

    if args.json:
        doc: dict[str, object] = {"command": COMMAND, "swerex_version": swerex.__version__,
                               "warmup": args.warmup, "results": results,
                               "ratio_swerex_over_intercode": ratio}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
