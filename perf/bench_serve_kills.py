"""No sandbox leaks when clients are killed at random (1,000 episodes, no leak).

Run by hand (not a test), on loopback:
    python perf/bench_serve_kills.py [--episodes 1000] [--protocol openenv|mcp|both]
                                           [--cap 900] [--json out.json]

For each protocol, one server (bash, bash-demo) in a subprocess:
    intercode serve openenv|mcp --env bash --dataset bash-demo --port 0 --max-sessions 16
                                --warm 4 --idle-timeout 30
then 4 client subprocesses (this file with --client) play gold episodes in a loop (reset,
about one in three episodes `sleep 2` first, the gold action, submit), each printing one
line per finished episode. A controller SIGKILLs a random client at random moments
(often mid-action), and starts a new one, until --episodes episodes have finished in
all, or --cap seconds have passed (the report says how many were done). Then:
  drain    the server's bwrap descendants (walking /proc from its pid), every 2 s, until
           at most 2 x warm sandboxes are left (a bash env has two), for at most
           idle-timeout + 30 s
  stop     SIGTERM to the server; every bwrap process ever seen under it must be gone
PASS: episodes done, every reward 1.0, the drain reached 2 x warm, nothing left after stop.
Bounded: each client call has a time-out, every process started here is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

DATASET = "bash-demo"
MAX_SESSIONS = 16
WARM = 4
IDLE_TIMEOUT = 30
CLIENTS = 4
CALL_TIMEOUT = 60.0
SLEEP_SHARE = 0.35  # episodes that run `sleep 2` first (so kills land mid-action)


# -- a client (a subprocess) ---------------------------------------------------------------

def client_openenv(url: str, seed: int) -> None:
    import asyncio

    from intercode.benchmarks import get
    from intercode.datasets import load_dataset
    from intercode.integrations.serve.openenv import IntercodeEnvClient, ServerError

    benchmark = get("bash")
    tasks = load_dataset(DATASET, "bash")
    rng = random.Random(seed)

    async def play() -> None:
        while True:
            try:
                async with IntercodeEnvClient(base_url=url, message_timeout_s=CALL_TIMEOUT) as env:
                    while True:
                        task = rng.choice(tasks)
                        await env.reset(task=task.index)
                        slept = rng.random() < SLEEP_SHARE
                        if slept:
                            await env.step("sleep 2")
                        await env.step(benchmark.gold_action(task))
                        result = await env.step(benchmark.gold_submit(task))
                        print(f"EP {float(result.reward or 0.0)} {task.index} {int(slept)}",
                              flush=True)
            except ServerError as exc:
                if exc.code != "busy":
                    raise
                print(f"BUSY {exc}", flush=True)
                await asyncio.sleep(1.0)

    asyncio.run(play())


def client_mcp(url: str, seed: int) -> None:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from intercode.benchmarks import get
    from intercode.datasets import load_dataset

    benchmark = get("bash")
    tasks = load_dataset(DATASET, "bash")
    rng = random.Random(seed)

    async def call(c: Client, tool: str, **arguments: Any) -> dict[str, Any]:
        with anyio.fail_after(CALL_TIMEOUT):
            result = await c.call_tool(tool, arguments)
        if result.is_error:
            text = getattr(result.content[0], "text", str(result.content))
            raise RuntimeError(text)
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def play() -> None:
        while True:
            try:
                async with (httpx2.AsyncClient(timeout=httpx2.Timeout(CALL_TIMEOUT))
                            as http, Client(streamable_http_client(url, http_client=http))
                            as c):
                    while True:
                        task = rng.choice(tasks)
                        await call(c, "reset", task=task.index)
                        slept = rng.random() < SLEEP_SHARE
                        if slept:
                            await call(c, "execute", code="sleep 2")
                        await call(c, "execute", code=benchmark.gold_action(task))
                        reward = (await call(c, "submit"))["reward"]
                        print(f"EP {float(reward)} {task.index} {int(slept)}", flush=True)
            except Exception as exc:  # the Client's task group wraps it in a group
                inner = exc
                while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
                    inner = inner.exceptions[0]  # type: ignore[assignment]
                if not (isinstance(inner, RuntimeError) and str(inner).startswith("busy")):
                    raise
                print(f"BUSY {inner}", flush=True)
                await anyio.sleep(1.0)

    anyio.run(play)


# -- /proc ---------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[str, int, int] | None:
    """(comm, ppid, start time) of a process, None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, tuple[str, int, int]]:
    """Every process under ``root``: pid -> (comm, ppid, start time)."""
    table: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            got = _stat(int(entry))
            if got is not None:
                table[int(entry)] = got
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[str, int, int]] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child] = table[child]
            stack.append(child)
    return found


def bwraps(root: int) -> tuple[int, int, dict[int, int]]:
    """(sandboxes, bwrap processes, pid -> start time of each bwrap) under ``root``.

    A sandbox is a bwrap whose parent is not a bwrap (bwrap forks once inside its
    namespaces, so one sandbox can be two bwrap processes)."""
    under = descendants(root)
    boxes = {pid: start for pid, (comm, _, start) in under.items() if comm == "bwrap"}
    tops = sum(1 for pid in boxes if under[pid][1] not in boxes)
    return tops, len(boxes), boxes


