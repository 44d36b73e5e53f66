"""``intercode serve mcp``, driven by the MCP SDK's own client over stdio and streamable
HTTP: whole episodes on every environment, isolation, limits, bad input, dying clients.

The servers are real subprocesses (``python -m intercode serve mcp``); the HTTP ones are
shared by the tests of this module. Sandboxes are counted as the server's ``bwrap``
children.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_server_process import SERVE, HttpServer, alive, bwraps_of
from mcp_server_process import http_server as serve_http

from intercode.benchmarks import get
from intercode.datasets import load_dataset

TOKEN = "s3cret-test-token"
ENVS = {"bash": ("bash-demo", 2), "sql": ("spider-dev", 0), "python": ("mbpp-prompt", 0),
        "ctf": ("intercode-ctf", 0), "swe": ("swe-demo", 0)}
NEEDS_SESSION = "keeps one episode per MCP session"


# -- servers and clients -------------------------------------------------------------------

def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


# the servers these tests start count two sandboxes per session: without the gold cache,
# a session's environment starts the gold's sandbox with the agent's (with it, the gold's
# starts only for a reward the cache does not hold)
NO_GOLD_CACHE = {"INTERCODE_GOLD_CACHE": "0"}


@contextmanager
def http_server(*args: str, token: str | None = TOKEN) -> Iterator[HttpServer]:
    with serve_http(*args, token=token, env=NO_GOLD_CACHE) as s:
        yield s


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    """A bash server with a token, for most tests."""
    with http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "6",
                     "--warm", "2") as s:
        yield s


@pytest.fixture(scope="module")
def tight() -> Iterator[HttpServer]:
    """Two sessions at most, no warm environments, a 3 s idle timeout, no token."""
    with http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "2",
                     "--warm", "0", "--idle-timeout", "3", token=None) as s:
        yield s


@asynccontextmanager
async def http_client(url: str, token: str | None = TOKEN,
                      mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        yield client


def stdio_params(env: str, dataset: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=[*SERVE[1:], "--env", env, "--dataset", dataset],
                                 env=dict(os.environ))


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer; fails on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]
    return data


async def fails(client: Client, tool: str, arguments: Any) -> tuple[str, str]:
    """A tool error's code and its one-line text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    assert isinstance(result.structured_content, dict)
    return result.structured_content["error"], text


# -- episodes ------------------------------------------------------------------------------

async def gold_episode(client: Client, env: str, dataset: str, index: int) -> None:
    benchmark = get(env)
    task = load_dataset(dataset, env)[index]
    started = await call(client, "reset", task=index)
    assert started["task"] == index and started["query"] == task.query
    assert started["tasks"] == len(load_dataset(dataset, env))
    read = await client.read_resource("intercode://task")
    assert read.contents[0].text == task.query  # type: ignore[union-attr]
    action = benchmark.gold_action(task)
    if action.startswith("submit "):  # CTF: the gold is the flag, handed in
        end = await call(client, "submit", answer=action.removeprefix("submit "))
    else:
        ran = await call(client, "execute", code=action)
        assert ran["done"] is False and ran["timed_out"] is False
        if env in ("bash", "sql"):
            score = await call(client, "evaluate")
            assert score["reward"] == 1.0 and score["success"] is True
        submit = benchmark.gold_submit(task)
        answer = submit.removeprefix("submit ") if submit.startswith("submit ") else None
        end = await call(client, "submit", **({"answer": answer} if answer else {}))
    assert end["reward"] == 1.0 and end["success"] is True and end["done"] is True
    code, _ = await fails(client, "execute", {"code": "ls"})
    assert code == "no_episode"


async def wrong_episode(client: Client, env: str, dataset: str, index: int) -> None:
    task = load_dataset(dataset, env)[index]
    await call(client, "reset", task=index)
    if env == "ctf":
        end = await call(client, "submit", answer="picoCTF{not_the_flag}")
        assert end["reward"] < 1.0 and end["done"] is False  # a wrong flag: try again
        return
    if env == "python":
        name = get(env).gold_submit(task).removeprefix("submit ")
        await call(client, "execute", code=f"def {name}(*args, **kwargs):\n    return None")
        end = await call(client, "submit", answer=name)
    else:
        await call(client, "execute", code={"bash": "echo nothing", "sql": "SELECT 1",
                                            "swe": "echo '# no fix' >> textkit/words.py"}[env])
        assert (await call(client, "evaluate"))["reward"] < 1.0
        end = await call(client, "submit")
    assert end["reward"] < 1.0 and end["done"] is True


