"""Latency and throughput of the Bash environment, with the raw floor measured alongside.

Run by hand (not a test):  python perf/bench_bash.py [--runs N] [--json out.json]
                           [--sandbox bwrap|docker]

Measures, as medians over many runs:
  floor      `echo hi` on a bare persistent bash over pipes (no sandbox), same machine
  step       `echo hi` through the sandbox (BwrapSandbox.run) and through env.step
  reset      BashEnv.reset on nl2bash-fs1 after an action that changed files
  reward     env.evaluate(): the first of an episode (runs the gold in the second
             sandbox) and the next ones (gold cached, as under Try Again)
  replay     gold replay of all 200 NL2Bash tasks with 2 workers (episodes per second)
  phases     (--phases) where a gold episode's time goes, per task of nl2bash, in one
             process: reset (agent sandbox loads the task), the action, the gold's load and
             run in the second sandbox, the diffs, the hashes, and the rest (host side:
             reward, info, Gymnasium wrappers); tasks over 0.5 s (the walkers) apart
  cpu        (--cpu) where a gold episode's CPU goes (the gold cached, as a replay run has it;
             bwrap only; the tasks whose gold result is stored): this process's, the
             sandbox's processes' (its supervisor, the shell and what it starts; read from
             /proc of this process's descendants), and of that the gold action's commands
             alone (the shell's `times` around them, in a pass of its own, alternating with
             the whole loop five times: the medians); the rest is the overhead per
             episode; with the episodes per second those figures allow on N cores busy
             with nothing else (the ceiling)
  start      create, start, load an empty tree and close a sandbox (the whole life)
  upstream   (--sandbox docker) upstream InterCode's design in the same container image: a
             `docker exec` per action, through the engine API (as docker-py's exec_run) and
             through the docker CLI, and a `docker run --rm` per start
  stream     (--sandbox docker) one round trip of a line through `cat` in a container, over
             the engine API's attach socket (the backend's fallback; on Linux its frames take
             a unix socket to pid 1 instead, see docs/docker.md) and over the pipes of a
             `docker run -i` CLI process (one hop more)
The docker sandbox's path is $INTERCODE_DOCKER_STREAM's (auto, socket or attach).
Targets: step < 0.2 ms, reset < 3 ms, reward < 5 ms, >= 100 episodes/s.
Targets (docker): step <= 0.5 ms, reset <= 10 ms, start <= 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import (
    cached_gold_tasks,
    episode_cpu_split,
    episode_cpu_whole,
    pipe_floor,
    samples_ms,
    timed_run,
)


def timed(fn: Callable[[], object], runs: int, warmup: int = 20) -> dict[str, float]:
    samples = samples_ms(fn, runs, warmup)
    return {"median_ms": statistics.median(samples), "p90_ms": samples[int(0.9 * len(samples))],
            "runs": runs}


def bare_bash_floor(runs: int) -> dict[str, float]:
    """A persistent bash over pipes, with the same end-of-action protocol idea."""
    median = pipe_floor(["bash", "--norc", "--noprofile"], b"echo hi; echo __end__ $?\n",
                        b"__end__", runs)
    return {"median_ms": median, "runs": runs}


SANDBOX = "bwrap"


def start_cost(runs: int) -> dict[str, float]:
    """A sandbox's whole life: create, start, load an empty tree, one action, close."""
    from intercode.sandbox import create_sandbox
    from intercode.sandbox.filetree import FileTree

    def life() -> None:
        box = create_sandbox(SANDBOX)
        box.start()
        box.load(FileTree.of([]))
        box.run("true")
        box.close()

    return timed(life, runs, warmup=2)


