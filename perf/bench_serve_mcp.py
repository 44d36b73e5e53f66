"""Load on ``intercode serve mcp`` over streamable HTTP (loopback), with the in-process floor.

Run by hand (not a test; needs the mcp package):
    python perf/bench_serve_mcp.py [--clients 8] [--episodes 10] [--hold 64] [--json out.json]

One server (bash, bash-demo) in a subprocess on a free loopback port, then:
  inproc     Session.execute of the tasks' gold actions in this process (p50/p99): the floor
  load       --clients MCP clients at once, each --episodes gold episodes (reset, execute
             the gold, evaluate, submit): p50/p99 of each tool call, episodes per second,
             the server process's CPU time per call (its sandboxes' not included)
  rss        the server's VmRSS (and its sandboxes', summed) with k live sessions
             (k clients that have reset), and the growth per live session
  hold       how many live sessions the server holds at once, trying --hold of them
  stack      the server's guarded ASGI app driven in this process (no sockets): ping,
             tools/call with nothing behind it (also without the server's tools/call
             fast path, and on the SDK's sessionless 2026-07-28 path), with a thread hop,
             the real execute, execute run inline on the event loop (what waiting for the
             sandbox there, with no worker thread, would cost); and execute inline and in
             a worker thread (p50/p99, CPU per call)
  layers     one client's `execute("true")` (p50/p99): in process (back to back, and
             paced: each call after a pause of PACE_S, about one call over HTTP, as an MCP
             client's calls come), over HTTP with a plain synchronous client (httpx2; the
             server's side), with a lean one (the standard library's http.client), with
             the SDK's client; a bare JSON-over-HTTP endpoint (starlette + uvicorn) with both
             plain clients (the HTTP floor). --repeat K runs it K times, alternating, and
             reports the median of each layer's p50s. The overhead is taken against the
             back-to-back step (the issue's measure) and against the paced one: a step costs
             more after a pause (the sandbox's shell has gone idle), in process too.
Everything is bounded: each call has a time-out, the server is killed at the end.
--phases picks phases (e.g. --phases layers for the before/after of a change).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from intercode.datasets import load_dataset

DATASET = "bash-demo"
CALL_TIMEOUT = 60.0
PACE_S = 0.001  # the pause before each paced in-process step


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(samples), 2), "p99_ms": round(pct(samples, 0.99), 2),
            "n": len(samples)}


# -- the server ----------------------------------------------------------------------------

def start_server(max_sessions: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "intercode", "serve", "mcp", "--env", "bash", "--dataset",
         DATASET, "--transport", "http", "--port", "0", "--max-sessions", str(max_sessions),
         "--warm", "4"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(r"on (http://\S+)", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
            elif not found:
                sys.stderr.write(line)
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(120)
    if not found:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, found[0]


def rss_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def sandbox_rss_kib(pid: int) -> int:
    total = 0
    for child in descendants(pid):
        try:
            total += rss_kib(child)
        except OSError:
            pass
    return total


# -- clients -------------------------------------------------------------------------------

@asynccontextmanager
async def client(url: str) -> AsyncIterator[Client]:
    async with (httpx2.AsyncClient(timeout=httpx2.Timeout(CALL_TIMEOUT, read=CALL_TIMEOUT))
                as http, Client(streamable_http_client(url, http_client=http)) as c):
        yield c


async def timed_call(c: Client, times: dict[str, list[float]], tool: str,
                     **arguments: Any) -> dict[str, Any]:
    start = time.perf_counter()
    with anyio.fail_after(CALL_TIMEOUT):
        result = await c.call_tool(tool, arguments)
    times.setdefault(tool, []).append((time.perf_counter() - start) * 1000)
    if result.is_error:
        raise RuntimeError(f"{tool}: {result.content}")
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def load(url: str, clients: int, episodes: int) -> dict[str, Any]:
    tasks = load_dataset(DATASET, "bash")
    times: dict[str, list[float]] = {}
    rewards: list[float] = []

    async def one(k: int) -> None:
        async with client(url) as c:
            for e in range(episodes):
                task = tasks[(k + e) % len(tasks)]
                await timed_call(c, times, "reset", task=task.index)
                await timed_call(c, times, "execute", code=task.gold)
                await timed_call(c, times, "evaluate")
                rewards.append((await timed_call(c, times, "submit"))["reward"])

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for k in range(clients):
            tg.start_soon(one, k)
    wall = time.perf_counter() - start
    return {"clients": clients, "episodes": clients * episodes, "wall_s": round(wall, 2),
            "episodes_per_s": round(clients * episodes / wall, 2),
            "gold_rewards_all_1": all(r == 1.0 for r in rewards),
            "calls": {tool: summary(s) for tool, s in times.items()}}


async def rss_and_hold(proc: subprocess.Popen[str], url: str, hold: int) -> dict[str, Any]:
    steps = sorted({k for k in (0, 1, 2, 4, 8, 16, 32, 64, hold) if k <= hold})
    points = []
    held = 0
    refused = None
    async with AsyncExitStack() as stack:
        for k in steps:
            while held < k:
                c = await stack.enter_async_context(client(url))
                result = await c.call_tool("reset", {"task": held % 4})
                if result.is_error:
                    refused = result.content[0].text  # type: ignore[union-attr]
                    break
                held += 1
            await anyio.sleep(0.5)
            points.append({"live": held, "server_rss_mib": round(rss_kib(proc.pid) / 1024, 1),
                           "sandboxes_rss_mib": round(sandbox_rss_kib(proc.pid) / 1024, 1)})
            if refused:
                break
    first, last = points[0], points[-1]
    span = max(1, last["live"] - first["live"])
    return {"points": points, "held": held, "tried": hold, "refused": refused,
            "server_rss_per_session_mib": round(
                (last["server_rss_mib"] - first["server_rss_mib"]) / span, 2),
            "sandboxes_rss_per_session_mib": round(
                (last["sandboxes_rss_mib"] - first["sandboxes_rss_mib"]) / span, 2)}


# -- where a step's time goes ----------------------------------------------------------------

FLOOR_APP = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
async def answer(request):
    body = await request.json()
    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {}})
print("ready", flush=True)
uvicorn.run(Starlette(routes=[Route("/mcp", answer, methods=["POST"])]), host="127.0.0.1",
            port=int(sys.argv[1]), log_config=None, access_log=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def raw_rpc(url: str, calls: int, body: dict[str, Any],
            session: bool = True) -> list[float]:
    """Latencies of one JSON-RPC request repeated over one keep-alive connection, with a
    plain synchronous HTTP client (no MCP SDK): what the server side costs."""
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    samples = []
    with httpx2.Client(headers=headers, timeout=CALL_TIMEOUT) as web:
        if session:
            hello = web.post(url, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}})
            web.headers.update({"mcp-session-id": hello.headers["mcp-session-id"],
                                "mcp-protocol-version": "2025-06-18"})
            web.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            web.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "reset", "arguments": {"task": 0}}})
        for i in range(calls):
            began = time.perf_counter()
            answer = web.post(url, json={**body, "id": i + 2})
            samples.append((time.perf_counter() - began) * 1000)
            if answer.status_code != 200 or "error" in answer.json():
                raise RuntimeError(f"{body['method']}: {answer.text[:200]}")
        if session:
            web.delete(url)
    return samples


def lean_rpc(url: str, calls: int, body: dict[str, Any], session: bool = True) -> list[float]:
    """Like :func:`raw_rpc` with the standard library's ``http.client`` (one keep-alive
    connection, no pool, no hooks): the least a client can cost."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                      timeout=CALL_TIMEOUT)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}

    def post(payload: dict[str, Any]) -> tuple[http.client.HTTPResponse, bytes]:
        conn.request("POST", parts.path, json.dumps(payload).encode(), headers)
        answer = conn.getresponse()
        return answer, answer.read()

    samples = []
    try:
        if session:
            hello, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}}})
            headers.update({"mcp-session-id": hello.headers["mcp-session-id"],
                            "mcp-protocol-version": "2025-06-18"})
            post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "reset", "arguments": {"task": 0}}})
        for i in range(calls):
            began = time.perf_counter()
            answer, data = post({**body, "id": i + 2})
            samples.append((time.perf_counter() - began) * 1000)
            if answer.status != 200 or b'"error"' in data:
                raise RuntimeError(f"{body['method']}: {data[:200]!r}")
        if session:
            conn.request("DELETE", parts.path, headers=headers)
            conn.getresponse().read()
    finally:
        conn.close()
    return samples