@pytest.mark.parametrize("env", list(ENVS))
def test_whole_episodes_over_stdio_on_every_environment(env):
    dataset, index = ENVS[env]

    async def main() -> None:
        async with Client(stdio_params(env, dataset)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["reset", "execute", "evaluate", "submit"]
            resources = (await client.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["intercode://task"]
            await gold_episode(client, env, dataset, index)
            await wrong_episode(client, env, dataset, index)
            await gold_episode(client, env, dataset, index)  # the session goes on

    anyio.run(main)


def test_whole_episodes_over_http(server):
    async def main() -> None:
        async with http_client(server.url) as client:
            assert client.protocol_version == "2025-11-25"  # the handshake: a session
            await gold_episode(client, "bash", "bash-demo", 2)
            await wrong_episode(client, "bash", "bash-demo", 2)
            started = await call(client, "reset", seed=7)
            assert 0 <= started["task"] < started["tasks"]

    anyio.run(main)


def test_two_clients_are_isolated_and_a_slow_action_stalls_no_one(server):
    async def main() -> None:
        async with http_client(server.url) as a, http_client(server.url) as b:
            await call(a, "reset", task=0)
            await call(b, "reset", task=0)
            await call(a, "execute", code="echo from-a > /tmp/mark; cd /; export WHO=a")
            seen = await call(b, "execute", code="cat /tmp/mark; pwd; echo who=$WHO")
            assert "from-a" not in seen["output"] and "who=\n" in seen["output"]
            assert (await call(a, "execute", code="cat /tmp/mark"))["output"] == "from-a\n"

            fast: list[float] = []

            async def slow() -> None:
                out = await call(a, "execute", code="sleep 3; echo slept")
                assert out["output"] == "slept\n"

            async def quick() -> None:
                await anyio.sleep(0.5)  # while a sleeps
                for _ in range(3):
                    began = time.monotonic()
                    await call(b, "execute", code="echo quick")
                    fast.append(time.monotonic() - began)

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                tg.start_soon(quick)
            assert max(fast) < 2.0, fast

    anyio.run(main)


def test_bad_input_gets_clear_one_line_errors(server):
    async def main() -> None:
        async with http_client(server.url) as client:
            code, text = await fails(client, "execute", {"code": "ls"})
            assert code == "no_episode" and "call reset first" in text
            with pytest.raises(MCPError, match="call reset first"):
                await client.read_resource("intercode://task")
            code, _ = await fails(client, "evaluate", {})
            assert code == "no_episode"
            with pytest.raises(MCPError, match="unknown tool 'rm_rf'"):
                await client.call_tool("rm_rf", {})
            for tool, arguments, reason in (
                    ("reset", {"task": "0"}, "task must be an integer, got a string"),
                    ("reset", {"task": True}, "task must be an integer, got a boolean"),
                    ("reset", {"task": 1.5}, "task must be an integer, got a number"),
                    ("reset", {"task": -1}, "task must be from 0"),
                    ("reset", {"task": 10_000}, "10000"),
                    ("reset", {"level": 3}, "reset has no argument 'level'"),
                    ("execute", {}, "execute needs the argument code"),
                    ("execute", {"code": ["ls"]}, "code must be a string, got an array"),
                    ("execute", {"code": None}, "needs the argument code"),
                    ("submit", {"answer": "x"}, "submit has no argument 'answer'")):
                code, text = await fails(client, tool, arguments)
                assert code == "bad_request", text
                assert reason in text, text
            # still a working session
            await call(client, "reset", task=1)
            assert (await call(client, "execute", code="echo ok"))["output"] == "ok\n"

    anyio.run(main)


def test_huge_payloads_are_refused_cleanly(server):
    async def main() -> None:
        async with http_client(server.url) as client:
            await call(client, "reset", task=0)
            code, text = await fails(client, "execute", {"code": "x" * ((1 << 20) + 10)})
            assert code == "bad_request" and "at most" in text
            with pytest.raises(MCPError):  # 3 MiB: the HTTP body limit, 413
                await client.call_tool("execute", {"code": "echo " + "y" * (3 << 20)})
            assert (await call(client, "execute", code="echo alive"))["output"] == "alive\n"

    anyio.run(main)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {},
                       "pad": "z" * (3 << 20)}).encode()
    assert post(server.url, body, TOKEN)[0] == 413