# -- the controller ------------------------------------------------------------------------

def start_server(protocol: str,
                 log: list[str]) -> tuple[subprocess.Popen[str], str]:
    """The server, its address; its stderr lines go to ``log``."""
    command = [sys.executable, "-m", "intercode", "serve", protocol, "--env", "bash",
               "--dataset", DATASET, "--port", "0", "--max-sessions", str(MAX_SESSIONS),
               "--warm", str(WARM), "--idle-timeout", str(IDLE_TIMEOUT)]
    if protocol == "mcp":
        command[command.index("--port"):command.index("--port")] = ["--transport", "http"]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    found: list[str] = []
    ready = threading.Event()

    def drain(stream: Any) -> None:
        for line in stream:
            match = re.search(r"on (http://[^\s,]+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
            elif stream is proc.stderr and line.strip():
                log.append(line.rstrip())
        ready.set()

    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=drain, args=(stream,), daemon=True).start()
    ready.wait(120)
    if not found:
        proc.kill()
        raise SystemExit(f"the {protocol} server did not start:\n" + "\n".join(log[-20:]))
    return proc, found[0]


def raised(err: str) -> str:
    """What a client's stderr says was raised: the last line naming an exception (an
    ExceptionGroup's table ends in border lines), else its last line."""
    lines = [line.strip(" |+-") for line in err.strip().splitlines()]
    named = [line for line in lines if re.match(r"[\w.]*(Error|Exception|Group|Timeout)"
                                                r"\w*\b", line)]
    return ((named or lines or [""])[-1])[:300]


