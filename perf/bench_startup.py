"""Start-up time of the ``intercode`` command: ``--help`` of it and of every sub-command.

Run by hand (not a test):  python perf/bench_startup.py [--runs N] [--json out.json]

Each sample is a fresh ``python -m intercode ... --help`` process (what a user pays each
time), timed from spawn to exit; the figure is the median of N runs after 2 untimed warm-up
runs (the page cache), as wall time and as CPU time (steadier on a busy machine). The floor,
``python -c pass``, is measured alongside. Goal: ``intercode --help``
<= 0.15 s. ``--importtime`` prints the ten slowest imports of
``intercode --help`` (``python -X importtime``, cumulative).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS: list[list[str]] = [
    [], ["eval"], ["validate"], ["play"], ["report"], ["compare"], ["show"], ["serve"],
    ["serve", "mcp"], ["serve", "openenv"], ["export"], ["doctor"], ["datasets"],
]


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parent.parent / "src")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": src if not path else f"{src}{os.pathsep}{path}"}


def medians(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of a fresh process running ``argv``.

    The CPU time is the steadier figure on a busy machine (it leaves out waiting for a
    core); the wall time is what the user sees."""
    env = _env()
    walls, cpus = [], []
    for i in range(runs + 2):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
        if i >= 2:
            walls.append(wall)
            cpus.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def slowest_imports(count: int = 10) -> list[tuple[int, str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "intercode", "--help"],
                          env=_env(), capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    results = {"python -c pass": medians([sys.executable, "-c", "pass"], args.runs)}
    for sub in COMMANDS:
        label = " ".join(["intercode", *sub, "--help"])
        results[label] = medians([sys.executable, "-m", "intercode", *sub, "--help"], args.runs)
    print(f"{'median of ' + str(args.runs) + ' fresh processes':34s} {'wall':>9s} {'cpu':>9s}")
    for label, (wall, cpu) in results.items():
        print(f"{label:34s} {wall * 1000:6.1f} ms {cpu * 1000:6.1f} ms")
    if args.importtime:
        print("slowest imports of `intercode --help` (cumulative us):")
        for micros, name in slowest_imports():
            print(f"  {micros:8d} {name}")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": args.runs, "median_wall_cpu_s": results},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
