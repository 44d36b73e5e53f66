"""``intercode serve mcp`` driven by the official TypeScript SDK and the MCP Inspector's
CLI (Node): the session lifecycle of clients that close without a ``DELETE``, the
resource answers they ask for, a quiet prompt shutdown, and a stdio server that cannot
start.

The Node packages are pinned in ``tests/serve/node/package.json`` (``package-lock.json``)
and installed by ``scripts/setup test`` (``npm ci``); without them these tests skip,
unless ``INTERCODE_REQUIRE_NODE_MCP=1`` (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_server_process import SERVE, HttpServer, http_server

NODE_DIR = Path(__file__).parent / "node"
LEFT = "left without ending it"


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` program, with the SDK and the Inspector installed next to the scripts."""
    program = shutil.which("node")
    installed = (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir() and (
        NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector").is_dir()
    if program is None or not installed:
        reason = ("node is not installed" if program is None else
                  f"the Node MCP clients are not installed: cd {NODE_DIR} && npm ci")
        if os.environ.get("INTERCODE_REQUIRE_NODE_MCP") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return program


def run_node(node: str, *args: str, timeout: float = 120) -> dict[str, Any]:
    proc = subprocess.run([node, *args], cwd=NODE_DIR, capture_output=True, text=True,
                          timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no answer from node {args[0]}: {proc.stderr}"
    out: dict[str, Any] = json.loads(lines[-1])
    assert proc.returncode == 0, (out, proc.stderr)
    return out


def inspector(node: str, target: list[str], *args: str) -> Any:
    """What ``mcp-inspector --cli`` prints for one method (parsed JSON: the answer on
    standard output, or an error on standard error)."""
    cli = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" \
        / "launcher" / "build" / "index.js"
    proc = subprocess.run([node, str(cli), "--cli", *target, *args], cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=120)
    return json.loads(proc.stdout if proc.returncode == 0 else proc.stderr)


def one_slot(*extra: str) -> Any:
    """A server with one session slot whose grace for a vanished client (600 s) outlives
    the test: a slot comes free only when a client's leaving is taken as its end."""
    return http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "1",
                       "--warm", "0", "--reconnect-grace", "600", *extra)


def quiet(server: HttpServer) -> None:
    # (not the host-wide note that every pseudo-terminal is shared out: a test of the
    # sandbox takes them all, and may run at the same time in another process)
    log = "".join(line for line in server.log if "intercode.sandbox.ptyshare" not in line)
    assert LEFT not in log and "WARNING" not in log and "ERROR" not in log, log


def test_typescript_sdk_clients_that_close_free_their_slot_at_once(node):
    """client.close() sends no DELETE: the closed event stream, with nothing in flight,
    ends the session (its sandboxes and its slot, the SDK's session too: more clients
    than the SDK's session cap, 16 here, come one after the other)."""
    with one_slot() as server:
        out = run_node(node, "http_episodes.mjs", server.url, "20")
        assert out["rounds"] == 20, out
        assert out["templates"] == []  # resources/templates/list is answered
        assert out["readBeforeReset"] == {
            "code": -32002, "message": "MCP error -32002: no_episode: no episode: call reset first",
            "data": {"uri": "intercode://task"}}
        assert not server.bwraps()
        quiet(server)
    # stopped with SIGTERM right after the last client left: the context checked that it
    # exited cleanly, without a traceback; nothing was cancelled on the way
    assert "graceful shutdown exceeded" not in "".join(server.log)


def test_the_inspector_cli_gets_answers_and_leaves_no_session_behind(node):
    with one_slot() as server:
        target = [server.url]
        assert inspector(node, target, "--method", "resources/templates/list") == {
            "resourceTemplates": []}
        for _ in range(2):  # the second finds the first's slot free
            started = inspector(node, target, "--method", "tools/call", "--tool-name", "reset",
                                "--tool-arg", "task=0")
            assert started["isError"] is False and started["structuredContent"]["task"] == 0
        error = inspector(node, target, "--method", "resources/read", "--uri", "intercode://task")
        assert error == {"error": {"code": "error",
                                   "message": "no_episode: no episode: call reset first"}}
        quiet(server)


def test_a_stdio_server_that_cannot_start_tells_the_sdk_client_why(node, tmp_path):
    """The TypeScript SDK launches stdio servers with HOME, LOGNAME, PATH, SHELL, TERM and
    USER only: here without a data mirror, nothing cached and no way to download, the
    server cannot load its dataset and the client must hear why, not "Connection
    closed"."""
    passed = [f"INTERCODE_CACHE={tmp_path}", "INTERCODE_DATA_URL=http://127.0.0.1:9/"]
    if os.environ.get("PYTHONPATH"):  # a source tree put first (not the launcher's doing)
        passed.append(f"PYTHONPATH={os.environ['PYTHONPATH']}")
    out = run_node(node, "stdio_unstarted.mjs", *passed, "--", *SERVE, "--env", "bash",
                   "--dataset", "nl2bash-fs1")
    assert "INTERCODE_DATA_MIRROR" not in out["passed"]
    assert out["connect"] == {"answer": "connected"}, out
    reason = "intercode serve mcp could not start: could not download http://127.0.0.1:9/"
    assert out["instructions"].startswith(reason), out
    for request in ("listTools", "reset", "readTask"):
        assert out[request]["code"] == -32603, out
        message = out[request]["message"]
        assert reason in message and "INTERCODE_DATA_MIRROR" in message, out
        assert "\n" not in message and "Traceback" not in message
    assert "Traceback" not in out["stderr"] and "intercode: error:" in out["stderr"], out