class Clients:
    """CLIENTS client subprocesses, their finished episodes, kills and restarts."""

    def __init__(self, protocol: str, url: str, rng: random.Random) -> None:
        self.protocol = protocol
        self.url = url
        self.rng = rng
        self.lock = threading.Lock()
        self.episodes = 0
        self.slept = 0
        self.bad_rewards: list[str] = []
        self.busy = 0
        self.exits: list[str] = []  # clients that ended by themselves (an error)
        self.kills = 0
        self.started = 0
        self.procs: list[subprocess.Popen[str]] = []

    def spawn(self) -> subprocess.Popen[str]:
        self.started += 1
        proc = subprocess.Popen(
            [sys.executable, __file__, "--client", self.url, "--protocol", self.protocol,
             "--seed", str(self.rng.randrange(1 << 30))],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()
        return proc

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            parts = line.split()
            with self.lock:
                if parts and parts[0] == "EP":
                    self.episodes += 1
                    self.slept += int(parts[3])
                    if float(parts[1]) != 1.0:
                        self.bad_rewards.append(line.strip())
                elif parts and parts[0] == "BUSY":
                    self.busy += 1
        err = proc.stderr.read()
        code = proc.wait()
        if code != -signal.SIGKILL:
            with self.lock:
                self.exits.append(f"exit {code}: {raised(err)}")

    def run(self, target: int, cap: float) -> float:
        start = time.monotonic()
        self.procs = [self.spawn() for _ in range(CLIENTS)]
        next_kill = start + self.rng.uniform(2.0, 5.0)  # the first clients import first
        last_report = start
        try:
            while self.episodes < target and time.monotonic() - start < cap:
                time.sleep(0.05)
                now = time.monotonic()
                for i, proc in enumerate(self.procs):
                    if proc.poll() is not None:  # it ended by itself: start another
                        self.procs[i] = self.spawn()
                if now >= next_kill:
                    i = self.rng.randrange(len(self.procs))
                    self.procs[i].send_signal(signal.SIGKILL)
                    self.procs[i].wait()
                    self.kills += 1
                    self.procs[i] = self.spawn()
                    next_kill = now + self.rng.uniform(0.3, 4.0)
                if now - last_report >= 30:
                    last_report = now
                    print(f"  {now - start:5.0f} s: {self.episodes} episodes, {self.kills} "
                          f"kills, {self.busy} busy", flush=True)
        finally:
            for proc in self.procs:  # the last ones are killed too
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    self.kills += 1
                proc.wait()
        return time.monotonic() - start


def run_protocol(protocol: str, target: int, cap: float, seed: int) -> dict[str, Any]:
    print(f"== {protocol}: {target} episodes, {CLIENTS} clients, cap {cap:.0f} s", flush=True)
    log: list[str] = []
    server, url = start_server(protocol, log)
    seen: dict[int, int] = {}  # every bwrap ever seen under the server: pid -> start time
    sampling = threading.Event()
    peak = [0]

    def sample() -> None:
        while not sampling.wait(0.5):
            tops, _, boxes = bwraps(server.pid)
            seen.update(boxes)
            peak[0] = max(peak[0], tops)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        time.sleep(2.0)
        at_start = bwraps(server.pid)[:2]
        clients = Clients(protocol, url, random.Random(seed))
        wall = clients.run(target, cap)
        print(f"  {clients.episodes} episodes in {wall:.0f} s, {clients.kills} kills; "
              "draining", flush=True)
        timeline: list[tuple[float, int, int]] = []
        drain_start = time.monotonic()
        drained = False
        settle = 0.0
        while time.monotonic() - drain_start <= IDLE_TIMEOUT + 30:
            tops, procs, _ = bwraps(server.pid)
            timeline.append((round(time.monotonic() - drain_start, 1), tops, procs))
            if tops <= 2 * WARM:
                if not drained:
                    drained = True
                    settle = time.monotonic() + 4.0  # still there a little later?
                if time.monotonic() >= settle:
                    break
            else:
                drained = False
            time.sleep(2.0)
        sampling.set()
        sampler.join()
        tops, procs, boxes = bwraps(server.pid)
        seen.update(boxes)
        before_stop = (tops, procs)
        server_alive = server.poll() is None
    finally:
        sampling.set()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
            stopped = "SIGTERM"
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            stopped = "SIGKILL (SIGTERM timed out after 30 s)"
    time.sleep(1.0)
    left = []
    for pid, start in seen.items():
        got = _stat(pid)
        if got is not None and got[0] == "bwrap" and got[2] == start:
            left.append(pid)
    passed = (clients.episodes >= target and not clients.bad_rewards
              and before_stop[0] <= 2 * WARM and not left and server_alive)
    return {"protocol": protocol, "target": target, "episodes": clients.episodes,
            "episodes_slept_first": clients.slept, "wall_s": round(wall, 1),
            "cap_hit": clients.episodes < target, "kills": clients.kills,
            "clients_started": clients.started, "busy_answers": clients.busy,
            "client_errors": clients.exits[:10], "client_error_count": len(clients.exits),
            "bad_rewards": clients.bad_rewards[:10],
            "bad_reward_count": len(clients.bad_rewards),
            "sandboxes_at_start": at_start[0], "bwrap_procs_at_start": at_start[1],
            "sandboxes_peak": peak[0], "drain_timeline_s_sandboxes_procs": timeline,
            "sandboxes_before_stop": before_stop[0], "bwrap_procs_before_stop": before_stop[1],
            "limit": 2 * WARM, "server_alive_until_stop": server_alive, "stopped_by": stopped,
            "bwrap_seen": len(seen), "bwrap_left_after_stop": left,
            "server_tracebacks": sum(1 for line in log if line.startswith("Traceback")),
            "server_errors": sorted(set(errors(log))),
            "pass": passed}


def errors(log: list[str]) -> list[str]:
    """The last line of each traceback in the server's log (what was raised)."""
    found = []
    for i, line in enumerate(log):
        if line.startswith("Traceback"):
            for later in log[i + 1:]:
                if not later.startswith((" ", "Traceback", "During", "The above")):
                    found.append(later[:200])
                    break
    return found


def show(r: dict[str, Any]) -> None:
    verdict = "PASS" if r["pass"] else "FAIL"
    print(f"-- {r['protocol']}: {verdict}")
    print(f"  episodes        {r['episodes']}/{r['target']} in {r['wall_s']} s"
          f"{' (CAP HIT)' if r['cap_hit'] else ''}; {r['episodes_slept_first']} ran sleep 2 "
          "first")
    print(f"  kills           {r['kills']} SIGKILLs, {r['clients_started']} clients started, "
          f"{r['busy_answers']} busy answers, {r['client_error_count']} clients ended by an "
          "error")
    for line in r["client_errors"]:
        print(f"                  {line}")
    print(f"  rewards != 1.0  {r['bad_reward_count']} {r['bad_rewards'][:3]}")
    print(f"  sandboxes       at start {r['sandboxes_at_start']} ({r['bwrap_procs_at_start']} "
          f"bwrap processes), peak {r['sandboxes_peak']}, before stop "
          f"{r['sandboxes_before_stop']} ({r['bwrap_procs_before_stop']} processes); "
          f"limit {r['limit']}")
    timeline = ", ".join(f"{t:g}s:{s}" for t, s, _ in r["drain_timeline_s_sandboxes_procs"])
    print(f"  drain           {timeline}")
    print(f"  after stop      {len(r['bwrap_left_after_stop'])} of {r['bwrap_seen']} bwrap "
          f"processes seen remain {r['bwrap_left_after_stop'][:10]} (stopped by "
          f"{r['stopped_by']})")
    print(f"  server log      {r['server_tracebacks']} tracebacks")
    for line in r["server_errors"]:
        print(f"                  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--protocol", choices=["openenv", "mcp", "both"], default="both")
    parser.add_argument("--cap", type=float, default=900.0,
                        help="seconds of client play per protocol at most (900)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", default=None)
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("INTERCODE_DATA_MIRROR", str(
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "intercode"))
    if args.client is not None:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if args.protocol == "mcp":
            client_mcp(args.client, args.seed)
        else:
            client_openenv(args.client, args.seed)
        return 0
    protocols = ["openenv", "mcp"] if args.protocol == "both" else [args.protocol]
    results = [run_protocol(p, args.episodes, args.cap, args.seed) for p in protocols]
    for result in results:
        show(result)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["pass"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