def post(url: str, body: bytes, token: str | None) -> tuple[int, str]:
    """A raw POST: its status and body (the server may answer before reading it all)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("POST", parts.path)
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body)),
                   "Accept": "application/json, text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        for key, value in headers.items():
            conn.putheader(key, value)
        conn.endheaders()
        try:
            conn.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the end of the body: the answer is waiting
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_a_missing_or_wrong_token_is_401(server):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}).encode()
    for token in (None, "wrong", TOKEN + "x", ""):
        status, text = post(server.url, init, token)
        assert status == 401 and "bearer token" in text, (token, status, text)
    assert post(server.url, init, TOKEN)[0] == 200

    async def main() -> None:
        with pytest.raises(BaseException) as caught:  # the SDK wraps it in exception groups
            async with http_client(server.url, token="wrong") as client:
                await client.list_tools()
        errors = leaves(caught.value)
        assert any(isinstance(e, MCPError) and "bearer token" in e.message for e in errors), \
            errors

    anyio.run(main)


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def test_a_sessionless_client_is_told_to_use_the_handshake(server):
    async def main() -> None:
        async with http_client(server.url, mode="2026-07-28") as client:
            code, text = await fails(client, "reset", {})
            assert NEEDS_SESSION in text and code == "bad_request"

    anyio.run(main)


# -- limits and dying clients (the tight server) -------------------------------------------

def test_more_clients_than_max_sessions_are_busy_and_a_leaving_client_frees_its_slot(tight):
    async def main() -> None:
        async with http_client(tight.url, token=None) as a:
            await call(a, "reset", task=0)
            async with http_client(tight.url, token=None) as b, \
                    http_client(tight.url, token=None) as c:
                await call(b, "reset", task=0)
                code, text = await fails(c, "reset", {"task": 0})
                assert code == "busy" and "all 2 sessions are in use" in text
                assert len(tight.bwraps()) == 4  # two sessions, two sandboxes each
                await call(b, "execute", code="true")  # b is not idle when it leaves
            # b left (DELETE): its sandboxes are closed at once (well before the idle
            # timeout, 3 s), and c's slot is free
            wait_for(lambda: len(tight.bwraps()) == 2, 1.5, "b's sandboxes closed")
            async with http_client(tight.url, token=None) as c:
                await call(c, "reset", task=0)
            await call(a, "execute", code="true")
        wait_for(lambda: not tight.bwraps(), 5, "every sandbox closed")

    anyio.run(main)


def test_an_idle_session_expires_with_a_clear_error(tight):
    async def main() -> None:
        async with http_client(tight.url, token=None) as client:
            await call(client, "reset", task=0)
            wait_for(lambda: not tight.bwraps(), 10, "the idle session's sandboxes closed")
            code, text = await fails(client, "execute", {"code": "ls"})
            assert code == "unknown_session" and "idle" in text and "call reset" in text
            await call(client, "reset", task=0)
            assert (await call(client, "execute", code="echo back"))["output"] == "back\n"

    anyio.run(main)
    wait_for(lambda: not tight.bwraps(), 5, "every sandbox closed")


KILLED_CLIENT = textwrap.dedent("""
    import os, sys, anyio, httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    async def main(target):
        if target.startswith("http"):
            server = streamable_http_client(target, http_client=httpx2.AsyncClient(
                timeout=httpx2.Timeout(30, read=60)))
        else:
            server = StdioServerParameters(command=sys.executable, args=[
                "-m", "intercode", "serve", "mcp", "--env", "bash", "--dataset", "bash-demo"],
                env=dict(os.environ))  # (the SDK passes only a few variables by default)
        async with Client(server) as client:
            await client.call_tool("reset", {"task": 0})
            print("started", flush=True)
            await client.call_tool("execute", {"code": "sleep 5"})
            print("finished", flush=True)

    anyio.run(main, sys.argv[1])
""")


def start_doomed_client(target: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, target],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, **NO_GOLD_CACHE})
    assert proc.stdout is not None
    assert proc.stdout.readline() == "started\n"
    time.sleep(1.0)  # `sleep 5` runs in the sandbox now
    return proc


def test_a_client_killed_mid_action_over_http_leaves_no_sandbox_and_others_go_on(tight):
    wait_for(lambda: not tight.bwraps(), 10, "no sandbox before")
    doomed = start_doomed_client(tight.url)
    mine = tight.bwraps()
    assert len(mine) == 2
    doomed.kill()
    doomed.wait()

    async def main() -> None:
        async with http_client(tight.url, token=None) as other:  # the server goes on
            await gold_episode(other, "bash", "bash-demo", 2)

    anyio.run(main)
    # freed when its action ends and the session has been idle for --idle-timeout
    wait_for(lambda: not (mine & tight.bwraps()), 20, "the killed client's sandboxes closed")
    wait_for(lambda: not tight.bwraps(), 5, "every sandbox closed")


@pytest.fixture(scope="module")
def patient() -> Iterator[HttpServer]:
    """Sessions never idle out (600 s) but a vanished client's go after 1 s."""
    with http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "2",
                     "--warm", "0", "--idle-timeout", "600", "--reconnect-grace", "1",
                     token=None) as s:
        yield s


def test_a_killed_http_client_is_freed_soon_after_its_action_not_at_the_idle_timeout(patient):
    wait_for(lambda: not patient.bwraps(), 10, "no sandbox before")
    doomed = start_doomed_client(patient.url)
    mine = patient.bwraps()
    assert len(mine) == 2
    doomed.kill()  # no DELETE: its event stream closes with it
    doomed.wait()
    # its `sleep 5` ends, then 1 s without the stream coming back: freed (the idle
    # timeout, 600 s, cannot be what frees it within this test)
    wait_for(lambda: not (mine & patient.bwraps()), 30, "the killed client's sandboxes closed")
    assert any("left without ending it" in line for line in patient.log), patient.log


