"""Attacks on the ``tools/call`` fast path of ``intercode serve mcp`` over HTTP
(:mod:`intercode.integrations.serve.mcp_fast`): requests for which it must do what the SDK's own
path does, and no more.

The server's guarded ASGI app is driven in this process, as in
``tests/serve/test_mcp_fast.py``: sessions with the fast path attached, and (to compare)
sessions without it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp_asgi import Headers, Peer, bash_service, call_body, initialize_body, known_sdk, running

from intercode.integrations.serve.mcp_server import NEEDS_SESSION

service = pytest.fixture(name="service")(bash_service)


@known_sdk
def test_a_second_initialize_under_another_version_header_turns_the_fast_path_off(service):
    """The SDK takes a second ``initialize`` on a session and negotiates its version
    anew, whatever ``MCP-Protocol-Version`` header the request carries: sent under a
    handshake version other than the session's, it must still turn the fast path off,
    or the fast path goes on answering with the version of the first handshake."""
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            peer = Peer(app, "2025-06-18")
            await peer.open()
            await peer.tool("reset", task=0)
            assert fast.answered == 1
            other = [peer.headers[0], (b"mcp-protocol-version", b"2025-03-26")]
            status, _, body = await peer.send(initialize_body(2, "2024-11-05"), headers=other)
            assert status == 200, body
            assert json.loads(body)["result"]["protocolVersion"] == "2024-11-05"
            assert (await peer.tool("execute", id=3, code="echo t"))[
                "structuredContent"]["output"] == "t\n"
            assert fast.answered == 1  # the SDK's path answered: the session is its now

    anyio.run(main)


@known_sdk
def test_a_client_gone_mid_body_is_answered_as_the_sdk_does(service):
    """A client that sends half a ``tools/call`` body and disconnects: the SDK's path
    answers its 500 (to nobody) and returns; the fast path must not let the
    disconnection escape the app as an exception (a traceback from the ASGI server)."""
    raw = json.dumps(call_body(1, "evaluate")).encode()
    cut = [{"type": "http.request", "body": raw[:10], "more_body": True},
           {"type": "http.disconnect"}, {"type": "http.disconnect"}]

    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            fast.enabled = False  # this session is not attached: the SDK's path throughout
            sdk = Peer(app, "2025-11-25")
            await sdk.open()
            fast.enabled = True
            quick = Peer(app, "2025-11-25")
            await quick.open()
            answers = []
            for peer in (sdk, quick):
                with anyio.fail_after(30):  # a hang guard
                    answers.append(await peer.send(raw, messages=list(cut)))
            assert answers[0][0] == 500
            assert (answers[1][0], answers[1][2]) == (answers[0][0], answers[0][2])
            # the session goes on, on the fast path
            before = fast.answered
            assert (await quick.tool("evaluate", id=3))["isError"] is True  # no episode yet
            assert fast.answered == before + 1

    anyio.run(main)


def test_a_sessionless_era_request_cannot_name_a_session(service):
    """A request of the sessionless 2026-07-28 era goes past the SDK's sessions (no
    lookup of its ``Mcp-Session-Id``, no initialize): a session id it carries names
    no session of this server, and must not reach that session's sandbox (nor give a
    made-up id an episode)."""
    modern = "2026-07-28"

    def headers(sid: bytes) -> Headers:
        return [(b"mcp-session-id", sid), (b"mcp-protocol-version", modern.encode()),
                (b"mcp-method", b"tools/call"), (b"mcp-name", b"execute")]

    def body(name: str, **arguments: Any) -> dict[str, Any]:
        meta = {"io.modelcontextprotocol/clientInfo": {"name": "attack", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/protocolVersion": modern}
        return {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": meta}}

    async def main() -> None:
        async with running(service) as app:
            victim = Peer(app, "2025-11-25")
            await victim.open()
            await victim.tool("reset", task=0)
            await victim.tool("execute", id=2, code="echo s3cret > /tmp/mine")
            sid = victim.headers[0][1]
            attacker = Peer(app, "2025-11-25")
            status, _, answer = await attacker.send(body("execute", code="cat /tmp/mine"),
                                                    headers=headers(sid))
            assert status == 200, answer
            assert b"s3cret" not in answer
            assert NEEDS_SESSION.encode() in answer and b'"isError":true' in answer
            status, _, answer = await attacker.send(
                body("reset", task=0), headers=[(b"mcp-session-id", b"made-up"),
                                                *headers(sid)[1:3], (b"mcp-name", b"reset")])
            assert status == 200 and b'"isError":true' in answer, answer
            assert set(service.bound) == {sid.decode()}
            # the victim's own session is as it was
            assert (await victim.tool("execute", id=3, code="cat /tmp/mine"))[
                "structuredContent"]["output"] == "s3cret\n"

    anyio.run(main)
