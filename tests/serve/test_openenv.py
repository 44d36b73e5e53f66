"""``intercode serve openenv`` driven by OpenEnv's own client machinery (IntercodeEnvClient).

The servers run in subprocesses on free ports, one per environment, started together
once for the module; the bash one wants a bearer token, keeps no warm environments (so a
closed session's sandboxes are gone, which the SIGKILL test counts) and caps sessions at 3.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.integrations.serve.openenv import (
    IntercodeAction,
    IntercodeEnvClient,
    ServerError,
)
from intercode.integrations.serve.sessions import MAX_CODE_CHARS

TOKEN = "t0ken-for-the-tests"
TOKEN_VAR = "INTERCODE_TEST_OPENENV_TOKEN"
START_DEADLINE = 90.0

# env -> (dataset, extra server arguments, a task with a gold)
SERVERS = {
    "bash": ("bash-demo", ["--max-sessions", "3", "--warm", "0", "--token-env", TOKEN_VAR], 2),
    "sql": ("spider-dev", ["--max-sessions", "2"], 0),
    "python": ("mbpp", ["--max-sessions", "2"], 0),
    "ctf": ("intercode-ctf", ["--max-sessions", "2", "--idle-timeout", "3"], 0),
    "swe": ("swe-demo", ["--max-sessions", "2"], 0),
}
if importlib.util.find_spec("swebench") is None:  # an environment with the openenv extra
    del SERVERS["swe"]                              # alone scores no swe task
WRONG = {"bash": "echo nothing useful", "sql": "SELECT 1", "python": "unrelated = 1",
         "swe": "echo '# no fix' >> textkit/words.py"}


@dataclass
class Server:
    env: str
    dataset: str
    proc: subprocess.Popen[str]
    url: str
    stderr: Path
    token: str | None

    def client(self, token: str | None = "default", **kwargs: object) -> IntercodeEnvClient:
        tok = self.token if token == "default" else token
        return IntercodeEnvClient(base_url=self.url, token=tok, message_timeout_s=60, **kwargs)


def _start(env: str, tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    dataset, extra, _ = SERVERS[env]
    stderr = tmp / f"{env}.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "intercode", "serve", "openenv", "--env", env, "--dataset",
         dataset, "--port", "0", *extra],
        stdout=subprocess.PIPE, stderr=stderr.open("w"), text=True,
        env={**os.environ, TOKEN_VAR: TOKEN})
    return proc, stderr


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Server]]:
    with tempfile.TemporaryDirectory() as tmp:
        started = {env: _start(env, Path(tmp)) for env in SERVERS}
        out: dict[str, Server] = {}
        deadline = time.monotonic() + START_DEADLINE
        try:
            for env, (proc, stderr) in started.items():
                assert proc.stdout is not None
                ready, _, _ = select.select([proc.stdout], [], [],
                                            max(0.0, deadline - time.monotonic()))
                line = proc.stdout.readline() if ready else ""
                if "http://" not in line:
                    pytest.fail(f"the {env} server did not start: {line!r} "
                                f"{stderr.read_text()[-2000:]}")
                url = line.split("http://", 1)[1].split()[0]
                out[env] = Server(env, SERVERS[env][0], proc, f"http://{url}", stderr,
                                  TOKEN if env == "bash" else None)
            yield out
        finally:
            leftovers = {env: bwraps(proc.pid) for env, (proc, _) in started.items()}
            for proc, _ in started.values():
                proc.send_signal(signal.SIGTERM)
            for proc, _ in started.values():
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for env, pids in leftovers.items():  # a server that ends leaves no sandbox behind
            wait_for(lambda pids=pids: not any(map(running_bwrap, pids)), 10,
                     f"the {env} server's sandboxes end with it")


# -- processes ------------------------------------------------------------------------------


def _stat(pid: int | str) -> tuple[str, str, int] | None:
    """(command name, state, parent) of a process, None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
    return stat[stat.index("(") + 1:stat.rindex(")")], state, int(ppid)


