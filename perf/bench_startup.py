"""Start-up time of the ``intercode`` command: ``--help`` of it and of every sub-command.

Run by hand (not a test):  python perf/bench_startup.py [--runs N] [--json out.json]

Each sample is a fresh ``python -m intercode ... --help`` process (what a user pays each
time), timed from spawn to exit; the figure is the median of N runs after 2 untimed warm-up
runs (the page cache), as wall time and as CPU time (steadier on a busy machine). The floor,
``python -c pass``, is measured alongside. Goal: ``intercode --help``
<= 0.15 s. ``--importtime`` prints the ten slowest imports of
``intercode --help`` (``python -X importtime``, cumulative).

``--first-sandbox``: instead, a fresh process that starts one bwrap sandbox, loads an empty
tree and runs ``true`` (what a run, a worker or a server pays before its first episode),
alternately with an empty cache of the supervisor's compiled modules (the sandbox compiles
them) and with the one an earlier process left (``INTERCODE_CACHE``/boot); the wall time
is the process's, the CPU time its own and its sandbox's.
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


def medians(argv: list[str], runs: int, warmup: int = 2) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of a fresh process running ``argv``.

    The CPU time is the steadier figure on a busy machine (it leaves out waiting for a
    core); the wall time is what the user sees."""
    env = _env()
    walls, cpus = [], []
    for i in range(runs + warmup):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
        if i >= warmup:
            walls.append(wall)
            cpus.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


FIRST_SANDBOX = ("from intercode.sandbox import create_sandbox\n"
                 "from intercode.sandbox.filetree import FileTree\n"
                 "from intercode.sandbox.limits import Limits\n"
                 "box = create_sandbox('bwrap', Limits())\n"
                 "box.start()\nbox.load(FileTree.of([]))\nbox.run('true')\nbox.close()\n")


def first_sandbox(runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of a process's first sandbox, with an empty boot-code
    cache and with a kept one, alternately (see the module docstring)."""
    import shutil
    import tempfile

    samples: dict[str, list[tuple[float, float]]] = {"empty cache": [], "kept cache": []}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["INTERCODE_CACHE"] = cache
        for i in range(2 * runs + 2):
            kept = i % 2 == 1
            if not kept:
                shutil.rmtree(Path(cache) / "boot", ignore_errors=True)
            wall, cpu = medians([sys.executable, "-c", FIRST_SANDBOX], 1, warmup=0)
            if i >= 2:
                samples["kept cache" if kept else "empty cache"].append((wall, cpu))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in samples.items()}


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
    parser.add_argument("--first-sandbox", action="store_true")
    args = parser.parse_args()
    if args.first_sandbox:
        results = first_sandbox(args.runs)
    else:
        results = {"python -c pass": medians([sys.executable, "-c", "pass"], args.runs)}
        for sub in COMMANDS:
            label = " ".join(["intercode", *sub, "--help"])
            results[label] = medians([sys.executable, "-m", "intercode", *sub, "--help"],
                                     args.runs)
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