def docker_upstream(runs: int) -> dict[str, dict[str, float]]:
    """Upstream's design on the same engine and image: an exec per action, a run per start."""
    import subprocess

    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.docker.sandbox import default_image

    engine, image = DockerEngine(), default_image()
    made = engine.ok("POST", "/containers/create", {
        "Image": image, "Cmd": ["sleep", "infinity"], "User": "1000:1000",
        "HostConfig": {"NetworkMode": "none", "AutoRemove": True}})
    cid = made["Id"]
    engine.ok("POST", f"/containers/{cid}/start")
    try:
        def api_exec() -> None:
            ex = engine.ok("POST", f"/containers/{cid}/exec", {
                "Cmd": ["bash", "-c", "echo hi"], "AttachStdout": True, "AttachStderr": True})
            engine.call("POST", f"/exec/{ex['Id']}/start", {"Detach": False, "Tty": False})
            engine.ok("GET", f"/exec/{ex['Id']}/json")  # its exit code, as exec_run reads it

        def cli_exec() -> None:
            subprocess.run(["docker", "exec", cid, "bash", "-c", "echo hi"], check=True,
                           capture_output=True)

        def cli_run() -> None:
            subprocess.run(["docker", "run", "--rm", "--network", "none", image, "true"],
                           check=True, capture_output=True)

        return {"step_exec_api": timed(api_exec, max(20, runs // 20), warmup=3),
                "step_exec_cli": timed(cli_exec, max(20, runs // 40), warmup=3),
                "start_run_cli": timed(cli_run, 10, warmup=1)}
    finally:
        engine.call("DELETE", f"/containers/{cid}", query={"force": "1"})


def docker_stream(runs: int) -> dict[str, dict[str, float]]:
    """One line's round trip through `cat` in a container: API attach vs CLI pipes."""
    import os
    import subprocess

    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.docker.sandbox import default_image
    from intercode.sandbox.docker.stream import DOCKER_HEAD

    engine, image = DockerEngine(), default_image()
    made = engine.ok("POST", "/containers/create", {
        "Image": image, "Cmd": ["cat"], "OpenStdin": True, "StdinOnce": True,
        "AttachStdin": True, "AttachStdout": True, "HostConfig": {"NetworkMode": "none",
                                                                 "AutoRemove": True}})
    cid = made["Id"]
    sock, first = engine.attach(cid)
    engine.ok("POST", f"/containers/{cid}/start")
    buf = bytearray(first)

    def api_round() -> None:
        sock.sendall(b"hi\n")
        while len(buf) < DOCKER_HEAD.size + 3:
            buf.extend(sock.recv(65536))
        del buf[:DOCKER_HEAD.size + 3]

    proc = subprocess.Popen(["docker", "run", "-i", "--rm", "--network", "none", image, "cat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()

    def cli_round() -> None:
        os.write(in_fd, b"hi\n")
        got = b""
        while len(got) < 3:
            got += os.read(out_fd, 65536)

    try:
        return {"round_trip_api_attach": timed(api_round, runs),
                "round_trip_cli_pipes": timed(cli_round, runs)}
    finally:
        sock.close()
        proc.stdin.close()
        proc.wait(timeout=30)
        engine.call("DELETE", f"/containers/{cid}", query={"force": "1"})


def sandbox_and_env(runs: int) -> dict[str, dict[str, float]]:
    from intercode.envs.bash import BashEnv

    env = BashEnv("nl2bash-fs1", backend=SANDBOX)
    try:
        env.reset(options={"task": 0})
        box = env._sandbox("agent")
        out = {"step_sandbox": timed(lambda: box.run("echo hi"), runs),
               "step_env": timed(lambda: env.step("echo hi"), runs)}

        def reset_after_change() -> float:
            env.step("rm /testbed/hello.c; echo x > /testbed/new.txt; chmod 700 /testbed/dir1")
            start = time.perf_counter()
            env.reset(options={"task": 0})
            return (time.perf_counter() - start) * 1000

        samples = sorted(reset_after_change() for _ in range(max(50, runs // 10)))
        out["reset_env"] = {"median_ms": statistics.median(samples),
                            "p90_ms": samples[int(0.9 * len(samples))], "runs": len(samples)}
        box = env._sandbox("agent")
        out["reset_sandbox_clean"] = timed(box.reset, max(50, runs // 10))

        first, later = [], []
        for i in range(max(30, runs // 20)):
            env.reset(options={"task": i % 60})
            env.step(env.task.gold)
            start = time.perf_counter()
            env.evaluate()
            first.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            env.evaluate()
            later.append((time.perf_counter() - start) * 1000)
        out["reward_first"] = {"median_ms": statistics.median(first), "runs": len(first)}
        out["reward_cached_gold"] = {"median_ms": statistics.median(later), "runs": len(later)}
        return out
    finally:
        env.close()


PHASES = ("reset", "action", "gold_load", "gold_run", "diff_agent", "diff_gold", "hashes")


def episode_phases() -> dict[str, object]:
    """Each sandbox call of a gold episode (``step(gold)``, ``step("submit")``) timed by
    wrapping the two sandboxes' methods; the rest of the episode is host-side work."""
    from intercode.envs.bash import BashEnv

    env = BashEnv("nl2bash", backend=SANDBOX)
    env.warm_up()
    spent: dict[str, float] = {}

    def wrap(box: object, method: str, phase: str) -> None:
        inner = getattr(box, method)

        def timed_call(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - start

        setattr(box, method, timed_call)

    agent, gold = env._sandbox("agent"), env._sandbox("gold")
    for method, phase in (("load", "reset"), ("run", "action"), ("diff", "diff_agent"),
                          ("hashes", "hashes")):
        wrap(agent, method, phase)
    for method, phase in (("load", "gold_load"), ("run", "gold_run"), ("exec", "gold_run"),
                          ("diff", "diff_gold"), ("hashes", "hashes")):
        wrap(gold, method, phase)
    fast: list[dict[str, float]] = []
    slow: list[tuple[int, float]] = []
    try:
        for index in range(len(env.dataset)):
            spent.clear()
            start = time.perf_counter()
            env.reset(options={"task": index})
            env.step(env.task.gold)
            env.step("submit")
            total = time.perf_counter() - start
            if total > 0.5:
                slow.append((index, total))
                continue
            fast.append({**{k: spent.get(k, 0.0) for k in PHASES},
                         "other": total - sum(spent.values()), "total": total})
    finally:
        env.close()
    out: dict[str, object] = {"episodes": len(fast), "slow_tasks": slow}
    for key in (*PHASES, "other", "total"):
        values = [f[key] for f in fast]
        out[key] = {"median_ms": statistics.median(values) * 1000,
                    "mean_ms": statistics.fmean(values) * 1000}
    return out


def _shell_times(text: str) -> float:
    """The children's user + system seconds from bash's `times`."""
    import re

    values = [int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", text)]
    return values[2] + values[3] if len(values) == 4 else 0.0


def episode_cpu(cores: int, rounds: int = 5) -> dict[str, object]:
    """Mean CPU per gold episode of nl2bash (the tasks under 0.5 s whose gold result is
    cached), split by phase; and, measured apart, the gold commands' own CPU.

    The whole loop and the commands' pass alternate, ``rounds`` times each, and their
    medians are taken: figures taken minutes apart on a shared machine drift by more
    than the overhead's changes."""
    from intercode.envs.bash import BashEnv

    env = BashEnv("nl2bash", backend="bwrap")
    env.warm_up()
    wholes: list[float] = []
    passes: list[float] = []
    try:
        tasks, slow = cached_gold_tasks(env)  # the gold never runs in the loops below
        for _ in range(rounds):
            # the episodes as they are: nothing but theirs in them
            wholes.append(episode_cpu_whole(env, tasks))
            commands = 0.0
            for index in tasks:  # apart: the gold's commands, by the shell's `times` around
                env.reset(options={"task": index})
                before = _shell_times(env.step("times")[0])
                env.step(env.task.gold)
                commands += _shell_times(env.step("times")[0]) - before
                env.step("submit")
            passes.append(1000 * commands / len(tasks))
        per = episode_cpu_split(env, tasks)
    finally:
        env.close()
    phased = sum(v["host_ms"] + v["sandbox_ms"] for v in per.values())
    total = statistics.median(wholes)
    own = statistics.median(passes)
    # (the phases' split of the sandbox's CPU is rough: a process's CPU is counted when it
    # is reaped, so the shell's own shows up at the reset that replaces it)
    out: dict[str, object] = {
        "episodes": rounds * len(tasks), "tasks": len(tasks), "slow_tasks": slow,
        "phases": per, "episode_cpu_ms_phased": phased, "episode_cpu_ms": total,
        "episode_cpu_ms_rounds": wholes, "of_which_gold_commands_ms": own,
        "gold_commands_ms_rounds": passes, "of_which_the_rest_ms": total - own,
        f"ceiling_episodes_per_s_on_{cores}_cores": 1000 * cores / total,
    }
    return out


def gold_replay(workers: int) -> dict[str, float]:
    summary, wall, recs = timed_run(env="bash", dataset="nl2bash", agent="gold",
                                    workers=workers, sandbox=SANDBOX)
    slow = [r for r in recs if r["duration_s"] > 0.5]
    fast_time = sum(r["duration_s"] for r in recs if r["duration_s"] <= 0.5)
    return {"episodes": len(recs), "wall_s": wall, "episodes_per_s": len(recs) / wall,
            "success": summary["success"], "slow_episodes": len(slow),
            "slow_episode_seconds": sum(r["duration_s"] for r in slow),
            "episodes_per_s_without_slow": (len(recs) - len(slow)) / (fast_time / workers),
            "median_episode_ms": statistics.median(r["duration_s"] for r in recs) * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--phases", action="store_true",
                        help="only the per-phase profile of gold episodes")
    parser.add_argument("--cpu", action="store_true",
                        help="only where a gold episode's CPU goes (bwrap)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--sandbox", choices=["bwrap", "docker"], default="bwrap")
    args = parser.parse_args()
    global SANDBOX
    SANDBOX = args.sandbox
    if args.cpu:
        cpu = episode_cpu(args.workers)
        for name, value in cpu.items():
            print(f"{name:40s} {value}")
        if args.json:
            Path(args.json).write_text(json.dumps(cpu, indent=2) + "\n")
        return 0
    if args.phases:
        phases = episode_phases()
        for name, value in phases.items():
            print(f"{name:12s} {value}")
        if args.json:
            Path(args.json).write_text(json.dumps(phases, indent=2) + "\n")
        return 0
    results: dict[str, object] = {"floor_bare_bash": bare_bash_floor(args.runs)}
    results.update(sandbox_and_env(args.runs))
    results["start"] = start_cost(10)
    if SANDBOX == "docker":
        results.update(docker_stream(args.runs))
        results.update(docker_upstream(args.runs))
    if not args.skip_replay:
        results["gold_replay_nl2bash"] = gold_replay(args.workers)
    for name, value in results.items():
        shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in value.items()}
        print(f"{name:24s} {shown}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
