"""OpenEnv's MCP side of ``intercode serve openenv`` under hostile clients: tool calls that
are not what the tools take, calls that try another session, and calls that try to pass
the session cap. None may raise out of the session, score, or reach another session.

The server runs as ``intercode serve openenv`` does, in a subprocess on 127.0.0.1 (bash,
one session at most, a bearer token), spoken to over real connections.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from openenv_process import served

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.integrations.serve.sessions import MAX_CODE_CHARS

TOKEN = "openenv-tools-token"
TOKEN_VAR = "INTERCODE_TEST_OPENENV_TOOLS_TOKEN"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from serve("--max-sessions", "1")


@pytest.fixture(scope="module")
def idle_url() -> Iterator[str]:
    """A server whose sessions expire after 2 s idle (OpenEnv's reaper looks every 5 s)."""
    yield from serve("--max-sessions", "2", "--idle-timeout", "2")


def serve(*options: str) -> Iterator[str]:
    with served(["bash", "--dataset", "bash-demo", "--warm", "1", "--token-env", TOKEN_VAR,
                 *options], {TOKEN_VAR: TOKEN}) as address:
        yield address


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
        text = exc.read()
        try:
            return exc.code, json.loads(text or b"{}")
        except ValueError:  # not JSON ("Internal Server Error")
            return exc.code, {"body": text.decode(errors="replace")}


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


def test_a_tool_name_or_session_id_that_is_not_a_string_is_a_one_line_answer(url):
    """OpenEnv hands ``/mcp``'s ``name`` to the tools unchecked (a pydantic report of
    several lines came back) and looks ``session_id`` up as it comes (a list or an
    object was a 500 with a traceback in the server's log)."""
    with only_session(url) as holder:
        mcp = ask(holder, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1,
                                                   "method": "tools/call",
                                                   "params": {"name": 7, "arguments": {}}}})
        result = mcp["data"]["result"]
        assert result["isError"] is True and "unknown tool 7" in result["content"][0]["text"]
        for name in (7, ["execute"], {"name": "execute"}, True):
            status, answer = rpc(url, "tools/call", {"name": name, "arguments": {}})
            text = json.dumps(answer)
            assert status == 200 and answer["result"]["isError"] is True, (name, answer)
            assert "unknown tool" in text and "validation error" not in text, (name, answer)
        for method in ("tools/call", "tools/list", "openenv/session/close"):
            for sid in (["a"], {"a": 1}, 5, 1.5, True):
                status, answer = rpc(url, method, {"name": "execute", "session_id": sid,
                                                   "arguments": {"code": "ls"}})
                assert status == 200, (method, sid, answer)
                message = answer["error"]["message"]
                assert "session_id" in message and "\n" not in message, (method, sid, answer)
        assert tool(holder, "execute", {"code": "echo alive"})["data"][
            "observation"]["result"]["output"].strip() == "alive"


def test_a_repeated_session_id_parameter_is_refused_at_the_handshake_when_full(url):
    """``?session_id=x&session_id=`` is a new session for OpenEnv (the last value counts):
    it must not pass the handshake's busy check as one that joins a session."""
    from websockets.exceptions import InvalidStatus

    with only_session(url):
        for query in ("?session_id=x&session_id=", "?session_id=x&session_id"):
            with pytest.raises(InvalidStatus) as refused, ws(url, query) as intruder:
                pytest.fail(f"accepted: {intruder.recv(timeout=60)}")
            assert refused.value.response.status_code == 503


def test_an_idle_websocket_attached_to_an_mcp_session_expires_and_frees_its_slot(idle_url):
    """OpenEnv's reaper passes over a session while a WebSocket is attached to it
    (``?session_id=``): a client that attached and went quiet kept its sandboxes and its
    slot past ``--idle-timeout``, for as long as its connection stayed open."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    _, created = rpc(idle_url, "openenv/session/create", {})
    sid = created["result"]["session_id"]
    with ws(idle_url, f"?session_id={sid}") as attached:
        assert ask(attached, {"type": "reset", "data": {"task": 0}})["type"] == "observation"
        with pytest.raises(ConnectionClosed):  # idle: the server ends the connection
            attached.recv(timeout=60)
    # both slots come back (the session is reaped once detached): two new sessions run
    deadline = time.monotonic() + 60
    while True:
        try:
            with ws(idle_url) as first, ws(idle_url) as second:
                for conn in (first, second):
                    answer = ask(conn, {"type": "reset", "data": {"task": 0}})
                    assert answer["type"] == "observation", answer
                break
        except (InvalidStatus, AssertionError, ConnectionClosed):
            assert time.monotonic() < deadline, "the idle session's slot never came back"
            time.sleep(0.5)
