"""The ``tools/call`` fast path of ``intercode serve mcp`` over HTTP answers exactly as
the SDK's own path does, and leaves everything else to it.

The server's guarded ASGI app is driven in this process (no sockets): one session with
the fast path attached, one without (the SDK's path end to end), the same requests sent
to both, the answers compared byte for byte, for every handshake-era protocol version.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp_asgi import (
    KNOWN_SDK,
    Peer,
    bash_service,
    call_body,
    initialize_body,
    known_sdk,
    running,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

service = pytest.fixture(name="service")(bash_service)


def requests(protocol: str) -> list[tuple[str, Any, list[tuple[bytes, bytes]] | None]]:
    """What both sessions are sent: (name, body, headers or None for the session's)."""
    def call(id: Any, name: Any, **more: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, **more}}

    return [
        ("reset", call(1, "reset", arguments={"task": 0}), None),
        ("execute", call(2, "execute", arguments={"code": "echo hi; pwd; echo err >&2"}), None),
        ("string id", call("x-3", "execute", arguments={"code": "printf 'caf\\xc3\\xa9'"}),
         None),
        ("a wrong type", call(4, "execute", arguments={"code": 3}), None),
        ("an unknown argument", call(5, "execute", arguments={"code": "true", "x": 1}), None),
        ("no arguments", call(6, "execute"), None),
        ("an unknown tool", call(7, "nope", arguments={}), None),
        ("a name not a string", call(8, 12, arguments={}), None),
        ("arguments not an object", call(9, "execute", arguments=["true"]), None),
        ("with _meta", call(10, "execute", arguments={"code": "echo m"},
                            _meta={"progressToken": 5}), None),
        ("no params", {"jsonrpc": "2.0", "id": 11, "method": "tools/call"}, None),
        ("a notification", {"jsonrpc": "2.0", "method": "tools/call",
                            "params": {"name": "evaluate"}}, None),
        ("a batch", [call(12, "evaluate")], None),
        ("malformed JSON", b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", ', None),
        ("not JSON-RPC 2.0", {**call(14, "evaluate"), "jsonrpc": "1.0"}, None),
        ("a bool id", call(True, "evaluate"), None),
        ("evaluate", call(15, "evaluate"), None),
        ("reset out of range", call(16, "reset", arguments={"task": 10 ** 9}), None),
        ("submit", call(17, "submit"), None),
        ("after the episode", call(18, "execute", arguments={"code": "true"}), None),
        ("reset again", call(19, "reset", arguments={"task": 1}), None),
        ("execute again", call(20, "execute", arguments={"code": "ls /nonexistent"}), None),
    ]


@pytest.mark.parametrize("protocol", HANDSHAKE_PROTOCOL_VERSIONS)
def test_the_fast_path_answers_byte_for_byte_as_the_sdk_does(service, protocol):
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            assert fast.enabled or not KNOWN_SDK
            fast.enabled = False  # this session is not attached: the SDK's path throughout
            sdk = Peer(app, protocol)
            await sdk.open()
            fast.enabled = KNOWN_SDK or fast.enabled
            quick = Peer(app, protocol)
            await quick.open()
            answers: dict[str, list[tuple[str, int, bytes]]] = {"sdk": [], "fast": []}
            for peer, key in ((sdk, "sdk"), (quick, "fast")):
                before = fast.answered
                for name, body, headers in requests(protocol):
                    status, _, payload = await peer.send(body, headers=headers)
                    answers[key].append((name, status, payload))
                if key == "sdk":
                    assert fast.answered == before  # nothing of its was answered here
                elif KNOWN_SDK:
                    # the plain calls of one of the tools: reset, execute, string id, a
                    # wrong type, an unknown argument, no arguments, evaluate, reset out
                    # of range, submit, after the episode, reset again, execute again
                    assert fast.answered - before == 12
            for (name, status, payload), (_, status2, payload2) in zip(
                    answers["sdk"], answers["fast"], strict=True):
                assert (status, payload) == (status2, payload2), name
            # the answers are the real ones, not two equal failures
            said = {name: (status, payload) for name, status, payload in answers["fast"]}
            assert b'hi\\n/\\n' in said["execute"][1]
            assert said["string id"][1].startswith(b'{"jsonrpc":"2.0","id":"x-3","result"')
            assert b"caf\xc3\xa9" in said["string id"][1]
            assert b'"isError":true' in said["a wrong type"][1]
            assert said["malformed JSON"][0] == 400
            assert said["a notification"][0] == 202
            assert b'"reward"' in said["submit"][1]

    anyio.run(main)


@known_sdk
def test_what_the_fast_path_leaves_to_the_sdk(service):
    """A second initialize on a session, a tracing middleware, a protocol version
    header other than the negotiated one: the SDK's path answers."""
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            peer = Peer(app, "2025-06-18")
            await peer.open()
            assert (await peer.tool("reset", task=0))["structuredContent"]["task"] == 0
            assert fast.answered == 1
            other = [*peer.headers[:1], (b"mcp-protocol-version", b"2025-03-26")]
            status, _, _ = await peer.send(call_body(2, "execute", code="true"), headers=other)
            assert status == 200 and fast.answered == 1
            service.server.middleware.append(lambda ctx, call_next: call_next(ctx))
            assert (await peer.tool("execute", id=3, code="echo t"))[
                "structuredContent"]["output"] == "t\n"
            assert fast.answered == 1
            service.server.middleware.clear()
            assert (await peer.tool("execute", id=4, code="true"))["isError"] is False
            assert fast.answered == 2
            status, _, body = await peer.send(initialize_body(5, "2025-06-18"))
            assert status == 200, body
            assert (await peer.tool("execute", id=6, code="echo u"))[
                "structuredContent"]["output"] == "u\n"
            assert fast.answered == 2  # off for this session from the second handshake

    anyio.run(main)


@known_sdk
def test_ending_a_session_ends_its_calls_in_flight_as_the_sdk_does(service):
    """A DELETE while a call runs and another waits its turn: both are answered at once
    with the SDK's 500 (not after the running action), and the sandbox is freed."""
    async def main() -> None:
        async with running(service) as app:
            fast = app.fast
            assert fast is not None
            peer = Peer(app, "2025-11-25")
            await peer.open()
            await peer.tool("reset", task=0)
            sid = peer.headers[0][1].decode()
            session = service.bound[sid]
            answers: list[tuple[int, bytes]] = []

            async def slow(id: int) -> None:
                status, _, body = await peer.send(call_body(id, "execute", code="sleep 600"))
                answers.append((status, body))

            with anyio.fail_after(60):  # a hang guard, not a timing assertion
                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow, 2)
                    tg.start_soon(slow, 3)
                    while len(fast.attached[sid].calls) < 2:
                        await anyio.sleep(0.01)
                    status, _, _ = await peer.send(b"", method="DELETE")
                    assert status == 200
            assert [status for status, _ in answers] == [500, 500]
            assert all(b"Session terminated before the request completed" in body
                       for _, body in answers)
            assert session.closed and sid not in service.bound and sid not in fast.attached
            status, _, _ = await peer.send(call_body(4, "execute", code="true"))
            assert status == 404  # the SDK's answer for a session it no longer knows

    anyio.run(main)
