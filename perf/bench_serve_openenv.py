"""What the OpenEnv protocol costs per step, and how many sessions one server holds.

Run by hand (not a test), on loopback:
    python perf/bench_serve_openenv.py [--clients 8] [--episodes 20] [--sessions 64]
                                             [--runs 300] [--json out.json]

Measures (bash, bash-demo; the server is `intercode serve openenv` in a subprocess):
  step       `echo hi` as Session.execute in this process, and as IntercodeEnvClient.step over
             the WebSocket (one client, one step at a time): p50/p99; overhead = the
             difference of the medians (what the protocol adds: JSON, WebSocket, the
             server's event loop and its thread hop)
  floor      the same step against openenv-core's server with a do-nothing Environment
             (no sandbox, no intercode): what OpenEnv's stack costs by itself here
  load       --clients clients at once, each --episodes episodes of gold actions (reset,
             the gold, submit): episodes/s, per-step p50/p99, every reward 1.0; and the
             same with --clients threads on a SessionPool in this process
  sessions   --sessions clients holding a session each (reset + one step): how many the
             server held, its RSS per live session (the server process; the sandboxes'
             processes are counted apart), and that one more is told busy
Goal: overhead <= 1 ms p50 on loopback.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # openenv_process

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.integrations.serve.openenv import IntercodeEnvClient, ServerError
from intercode.integrations.serve.sessions import ServeConfig, SessionPool

DATASET = "bash-demo"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": statistics.median(ordered),
            "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "n": len(ordered)}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(
                int(entry))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def start_server(max_sessions: int, warm: int) -> tuple[subprocess.Popen[str], str]:
    from openenv_process import start  # tests/openenv_process.py

    return start(["--env", "bash", "--dataset", DATASET, "--max-sessions", str(max_sessions),
                  "--warm", str(warm)])


def floor_server(port: int) -> None:
    """Serve a do-nothing Environment on openenv-core's stack (for the floor)."""
    import uvicorn
    from fastapi import FastAPI

    from intercode.integrations.serve._openenv_core import (
        ConcurrencyConfig,
        Environment,
        HTTPEnvServer,
    )
    from intercode.integrations.serve.openenv import (
        IntercodeAction,
        IntercodeObservation,
        IntercodeState,
    )

    class Echo(Environment):  # type: ignore[misc]
        SUPPORTS_CONCURRENT_SESSIONS = True

        def reset(self, seed: Any = None, episode_id: Any = None,
                  **kwargs: Any) -> IntercodeObservation:
            return IntercodeObservation(query="q")

        def step(self, action: Any, timeout_s: Any = None,
                 **kwargs: Any) -> IntercodeObservation:
            return IntercodeObservation(output="hi\n", query="q", reward=0.0)

        @property
        def state(self) -> IntercodeState:
            return IntercodeState()

    app = FastAPI()
    HTTPEnvServer(Echo, IntercodeAction, IntercodeObservation,
                  concurrency_config=ConcurrencyConfig(max_concurrent_envs=4)).register_routes(app)
    print(f"floor on http://127.0.0.1:{port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def start_floor() -> tuple[subprocess.Popen[str], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, __file__, "--floor-server", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    time.sleep(1.0)  # uvicorn binds after the line
    return proc, f"http://127.0.0.1:{port}"


def load_in_process(clients: int, episodes: int) -> dict[str, Any]:
    import threading

    benchmark = get("bash")
    tasks = load_dataset(DATASET)
    pool = SessionPool(ServeConfig(env="bash", dataset=DATASET, max_sessions=clients,
                                   warm=clients))
    steps: list[float] = []
    rewards: list[float] = []

    def client(number: int) -> None:
        session = pool.open()
        try:
            for episode in range(episodes):
                task = tasks[(number + episode) % len(tasks)]
                session.reset(task=task.index)
                start = time.perf_counter()
                session.execute(benchmark.gold_action(task))
                steps.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                result = session.submit()
                steps.append((time.perf_counter() - start) * 1000)
                rewards.append(result["reward"])
        finally:
            session.close()

    try:
        warm = [pool.open() for _ in range(clients)]  # start the environments first
        for session in warm:
            session.reset(task=0)
        for session in warm:
            session.close()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
    finally:
        pool.shutdown()
    return {"clients": clients, "episodes": len(rewards), "seconds": wall,
            "episodes_per_s": len(rewards) / wall,
            "all_rewards_1": all(r == 1.0 for r in rewards), "step": percentiles(steps)}


def in_process(runs: int) -> dict[str, float]:
    pool = SessionPool(ServeConfig(env="bash", dataset=DATASET, max_sessions=1, warm=1))
    try:
        session = pool.open()
        session.reset(task=0)
        for _ in range(20):
            session.execute("echo hi")
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            session.execute("echo hi")
            samples.append((time.perf_counter() - start) * 1000)
        return percentiles(samples)
    finally:
        pool.shutdown()


async def over_openenv(url: str, runs: int) -> dict[str, float]:
    async with IntercodeEnvClient(base_url=url, message_timeout_s=60) as env:
        await env.reset(task=0)
        for _ in range(20):
            await env.step("echo hi")
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            await env.step("echo hi")
            samples.append((time.perf_counter() - start) * 1000)
        return percentiles(samples)


async def load(url: str, clients: int, episodes: int) -> dict[str, Any]:
    benchmark = get("bash")
    tasks = load_dataset(DATASET)
    steps: list[float] = []
    rewards: list[float] = []

    async def client(number: int) -> None:
        async with IntercodeEnvClient(base_url=url, message_timeout_s=120) as env:
            for episode in range(episodes):
                task = tasks[(number + episode) % len(tasks)]
                await env.reset(task=task.index)
                for action in (benchmark.gold_action(task), benchmark.gold_submit(task)):
                    start = time.perf_counter()
                    result = await env.step(action)
                    steps.append((time.perf_counter() - start) * 1000)
                    if result.done:
                        break
                rewards.append(float(result.reward or 0.0))

    start = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    wall = time.perf_counter() - start
    return {"clients": clients, "episodes": len(rewards), "seconds": wall,
            "episodes_per_s": len(rewards) / wall, "all_rewards_1": all(r == 1.0
                                                                        for r in rewards),
            "step": percentiles(steps)}


async def hold(url: str, pid: int, sessions: int) -> dict[str, Any]:
    async with IntercodeEnvClient(base_url=url) as one:  # everything imported and warm
        await one.reset(task=0)
        await one.step("echo hi")
    await asyncio.sleep(1.0)
    base_rss = rss_kib(pid)
    base_boxes = sum(rss_kib(p) for p in descendants(pid))
    envs = [IntercodeEnvClient(base_url=url, message_timeout_s=300) for _ in range(sessions)]
    held = 0
    errors: list[str] = []

    async def open_one(env: IntercodeEnvClient, number: int) -> None:
        nonlocal held
        try:
            await env.connect()
            await env.reset(task=number % 8)
            result = await env.step("echo hi")
            assert result.observation.output.strip() == "hi"
            held += 1
        except (ServerError, ConnectionError, AssertionError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    start = time.perf_counter()
    await asyncio.gather(*(open_one(env, n) for n, env in enumerate(envs)))
    opened = time.perf_counter() - start
    live_rss = rss_kib(pid)
    boxes = sum(rss_kib(p) for p in descendants(pid))
    busy = None
    try:
        async with IntercodeEnvClient(base_url=url) as extra:
            await extra.reset(task=0)
    except ServerError as exc:
        busy = exc.code
    for env in envs:
        await env.close()
    return {"tried": sessions, "held": held, "errors": errors[:3], "seconds_to_open": opened,
            "server_rss_mib": live_rss / 1024,
            "server_rss_per_session_kib": (live_rss - base_rss) / max(held, 1),
            "sandbox_rss_per_session_mib": (boxes - base_boxes) / 1024 / max(held, 1),
            "one_more": busy}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", default=None)
    parser.add_argument("--floor-server", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_server is not None:
        floor_server(args.floor_server)
        return 0
    if args.clients > args.sessions:
        parser.error("--clients must not exceed --sessions (the server's cap)")

    local = in_process(args.runs)
    local_load = load_in_process(args.clients, args.episodes)
    floor_proc, floor_url = start_floor()
    try:
        floor = asyncio.run(over_openenv(floor_url, args.runs))
    finally:
        floor_proc.terminate()
        floor_proc.wait(timeout=60)
    proc, url = start_server(max_sessions=args.sessions, warm=args.clients)
    try:
        remote = asyncio.run(over_openenv(url, args.runs))
        loaded = asyncio.run(load(url, args.clients, args.episodes))
        held = asyncio.run(hold(url, proc.pid, args.sessions))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result = {"step_in_process": local, "step_openenv": remote, "step_openenv_floor": floor,
              "overhead_p50_ms": remote["p50_ms"] - local["p50_ms"], "load": loaded,
              "load_in_process": local_load, "sessions": held,
              "load_average": os.getloadavg()}
    print(f"step in process   p50 {local['p50_ms']:.3f} ms  p99 {local['p99_ms']:.3f} ms")
    print(f"step over OpenEnv p50 {remote['p50_ms']:.3f} ms  p99 {remote['p99_ms']:.3f} ms")
    print(f"overhead p50      {result['overhead_p50_ms']:.3f} ms (goal <= 1 ms)")
    print(f"OpenEnv floor     p50 {floor['p50_ms']:.3f} ms  p99 {floor['p99_ms']:.3f} ms "
          "(a do-nothing environment on openenv-core's server)")
    for name, run in (("load (OpenEnv)", loaded), ("load (in process)", local_load)):
        print(f"{name:17s} {run['clients']} clients x {args.episodes} episodes: "
              f"{run['episodes_per_s']:.1f} episodes/s, step p50 "
              f"{run['step']['p50_ms']:.2f} ms p99 {run['step']['p99_ms']:.2f} ms, "
              f"all rewards 1.0: {run['all_rewards_1']}")
    print(f"sessions          held {held['held']}/{held['tried']} (opened in "
          f"{held['seconds_to_open']:.1f} s), server RSS {held['server_rss_mib']:.0f} MiB, "
          f"{held['server_rss_per_session_kib']:.0f} KiB per session in the server + "
          f"{held['sandbox_rss_per_session_mib']:.1f} MiB of sandbox processes; one more: "
          f"{held['one_more']}")
    print(f"load average      {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)")
    if held["errors"]:
        print("errors:", *held["errors"], sep="\n  ")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
