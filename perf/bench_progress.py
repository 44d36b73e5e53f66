"""The cost of the progress display per finished episode (plain lines, a bar into a
buffer, a bar on a pseudo-terminal).

    python perf/bench_progress.py [--updates 5000]
"""

from __future__ import annotations

import argparse
import io
import os
import time

from intercode.runner.progress import Progress

RECORD = {"status": "ok", "success": True,
          "llm": {"calls": 1, "prompt_tokens": 300, "completion_tokens": 20, "latency_s": 0.1}}


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def per_update(stream: io.TextIOBase, updates: int) -> float:
    bar = Progress(updates, stream=stream)
    started = time.perf_counter()
    for _ in range(updates):
        bar.update(RECORD)
    spent = time.perf_counter() - started
    bar.finish()
    return spent / updates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=5000)
    args = parser.parse_args()
    print(f"plain lines:      {per_update(io.StringIO(), args.updates) * 1e6:.2f} us/update")
    print(f"bar (fake tty):   {per_update(_Tty(), args.updates) * 1e6:.2f} us/update")
    master, slave = os.openpty()
    with open(slave, "w", closefd=True) as tty:  # a real terminal device
        print(f"bar (pty):        {per_update(tty, args.updates) * 1e6:.2f} us/update")
    os.close(master)


if __name__ == "__main__":
    main()