async def sdk_calls(url: str, calls: int) -> list[float]:
    samples = []
    async with client(url) as c:
        await c.call_tool("reset", {"task": 0})
        for _ in range(calls):
            began = time.perf_counter()
            await c.call_tool("execute", {"code": "true"})
            samples.append((time.perf_counter() - began) * 1000)
    return samples


EXECUTE = {"jsonrpc": "2.0", "method": "tools/call",
           "params": {"name": "execute", "arguments": {"code": "true"}}}
PING = {"jsonrpc": "2.0", "method": "ping"}


def inproc_true(calls: int, pause: float = 0.0) -> list[float]:
    """``Session.execute("true")`` in this process: the floor of an MCP step (each call
    after ``pause`` seconds of sleep, if given)."""
    from intercode.integrations.serve.sessions import ServeConfig, SessionPool

    pool = SessionPool(ServeConfig(env="bash", dataset=DATASET, max_sessions=1, warm=1))
    try:
        session = pool.open()
        session.reset(task=0)
        samples = []
        for _ in range(calls):
            if pause:
                time.sleep(pause)
            began = time.perf_counter()
            session.execute("true")
            samples.append((time.perf_counter() - began) * 1000)
    finally:
        pool.shutdown()
    return samples


def http_floor(calls: int) -> dict[str, list[float]]:
    """A bare JSON endpoint (starlette + uvicorn, uvloop and httptools when installed, as
    the server uses them) with both plain clients."""
    port = free_port()
    floor_proc = subprocess.Popen([sys.executable, "-c", FLOOR_APP, str(port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    floor_url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert floor_proc.stdout is not None
        floor_proc.stdout.readline()
        for _ in range(100):  # until it listens
            try:
                raw_rpc(floor_url, 1, PING, session=False)
                break
            except httpx2.HTTPError:
                time.sleep(0.1)
        return {"http_floor": raw_rpc(floor_url, calls, PING, session=False),
                "http_floor_lean": lean_rpc(floor_url, calls, PING, session=False)}
    finally:
        floor_proc.kill()
        floor_proc.wait()


def layers_once(url: str, calls: int) -> dict[str, list[float]]:
    out = {"inproc_execute": inproc_true(calls),
           "inproc_execute_paced": inproc_true(calls, PACE_S), **http_floor(calls)}
    out["raw_ping"] = raw_rpc(url, calls, PING)
    out["raw_execute"] = raw_rpc(url, calls, EXECUTE)
    out["lean_execute"] = lean_rpc(url, calls, EXECUTE)
    out["sdk_execute"] = anyio.run(sdk_calls, url, calls)
    return out


def layers(url: str, calls: int, repeat: int = 1) -> dict[str, Any]:
    """`execute("true")` in process, over HTTP with the plain clients and with the SDK's
    client; a bare HTTP JSON endpoint with the plain clients (the HTTP floor). With
    ``repeat`` > 1: every layer ``repeat`` times, and the median of its p50s."""
    rounds = [layers_once(url, calls) for _ in range(repeat)]
    out: dict[str, Any] = {}
    for name in rounds[0]:
        p50s = [statistics.median(r[name]) for r in rounds]
        everything = [x for r in rounds for x in r[name]]
        out[name] = {**summary(everything), "p50_ms": round(statistics.median(p50s), 2),
                     "p50_ms_each_round": [round(x, 2) for x in p50s]}
    base = out["inproc_execute"]["p50_ms"]
    out["overhead_p50_ms"] = {
        "server_with_plain_client": round(out["raw_execute"]["p50_ms"] - base, 2),
        "of_which_plain_http": out["http_floor"]["p50_ms"],
        "server_with_lean_client": round(out["lean_execute"]["p50_ms"] - base, 2),
        "of_which_lean_http": out["http_floor_lean"]["p50_ms"],
        "sdk_client": round(out["sdk_execute"]["p50_ms"] - base, 2),
        # against the step paced as MCP calls come (see the module's docstring)
        "server_with_lean_client_vs_paced_step": round(
            out["lean_execute"]["p50_ms"] - out["inproc_execute_paced"]["p50_ms"], 2)}
    return out


# -- the server's stack, without sockets ------------------------------------------------------

class _Asgi:
    """The server's guarded ASGI app driven in this process (no sockets, no HTTP parsing):
    what each layer of the server costs a request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: dict[str, str] = {}
        self.next_id = 0

    async def post(self, body: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes]:
        raw = json.dumps(body).encode()
        headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                   (b"accept", b"application/json, text/event-stream"),
                   (b"content-length", str(len(raw)).encode())]
        headers += [(k.encode(), v.encode()) for k, v in self.headers.items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
                 "query_string": b"", "root_path": "", "headers": headers,
                 "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000), "state": {}}
        sent: list[dict[str, Any]] = []
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if given:
                await anyio.sleep_forever()
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return (sent[0]["status"], dict(sent[0]["headers"]),
                b"".join(m.get("body", b"") for m in sent[1:]))

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        self.next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        status, _, payload = await self.post(body)
        if status != 200 or b'"error"' in payload or b'"isError":true' in payload:
            raise RuntimeError(f"{method}: {status} {payload[:200]!r}")
        return payload


async def _stack(calls: int) -> dict[str, Any]:
    from intercode.integrations.serve.mcp_http import build_app
    from intercode.integrations.serve.mcp_server import McpService
    from intercode.integrations.serve.sessions import ServeConfig

    service = McpService(ServeConfig(env="bash", dataset=DATASET, max_sessions=2, warm=1),
                         "http")
    app = build_app(service, "127.0.0.1", None)
    asgi = _Asgi(app)
    to_app: Any
    from_app: Any
    to_app, app_in = anyio.create_memory_object_stream[dict[str, Any]](4)
    app_out, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)
    results: dict[str, Any] = {}

    async def timed(name: str, call: Any) -> None:
        for _ in range(min(50, calls)):
            await call()
        samples = []
        cpu = time.process_time()
        for _ in range(calls):
            began = time.perf_counter()
            await call()
            samples.append((time.perf_counter() - began) * 1000)
        results[name] = {**summary(samples), "cpu_ms": round(
            (time.process_time() - cpu) * 1000 / calls, 3)}

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                          app_in.receive, app_out.send)
            await to_app.send({"type": "lifespan.startup"})
            await from_app.receive()
            await service.start()
            _, headers, _ = await asgi.post({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}})
            sid = headers[b"mcp-session-id"].decode()
            asgi.headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
            await asgi.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await asgi.rpc("tools/call", {"name": "reset", "arguments": {"task": 0}})
            session = service.bound[sid]
            execute = {"name": "execute", "arguments": {"code": "true"}}

            async def inline() -> None:
                session.execute("true")

            async def hop() -> None:
                await service.run(session.execute, "true")

            async def hop_nothing() -> None:
                await service.run(int)

            async def ping() -> None:
                await asgi.rpc("ping")

            async def call() -> None:
                await asgi.rpc("tools/call", execute)

            await timed("execute_inline", inline)
            await timed("thread_hop_nothing", hop_nothing)
            await timed("execute_in_worker_thread", hop)
            await timed("asgi_ping", ping)
            real = service.call

            async def nothing(key: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
                return {"output": "", "exit_code": 0}

            async def nothing_in_thread(key: str, tool: str,
                                        args: dict[str, Any]) -> dict[str, Any]:
                return await service.run(dict)

            service.call = nothing  # type: ignore[method-assign]
            await timed("asgi_tools_call_nothing", call)
            fast = getattr(app, "fast", None)
            if fast is not None:  # the same without the tools/call fast path (the SDK's)
                fast.enabled, was = False, fast.enabled
                sdk = _Asgi(app)
                _, headers, _ = await sdk.post({
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "1"}}})
                fast.enabled = was
                sdk.headers = {"mcp-session-id": headers[b"mcp-session-id"].decode(),
                               "mcp-protocol-version": "2025-06-18"}
                await sdk.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

                async def sdk_call() -> None:
                    await sdk.rpc("tools/call", execute)

                await timed("asgi_tools_call_nothing_sdk_path", sdk_call)
            # the SDK's sessionless 2026-07-28 path (which this server refuses, having no
            # session for an episode): the same call with nothing behind it
            modern = _Asgi(app)
            version = "2026-07-28"
            modern.headers = {"mcp-protocol-version": version, "mcp-method": "tools/call",
                              "mcp-name": "execute"}
            envelope = {"io.modelcontextprotocol/protocolVersion": version,
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
            key = service.key
            service.key = lambda ctx: sid  # type: ignore[method-assign]

            async def modern_call() -> None:
                await modern.rpc("tools/call", {**execute, "_meta": envelope})

            await timed("asgi_tools_call_nothing_sessionless_2026", modern_call)
            service.key = key  # type: ignore[method-assign]
            service.call = nothing_in_thread  # type: ignore[method-assign]
            await timed("asgi_tools_call_thread_hop", call)
            service.call = real  # type: ignore[method-assign]
            await timed("asgi_tools_call_execute", call)

            async def execute_inline(key: str, tool: str,
                                     args: dict[str, Any]) -> dict[str, Any]:
                return service.bound[key].execute(args["code"])

            # what a step waited for on the event loop (no worker thread) would cost: the
            # step inline, which blocks the loop for its whole length (never done by the
            # server: a long action would stall every other session)
            service.call = execute_inline  # type: ignore[method-assign]
            await timed("asgi_tools_call_execute_inline", call)
            service.call = real  # type: ignore[method-assign]
            tg.cancel_scope.cancel()
    finally:
        service.shutdown()
    return results


def stack(calls: int) -> dict[str, Any]:
    """Each layer of the server in this process, no sockets: ``execute("true")`` inline
    and in a worker thread, a thread hop alone, then through the guarded ASGI app: ping,
    tools/call with nothing behind it, with a thread hop only, and the real execute."""
    try:  # the server's event loop (uvloop when installed)
        from intercode.integrations.serve.mcp_http import loop_options
    except ImportError:  # an older server: asyncio's
        return anyio.run(_stack, calls)
    return anyio.run(_stack, calls, backend_options=loop_options())


# -- the floor -----------------------------------------------------------------------------

def inproc(calls: int) -> dict[str, Any]:
    from intercode.integrations.serve.sessions import ServeConfig, SessionPool

    tasks = load_dataset(DATASET, "bash")
    pool = SessionPool(ServeConfig(env="bash", dataset=DATASET, max_sessions=1, warm=1))
    try:
        session = pool.open()
        samples = []
        start = time.perf_counter()
        for i in range(calls):
            task = tasks[i % len(tasks)]
            session.reset(task=task.index)
            began = time.perf_counter()
            session.execute(task.gold)
            samples.append((time.perf_counter() - began) * 1000)
            session.evaluate()
            session.submit()
        wall = time.perf_counter() - start
    finally:
        pool.shutdown()
    return {"execute": summary(samples), "episodes_per_s_one_thread": round(calls / wall, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--hold", type=int, default=64)
    parser.add_argument("--inproc-calls", type=int, default=200)
    parser.add_argument("--layer-calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the layers phase")
    parser.add_argument("--phases", default="stack,inproc,layers,load,rss_hold",
                        help="comma-separated: stack, inproc, layers, load, rss_hold")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    phases = set(args.phases.split(","))
    os.environ.setdefault("INTERCODE_DATA_MIRROR", str(
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "intercode"))

    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(),
                                          "load_avg": os.getloadavg()}}
    report["server_src"] = str(Path(__import__("intercode").__file__).parent)
    if "stack" in phases:
        report["stack"] = stack(args.layer_calls)
    if "inproc" in phases:
        report["inproc"] = inproc(args.inproc_calls)
    proc, url = start_server(max(args.hold, args.clients))
    try:
        if "layers" in phases:
            cpu = cpu_s(proc.pid)
            report["layers"] = layers(url, args.layer_calls, args.repeat)
            # the server handles four of the layers: raw ping, raw, lean and SDK execute
            report["layers"]["server_cpu_ms_per_call"] = round(
                (cpu_s(proc.pid) - cpu) * 1000 / (4 * args.layer_calls * args.repeat), 3)
        if "load" in phases:
            cpu = cpu_s(proc.pid)
            report["load"] = anyio.run(load, url, args.clients, args.episodes)
            calls = sum(c["n"] for c in report["load"]["calls"].values())
            report["load"]["server_cpu_ms_per_call"] = round(
                (cpu_s(proc.pid) - cpu) * 1000 / calls, 2)
        if "rss_hold" in phases:
            report["rss_hold"] = anyio.run(rss_and_hold, proc, url, args.hold)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    report["machine"]["load_avg_after"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
