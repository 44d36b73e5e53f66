"""How many records one run's process can append to ``results.jsonl``.

Run by hand (not a test):
    python perf/bench_results_log.py [--records 2000] [--size 1000] [--dir DIR]

Appends ``--records`` records of about ``--size`` bytes with ``ResultsLog`` (as the run's
process does for each finished episode, local or Ray) in a folder on the disk that runs
write to (default: a temporary folder beside this script), then closes the log. Reported:
the writer's time per append (what holds the run's process from reading its workers),
records per second, and the time ``close`` takes (the last sync). ``PYTHONPATH`` picks
the tree measured.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import emit

from intercode.runner.logs import ResultsLog


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1000, help="bytes per record")
    parser.add_argument("--dir", default=str(Path(__file__).parent))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        log = ResultsLog(Path(tmp) / "results.jsonl")
        padding = "x" * max(0, args.size - 60)
        appends = []
        start = time.perf_counter()
        for task in range(args.records):
            t0 = time.perf_counter()
            log.append({"task": task, "status": "ok", "reward": 1.0, "padding": padding})
            appends.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        log.close()
        closing = time.perf_counter() - t0
        total = time.perf_counter() - start
    emit({"records": args.records,
          "append_median_ms": round(statistics.median(appends) * 1000, 4),
          "append_p99_ms": round(sorted(appends)[int(len(appends) * 0.99)] * 1000, 4),
          "records_per_s": round(args.records / total),
          "close_ms": round(closing * 1000, 3)}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
