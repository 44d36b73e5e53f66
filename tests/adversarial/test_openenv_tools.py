"""OpenEnv's MCP side of ``intercode serve openenv`` under hostile clients: tool calls that
are not what the tools take, calls that try another session, and calls that try to pass
the session cap. None may raise out of the session, score, or reach another session.

The server runs as ``intercode serve openenv`` does, in a subprocess on 127.0.0.1 (bash,
one session at most, a bearer token), spoken to over real connections.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.integrations.serve.sessions import MAX_CODE_CHARS

TOKEN = "openenv-tools-token"
TOKEN_VAR = "INTERCODE_TEST_OPENENV_TOOLS_TOKEN"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "intercode", "serve", "openenv", "bash", "--dataset",
         "bash-demo", "--port", "0", "--max-sessions", "1", "--warm", "1",
         "--token-env", TOKEN_VAR],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, TOKEN_VAR: TOKEN})
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 90)
        line = proc.stdout.readline() if ready else ""
        if "http://" not in line:
            proc.kill()
            pytest.fail(f"the server did not start: {line!r} {proc.communicate()[1][-2000:]}")
        yield "http://" + line.split("http://", 1)[1].split()[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ws(url: str, query: str = ""):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws" + query, additional_headers=AUTH,
                   max_size=None, proxy=None)


def ask(conn, message: dict) -> dict:
    conn.send(json.dumps(message))
    return json.loads(conn.recv(timeout=60))


def tool(conn, name: object, arguments: object) -> dict:
    return ask(conn, {"type": "step", "data": {"type": "call_tool", "tool_name": name,
                                               "arguments": arguments}})


def rpc(url: str, method: str, params: object, token: bool = True) -> tuple[int, dict]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    request = urllib.request.Request(url + "/mcp", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **(AUTH if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_hostile_tool_calls_are_one_line_errors_and_never_score(url):
    task = load_dataset("bash-demo")[2]
    with ws(url) as conn:
        before = tool(conn, "execute", {"code": "ls"})  # no episode yet
        assert before["type"] == "observation"
        assert "no_episode" in before["data"]["observation"]["error"]["message"]
        assert ask(conn, {"type": "reset", "data": {"task": 2}})["type"] == "observation"
        hostile = [
            ("reset", {}), ("step", {}), ("close", {}), ("state", {}), ("__init__", {}),
            ("_tool", {"code": "ls"}), ("execute", "ls"), ("execute", ["ls"]),
            ("execute", {"code": 1}), ("execute", {"code": True}), ("execute", {}),
            ("execute", {"code": "ls", "cwd": "/"}),
            ("execute", {"code": "x" * (MAX_CODE_CHARS + 1)}),
            ("submit", {"answer": "flag"}),  # bash's submit takes no answer
            ("evaluate", {"gold": True}), (None, {}), (7, {}),
        ]
        for name, arguments in hostile:
            answer = tool(conn, name, arguments)
            data = answer.get("data", {})
            if answer["type"] == "error":  # OpenEnv's own validation (a non-string name)
                assert data["code"] == "VALIDATION_ERROR", answer
                continue
            assert answer["type"] == "observation", (name, answer)
            error = data["observation"]["error"]
            assert error and "\n" not in error["message"], (name, answer)
            assert data["reward"] == 0.0 and data["done"] is False, (name, answer)
        # the session goes on and scores only what is solved
        assert tool(conn, "evaluate", {})["data"]["reward"] < 1.0
        tool(conn, "execute", {"code": get("bash").gold_action(task)})
        end = tool(conn, "submit", {})["data"]
        assert end["reward"] == 1.0 and end["done"] is True


@contextmanager
def only_session(url: str) -> Iterator[object]:
    """A connection holding the server's one session (the previous test's may still be
    closing: its slot comes back within moments)."""
    from websockets.exceptions import InvalidStatus

    deadline = time.monotonic() + 20
    while True:
        try:
            with ws(url) as conn:
                if ask(conn, {"type": "reset", "data": {"task": 0}})["type"] == "observation":
                    yield conn
                    return
        except InvalidStatus:  # 503: the slot is not back yet
            pass
        assert time.monotonic() < deadline, "the server's one session never came free"
        time.sleep(0.2)


def test_a_session_id_cannot_pass_the_cap_or_reach_another_session(url):
    with only_session(url) as holder:
        tool(holder, "execute", {"code": "echo mine > probe.txt"})
        for query in ("?session_id=not-a-session", "?session_id=../../x",
                      "?session_id=" + "a" * 5000):
            with ws(url, query) as intruder:  # the handshake passes, the session does not
                answer = json.loads(intruder.recv(timeout=60))
                assert answer["type"] == "error", answer
        status, created = rpc(url, "openenv/session/create", {})  # the cap holds over /mcp
        assert status == 200 and "error" in created, created
        status, called = rpc(url, "tools/call", {"name": "execute", "session_id": "guess",
                                                 "arguments": {"code": "cat probe.txt"}})
        assert "error" in called and "mine" not in json.dumps(called)
        status, _ = rpc(url, "tools/list", {}, token=False)
        assert status == 401
        assert tool(holder, "execute", {"code": "cat probe.txt"})["data"][
            "observation"]["result"]["output"].strip() == "mine"