def test_a_live_client_that_thinks_longer_than_the_grace_keeps_its_episode(patient):
    async def main() -> None:
        async with http_client(patient.url, token=None) as client:
            await call(client, "reset", task=0)
            await call(client, "execute", code="cd /tmp && X=kept")
            await anyio.sleep(3)  # 3x the grace, its event stream open all along
            ran = await call(client, "execute", code="echo $X $PWD")
            assert ran["output"].split() == ["kept", "/tmp"]

    anyio.run(main)


def test_a_client_without_an_event_stream_is_left_to_the_idle_timeout(patient):
    """The grace only follows a stream that closed: a client that never opened one
    (the protocol allows it) keeps its session between calls."""
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    with httpx2.Client(headers=headers, timeout=30) as web:
        hello = web.post(patient.url, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}})
        assert hello.status_code == 200, hello.text
        sid = hello.headers["mcp-session-id"]
        web.headers.update({"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
        web.post(patient.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

        def tool(i: int, name: str, **arguments: Any) -> dict[str, Any]:
            answer = web.post(patient.url, json={"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                         "params": {"name": name, "arguments": arguments}})
            result = answer.json()["result"]
            assert not result.get("isError"), result
            return dict(result["structuredContent"])

        tool(2, "reset", task=0)
        tool(3, "execute", code="Y=still")
        time.sleep(3)
        assert tool(4, "execute", code="echo $Y")["output"].strip() == "still"
        assert web.delete(patient.url).status_code < 300
    wait_for(lambda: not patient.bwraps(), 10, "its sandboxes closed on DELETE")


def test_sigterm_mid_action_answers_the_call_and_stops_quietly():
    """SIGTERM while a client's action runs: the call is answered with a one-line tool
    error, and the server stops without cancelling a request (no "Cancel ... running
    task(s)" line, no traceback; the helper checks exit status 0 and the traceback)."""
    with http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "2",
                     "--warm", "0", token=None) as s:

        async def main() -> tuple[str, str]:
            async with http_client(s.url, token=None) as client, anyio.create_task_group() as tg:
                await call(client, "reset", task=0)

                async def stop() -> None:
                    wait_for(lambda: len(s.bwraps()) == 2, 10, "the sandboxes running")
                    await anyio.sleep(1.0)  # `sleep 30` runs in the sandbox now
                    s.proc.send_signal(signal.SIGTERM)

                tg.start_soon(stop)
                with anyio.fail_after(20):  # the action itself would take 30 s
                    return await fails(client, "execute", {"code": "sleep 30"})

        code, text = anyio.run(main)
        assert code == "infrastructure" and "shutting down" in text, text
        s.proc.wait(20)
        log = "".join(s.log)
        assert not any("Cancel" in line or "ERROR" in line for line in s.log), log


def test_a_stdio_client_killed_mid_action_takes_its_server_and_sandboxes_along():
    doomed = start_doomed_client("stdio")
    servers = [int(p) for p in subprocess.run(["pgrep", "-P", str(doomed.pid)],
                                              capture_output=True, text=True).stdout.split()]
    assert len(servers) == 1
    boxes = bwraps_of(servers[0])
    assert len(boxes) == 2
    doomed.kill()
    doomed.wait()
    wait_for(lambda: not alive(servers[0]), 20, "the server exited")
    wait_for(lambda: not any(alive(p) for p in boxes), 5, "its sandboxes died")


# -- the command line ----------------------------------------------------------------------

def test_without_the_mcp_package_the_error_is_one_line():
    code = ("import sys; sys.modules['mcp'] = None; from intercode.cli import main; "
            "sys.exit(main(['serve', 'mcp', '--env', 'bash']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("intercode: error: intercode serve mcp needs the mcp package: "
                           "pip install 'intercode[mcp]'\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["--port", "9000"], "--port applies only to --transport http"),
    (["--token-env", "X"], "--token-env applies only to --transport http"),
    (["--transport", "http", "--token-env", "INTERCODE_NO_SUCH_VAR"], "not set or empty"),
    (["--transport", "http", "--host", "0.0.0.0"], "not a loopback address"),
    (["--allowed-host", "env.example.org"], "--allowed-host applies only to --transport http"),
    (["--transport", "http", "--port", "0", "--allowed-host", "http://x.example"],
     "bad --allowed-host"),
    (["--backend", "mysql"], "--backend applies only to the sql environment"),
])
def test_the_command_line_refuses_what_cannot_work(argv, message, capsys):
    from intercode.cli import main

    assert main(["serve", "mcp", "--env", "bash", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
