"""One MCP client cannot stall the others by sending many calls at once.

The server runs environment calls in a bounded set of worker threads (twice
``--max-sessions`` plus four). A client may send any number of ``tools/call`` requests
in its session at the same time (streamable HTTP allows concurrent POSTs); its session
runs one at a time. Were each waiting call to hold a thread, a few dozen slow calls
would take them all and another session's ``reset`` would wait behind them, for as long
as the flood takes. The calls of one session take turns on the event loop instead: the
other session is served while the flood waits.

No timing: the assertion is about order (how many of the flood's calls had ended when
the other session's calls were answered).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import httpx2
from mcp_server_process import http_server

SLOW = 5  # seconds of each flooding call
FLOOD = 12  # more than the 8 worker threads of a --max-sessions 2 server
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Rpc:
    """A raw JSON-RPC client of one MCP session (requests may overlap)."""

    def __init__(self, web: httpx2.AsyncClient, url: str) -> None:
        self.web, self.url, self.headers, self.next_id = web, url, dict(HEADERS), 0

    async def open(self) -> None:
        hello = await self.web.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "flood", "version": "1"}}})
        assert hello.status_code == 200, hello.text
        self.headers.update({"mcp-session-id": hello.headers["mcp-session-id"],
                             "mcp-protocol-version": "2025-06-18"})
        await self.web.post(self.url, headers=self.headers,
                            json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def answer(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.next_id += 1
        answer = await self.web.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        return dict(answer.json()["result"])

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.answer(name, **arguments)
        assert not result.get("isError"), result
        return dict(result["structuredContent"])

    async def close(self) -> None:
        await self.web.delete(self.url, headers=self.headers)


def test_a_flood_of_calls_in_one_session_does_not_hold_up_another():
    with http_server("--env", "bash", "--dataset", "bash-demo", "--max-sessions", "2",
                     "--warm", "0", "--idle-timeout", "120") as server:
        url = server.url
        async def main() -> tuple[int, list[str]]:
            limits = httpx2.Limits(max_connections=FLOOD + 8)
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300),
                                          limits=limits) as web:
                flooder, other = Rpc(web, url), Rpc(web, url)
                await flooder.open()
                await other.open()
                await flooder.tool("reset", task=0)
                ended: list[str] = []
                began = anyio.Event()
                count = 0

                async def slow() -> None:
                    nonlocal count
                    count += 1
                    if count == FLOOD:
                        began.set()
                    out = await flooder.answer("execute", code=f"sleep {SLOW}; echo slow")
                    ended.append(out["structuredContent"].get("output", ""))

                async with anyio.create_task_group() as tg:
                    for _ in range(FLOOD):
                        tg.start_soon(slow)
                    await began.wait()
                    await anyio.sleep(0.5)  # the flood's requests reach the server first
                    await other.tool("reset", task=0)
                    ran = await other.tool("execute", code="echo quick")
                    assert ran["output"] == "quick\n"
                    done_when_served = len(ended)
                    tg.cancel_scope.cancel()  # the rest of the flood is not needed
                await other.close()
                await flooder.close()
                return done_when_served, ended

        done_when_served, ended = anyio.run(main)
        # one of the flood's calls runs at a time, each SLOW seconds: the other session
        # was answered while at most the first one or two had ended (were the waiting
        # calls holding the server's 8 threads, it would have waited for 5 of them)
        assert done_when_served <= 2, done_when_served
        assert all(out == "slow\n" for out in ended), ended  # in turn, none refused


def test_cancelling_a_running_call_does_not_let_the_next_one_take_a_thread():
    """A client may cancel its requests (``notifications/cancelled`` cancels the handler).
    A running environment call cannot be stopped, so the session's turn passes on only
    when its thread is done with it: cancelling call after call cannot pile them up in
    blocked worker threads either."""
    from intercode.integrations.serve.mcp_server import McpService
    from intercode.integrations.serve.sessions import ServeConfig

    service = McpService(ServeConfig(env="bash", dataset="bash-demo", max_sessions=1), "http")

    class Session:  # what the turn needs of a session: to be one (weakly referenced)
        pass

    session = Session()
    gate = threading.Event()
    first_running = threading.Event()
    order: list[str] = []

    def first() -> None:
        first_running.set()
        gate.wait(30)
        order.append("first ended")

    def second() -> None:
        order.append("second started")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(service._in_turn, session, first)
            await anyio.to_thread.run_sync(first_running.wait, 30)
            tg.cancel_scope.cancel()  # the first call's request is cancelled while it runs
        async with anyio.create_task_group() as tg:
            tg.start_soon(service._in_turn, session, second)
            await anyio.sleep(0.2)
            assert order == []  # the first still runs in its thread: the second waits
            gate.set()
        assert order == ["first ended", "second started"]

    try:
        anyio.run(main)
        assert service.workers.threads() == 1  # never a second thread for the session
    finally:
        service.shutdown()