def running_bwrap(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] == "bwrap" and stat[1] != "Z"


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, command name) of every live (not zombie) process below ``root``."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        stat = _stat(entry) if entry.isdigit() else None
        if stat is not None and stat[1] != "Z":
            children.setdefault(stat[2], []).append((int(entry), stat[0]))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child[0])
    return found


def bwraps(root: int) -> list[int]:
    return [pid for pid, comm in descendants(root) if comm == "bwrap"]


def wait_for(predicate, deadline: float, what: str) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"not within {deadline} s: {what}")
        time.sleep(0.1)


# -- raw HTTP and WebSocket -----------------------------------------------------------------


def http(server: Server, method: str, path: str, body: bytes | None = None,
         token: str | None = "default") -> tuple[int, dict]:
    tok = server.token if token == "default" else token
    headers = {"Content-Type": "application/json"}
    if tok:
        headers["Authorization"] = f"Bearer {tok}"
    request = urllib.request.Request(server.url + path, data=body, method=method,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def raw_http(server: Server, headers: str, body: bytes) -> bytes:
    """The answer to a hand-made POST /step (its head, and what follows)."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall((f"POST /step HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
                      f"{server.token}\r\nContent-Type: application/json\r\n{headers}\r\n")
                     .encode())
        try:
            sock.sendall(body)
        except OSError:  # the server answered and closed before the end of the body
            pass
        answer = b""
        while b"}" not in answer:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            answer += data
        return answer


def raw_ws(server: Server, token: str | None = "default"):
    from websockets.sync.client import connect

    tok = server.token if token == "default" else token
    headers = {"Authorization": f"Bearer {tok}"} if tok else None
    return connect(server.url.replace("http://", "ws://") + "/ws", additional_headers=headers,
                   max_size=None, proxy=None)


def ask(ws, message: str | bytes | dict) -> dict:
    ws.send(message if isinstance(message, str | bytes) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


# -- whole episodes -------------------------------------------------------------------------


@pytest.mark.parametrize("env", list(SERVERS))
def test_a_gold_episode_scores_one_and_a_wrong_one_less(servers, env):
    server = servers[env]
    benchmark = get(env)
    index = SERVERS[env][2]
    task = load_dataset(server.dataset, env)[index]
    with server.client().sync() as client:
        first = client.reset(task=index)
        obs = first.observation
        assert (obs.task, obs.query, first.done, first.reward) == (index, task.query, False,
                                                                   None)
        result = client.step(IntercodeAction(code=benchmark.gold_action(task)))
        if not result.done:
            assert result.reward == 0.0 and result.observation.metadata["task"] == index
            result = client.step(IntercodeAction(code=benchmark.gold_submit(task)))
        assert result.done and result.reward == 1.0
        assert result.observation.info["success"] is True
        assert result.observation.metadata["submitted"] is True
        assert "parts" in result.observation.metadata
        assert client.state().done and client.state().task == index

        client.reset(task=index)
        if env == "ctf":  # a wrong flag does not end the episode; skip does, with 0
            wrong = client.step(f"submit picoCTF{{{'not_the_flag'}}}")
            assert (wrong.reward, wrong.done, wrong.observation.info["success"]) == (0.0,
                                                                                   False,
                                                                                   False)
            end = client.step("skip")
            assert (end.reward, end.done, end.observation.info["skipped"]) == (0.0, True, True)
            return
        ran = client.step(WRONG[env])
        assert not ran.done and ran.reward == 0.0
        assert isinstance(ran.observation.exit_code, int | None)
        end = client.step(benchmark.gold_submit(task))
        assert end.done and end.reward < 1.0


def test_try_again_scores_as_step_rewards_and_seeded_resets(servers):
    server = servers["bash"]
    task = load_dataset("bash-demo")[2]
    gold = get("bash").gold_action(task)
    with server.client().sync() as client:
        client.reset(task=2, evaluate=True)  # every step scored
        wrong = client.step("echo nothing useful")
        assert not wrong.done and wrong.reward < 1.0 and wrong.observation.info["evaluated"]
        right = client.step(gold)
        assert not right.done and right.reward == 1.0
        assert right.observation.info["success"] is True and right.observation.info["parts"]

        client.reset(task=2)  # only the steps that ask
        plain = client.step("ls")
        assert plain.reward == 0.0 and "evaluated" not in plain.observation.info
        asked = client.step(IntercodeAction(code=gold, evaluate=True))
        assert asked.reward == 1.0 and not asked.done
        assert client.step("submit").reward == 1.0

        drawn = [client.reset(seed=7).observation.task for _ in range(2)]
        assert drawn[0] == drawn[1] and 0 <= drawn[0] < 8
        assert client.reset(seed=7, episode_id="ep-1").observation.task == drawn[0]
        assert client.state().episode_id == "ep-1"


def test_the_documented_client_idioms_work(servers):
    """Plain calls in blocking code, awaited calls in async code, string actions, and the
    token on every connection (new_session's too), as OpenEnv's documents use them."""
    server = servers["bash"]
    task = load_dataset("bash-demo")[2]
    gold = get("bash").gold_action(task)
    client = server.client()  # no .sync(): blocking calls return results
    try:
        first = client.reset(task=2)
        assert first.observation.query == task.query and not first.done
        assert client.step("echo plain").observation.output.strip() == "plain"
        client.step(gold)
        end = client.step("submit")
        assert end.done and end.reward == 1.0
        assert client.state().task == 2
    finally:
        client.close()

    async def awaited() -> tuple[float | None, float | None]:
        async with server.client() as env:
            await env.reset(task=2)
            await env.step(IntercodeAction(code=gold))
            done = await env.step("submit")
            other = await env.new_session()  # a second session, with the same token
            await other.reset(task=2)
            skipped = await other.step("skip")
            return done.reward, skipped.reward

    import asyncio

    assert asyncio.run(awaited()) == (1.0, 0.0)

    headers = IntercodeEnvClient(base_url=server.url, message_timeout_s=60,
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with headers.sync() as env:
        assert env.reset(task=2).observation.task == 2


def test_openenv_mcp_tool_client_lists_and_calls_the_tools(servers):
    """OpenEnv's generic MCPToolClient, on the WebSocket (steps with rewards) and over
    HTTP /mcp (production mode), and the raw JSON-RPC of /mcp."""
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    server = servers["sql"]
    task = load_dataset("spider-dev", "sql")[0]
    gold = get("sql").gold_action(task)

    async def on_the_websocket() -> None:
        async with MCPToolClient(base_url=server.url) as env:
            tools = {tool.name: tool for tool in await env.list_tools()}
            assert set(tools) == {"execute", "evaluate", "submit"}
            assert tools["execute"].input_schema["required"] == ["code"]
            await env.reset(task=0)
            ran = await env.call_tool("execute", code=gold)
            assert ran["exit_code"] in (0, None) and ran["output"]
            scored = await env.step(CallToolAction(tool_name="evaluate", arguments={}))
            assert scored.reward == 1.0 and not scored.done
            bad = await env.step(CallToolAction(tool_name="execute", arguments={"cmd": 1}))
            assert bad.observation.error is not None and "no argument 'cmd'" in (
                bad.observation.error.message)
            missing = await env.step(CallToolAction(tool_name="reset", arguments={}))
            assert missing.observation.error.error_type.value == "tool_not_found"
            end = await env.step(CallToolAction(tool_name="submit", arguments={}))
            assert end.done and end.reward == 1.0
            assert end.observation.result["success"] is True
            await env.reset(task=0)
            await env.call_tool("execute", code="SELECT 1")
            wrong = await env.step(CallToolAction(tool_name="submit", arguments={}))
            assert wrong.done and wrong.reward < 1.0

    import asyncio

    asyncio.run(on_the_websocket())

    status, listed = http(server, "POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode())
    assert status == 200 and "error" not in listed, listed
    assert {tool["name"] for tool in listed["result"]["tools"]} == {"execute", "evaluate",
                                                                   "submit"}
    status, called = http(server, "POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "execute", "arguments": {"code": "SELECT 1"}}}).encode())
    assert status == 200 and called["result"]["isError"] is True  # no session, no episode
    assert "no_episode" in called["result"]["content"][0]["text"]

    async def in_production_mode() -> None:
        async with MCPToolClient(base_url=server.url, mode="production") as env:
            assert {tool.name for tool in await env.list_tools()} == {"execute", "evaluate",
                                                                       "submit"}
            await env.reset(task=0)  # on the WebSocket that joined the /mcp session
            ran = await env.call_tool("execute", code=gold)
            assert ran["output"]
            assert (await env.call_tool("evaluate"))["reward"] == 1.0

    asyncio.run(in_production_mode())


def test_two_clients_are_isolated_and_do_not_stall_each_other(servers):
    server = servers["bash"]
    with server.client().sync() as a, server.client().sync() as b:
        a.reset(task=0)
        b.reset(task=0)
        wrote = a.step("echo secret > isolation_probe.txt && cat isolation_probe.txt")
        assert wrote.observation.output.strip() == "secret"
        seen = b.step("cat isolation_probe.txt")
        assert "No such file" in seen.observation.output and seen.observation.exit_code != 0

        slow = threading.Thread(target=a.step, args=("sleep 3",))
        slow.start()
        time.sleep(0.3)
        start = time.monotonic()
        quick = b.step("echo quick")
        elapsed = time.monotonic() - start
        slow.join()
        assert quick.observation.output.strip() == "quick"
        assert elapsed < 2.0, f"a step waited {elapsed:.1f} s for another session's action"


def test_closed_sessions_leave_their_environments_warm_for_the_next(servers):
    server = servers["python"]  # --warm 4 (the default), --max-sessions 2
    pid = server.proc.pid
    with server.client().sync() as first, server.client().sync() as second:
        for client in (first, second):  # the second starts an environment in its session
            client.reset(task=0)
            client.step("x = 1")
        held = set(bwraps(pid))
    time.sleep(1.5)  # the sessions' OpenEnv threads have ended by now
    assert held and all(map(running_bwrap, held)), "a warm environment's sandbox died"
    with server.client().sync() as third, server.client().sync() as fourth:
        for client in (third, fourth):
            client.reset(task=0)
            assert client.step("print(6 * 7)").observation.output.strip() == "42"
        assert set(bwraps(pid)) == held  # reset, not restarted


# -- bad input ------------------------------------------------------------------------------


def test_malformed_messages_get_errors_and_the_session_goes_on(servers):
    server = servers["bash"]
    with raw_ws(server) as ws:
        assert ask(ws, "not json {")["data"]["code"] == "INVALID_JSON"
        assert ask(ws, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(ws, {"type": "step"})["data"]["code"] == "VALIDATION_ERROR"
        extra = ask(ws, {"type": "step", "data": {"code": "ls", "sudo": True}})
        assert extra["data"]["code"] == "VALIDATION_ERROR" and "sudo" in json.dumps(extra)
        wrong_type = ask(ws, {"type": "step", "data": {"code": 5}})
        assert wrong_type["data"]["code"] == "VALIDATION_ERROR"
        early = ask(ws, {"type": "step", "data": {"code": "ls"}})
        assert early["type"] == "error" and early["data"]["message"].startswith("no_episode:")
        bad_option = ask(ws, {"type": "reset", "data": {"task": 0, "tsak": 1}})
        assert bad_option["data"]["message"].startswith("bad_request: unknown reset option")
        assert ask(ws, {"type": "reset", "data": {"task": 10_000}})["type"] == "error"
        assert ask(ws, {"type": "reset", "data": {"seed": -1}})["type"] == "error"
        ok = ask(ws, {"type": "reset", "data": {"task": 0}})
        assert ok["type"] == "observation" and ok["data"]["observation"]["task"] == 0
        ran = ask(ws, {"type": "step", "data": {"code": "echo still here"}})
        assert ran["data"]["observation"]["output"].strip() == "still here"
    for junk in ("[1, 2]", b"\x00\xff binary"):  # OpenEnv answers, then ends that connection
        with raw_ws(server) as ws:
            assert ask(ws, junk)["type"] == "error"
    assert http(server, "GET", "/health")[0] == 200
    with server.client().sync() as client:
        with pytest.raises(ServerError) as early:
            client.step("ls")
        assert early.value.code == "no_episode"
        with pytest.raises(ServerError) as unknown:
            client.reset(task=0, colour="red")
        assert unknown.value.code == "bad_request"


def test_an_unavailable_task_is_refused_and_a_random_reset_avoids_it(servers):
    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings

    env = make_env("ctf", "intercode-ctf", EnvSettings())
    unavailable = [i for i in range(len(env.dataset)) if env.unavailable(env.dataset[i])]
    assert unavailable, "every CTF task runs without a network?"
    with servers["ctf"].client().sync() as client:
        with pytest.raises(ServerError, match="needs the network") as refused:
            client.reset(task=unavailable[0])
        assert refused.value.code == "bad_request"
        drawn = {client.reset(seed=s).observation.task for s in range(8)}
        assert not drawn & set(unavailable)


def test_http_is_stateless_and_junk_bodies_are_refused(servers):
    server = servers["sql"]
    status, body = http(server, "POST", "/reset", json.dumps({"task": 3}).encode())
    assert status == 200 and body["observation"]["task"] == 3 and body["done"] is False
    status, body = http(server, "POST", "/step", json.dumps({"action": {"code": "SELECT 1"}})
                        .encode())
    assert status == 409 and body["code"] == "no_episode" and "WebSocket" in body["detail"]
    assert http(server, "POST", "/reset", b"{not json")[0] == 422
    assert http(server, "POST", "/step", b'{"action": {"code": "x", "extra": 1}}')[0] == 422
    status, body = http(server, "POST", "/reset", json.dumps({"task": 10_000}).encode())
    assert status == 400 and body["code"] == "bad_request"
    assert http(server, "GET", "/metadata")[1]["name"] == "intercode-sql"


def test_huge_payloads_are_refused_cleanly(servers):
    from websockets.exceptions import ConnectionClosed

    server = servers["bash"]
    with raw_ws(server) as ws:
        ask(ws, {"type": "reset", "data": {"task": 0}})
        long = ask(ws, {"type": "step", "data": {"code": "x" * (MAX_CODE_CHARS + 1)}})
        assert long["data"]["code"] == "VALIDATION_ERROR"
        assert "at most" in json.dumps(long["data"]["errors"])
        assert ask(ws, {"type": "step", "data": {"code": "echo fine"}})["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"code": "y" * (17 << 20)}}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    # a declared length over the limit: refused before the body is read
    answer = raw_http(server, f"Content-Length: {17 << 20}\r\n", b"")
    assert answer.startswith(b"HTTP/1.1 413") and b"larger than" in answer
    # no declared length (chunked): refused once the body read passes the limit
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    answer = raw_http(server, "Transfer-Encoding: chunked\r\n", chunk * 17 + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413")
    assert http(server, "GET", "/health")[0] == 200  # still serving


def test_a_missing_or_wrong_token_is_refused(servers):
    from websockets.exceptions import InvalidStatus

    server = servers["bash"]
    assert http(server, "GET", "/health", token=None)[0] == 401
    assert http(server, "GET", "/health", token="wrong")[0] == 401
    assert http(server, "POST", "/reset", b"{}", token=None)[0] == 401
    assert http(server, "GET", "/health")[0] == 200
    for token in (None, "wrong"):
        with pytest.raises(InvalidStatus) as refused:
            raw_ws(server, token=token)
        assert refused.value.response.status_code == 401
        with pytest.raises(ServerError) as client_refused:
            server.client(token=token).sync().connect()
        assert client_refused.value.code == "unauthorized"
    assert http(servers["sql"], "GET", "/health", token=None)[0] == 200  # no token asked


def test_more_clients_than_max_sessions_are_told_busy(servers):
    server = servers["bash"]  # --max-sessions 3
    clients = []
    try:
        for _ in range(3):
            client = server.client().sync()
            end = time.monotonic() + 10  # the slots of earlier tests' sessions free up
            while True:
                try:
                    client.connect()
                    client.reset(task=0)
                    break
                except ServerError as exc:
                    if exc.code != "busy" or time.monotonic() > end:
                        raise
                    client.close()
                    client = server.client().sync()
                    time.sleep(0.2)
            clients.append(client)
        extra = server.client().sync()
        with pytest.raises(ServerError) as busy:
            extra.connect()
            extra.reset(task=0)
        assert busy.value.code == "busy" and "all 3 sessions are in use" in str(busy.value)
        extra.close()
        clients.pop().close()
        again = server.client().sync()
        clients.append(again)
        wait_for(lambda: _resets(again), 10, "a freed slot serves a new client")
    finally:
        for client in clients:
            client.close()


def _resets(client) -> bool:
    try:
        client.reset(task=0)
        return True
    except ServerError as exc:
        if exc.code != "busy":
            raise
        client.close()
        return False


KILLED_CLIENT = """
import sys
from intercode.integrations.serve.openenv import IntercodeEnvClient
env = IntercodeEnvClient(base_url=sys.argv[1], token=sys.argv[2], message_timeout_s=60).sync()
env.reset(task=0)
print("reset", flush=True)
env.step("sleep 5")
print("the step returned", flush=True)
"""


def test_a_client_killed_mid_action_leaves_no_sandbox_and_others_go_on(servers):
    server = servers["bash"]  # --warm 0: a closed session's sandboxes are gone
    pid = server.proc.pid
    wait_for(lambda: not bwraps(pid), 15, "the earlier tests' sandboxes are closed")
    with server.client().sync() as other:
        other.reset(task=0)
        mine = len(bwraps(pid))
        assert mine > 0
        killed = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, server.url, TOKEN],
                                  stdout=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: any(c == "sleep" for _, c in descendants(pid)), 30,
                     "the killed client's action runs")
            assert len(bwraps(pid)) > mine
        finally:
            killed.send_signal(signal.SIGKILL)
            killed.wait()
        start = time.monotonic()
        alive = other.step("echo alive")
        assert alive.observation.output.strip() == "alive"
        assert time.monotonic() - start < 2.0
        wait_for(lambda: len(bwraps(pid)) == mine, 20,
                 "the killed client's sandboxes are closed")
        assert not any(c == "sleep" for _, c in descendants(pid))
        assert other.step("echo still").observation.output.strip() == "still"
    assert server.proc.poll() is None
    # the answer to the vanished client is dropped quietly, not logged as a crash
    log = server.stderr.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]


def test_an_idle_session_expires(servers):
    server = servers["ctf"]  # --idle-timeout 3; OpenEnv's reaper looks every 5 s
    with server.client().sync() as client:
        client.reset(task=0)
        time.sleep(8.5)
        with pytest.raises(ServerError) as gone:
            client.step("ls")
        assert gone.value.code == "unknown_session" and "idle" in str(gone.value)
        # the same client connects again by itself: a new session, no episode yet
        assert client.reset(task=0).observation.task == 0
        assert client.step("ls").done is False
    with server.client().sync() as fresh:
        assert fresh.reset(task=0).observation.task == 0


def test_without_openenv_the_command_says_what_to_install():
    code = ("import sys; sys.modules['openenv'] = None\n"
            "from intercode.cli import main\n"
            "sys.exit(main(['serve', 'openenv', '--env', 'bash', '--port', '0']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("intercode: error: intercode serve openenv needs openenv 0.4 to "
                           "0.10: pip install 'intercode[openenv]'\n")


def test_bad_serve_options_are_one_line(capsys, monkeypatch):
    from intercode.cli import main

    monkeypatch.delenv("INTERCODE_TEST_UNSET_VAR", raising=False)
    cases = [
        (["serve", "openenv", "--env", "bash", "--port", "0", "--token-env",
          "INTERCODE_TEST_UNSET_VAR"], "not set or empty"),
        (["serve", "openenv", "--env", "bash", "--port", "0", "--backend", "mysql"],
         "--backend applies only to the sql"),
        (["serve", "openenv", "sql", "--env", "bash", "--port", "0"],
         "two environments: sql and --env bash"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    for argv in (["serve"], ["serve", "openenv", "--env", "bash"],
                 ["serve", "openenv", "--port", "70000"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert capsys.readouterr().err.count("\n") == 1
