"""Closing a docker sandbox returns once its container is gone, also when the engine had
already begun removing it (``AutoRemove`` after the supervisor exited: a 409)."""

from __future__ import annotations

from typing import Any

import pytest

from intercode.errors import SandboxError
from intercode.sandbox.docker.sandbox import REMOVAL_WAIT_S, DockerSandbox


class Engine:
    """The engine's replies, in order; the calls made."""

    def __init__(self, *replies: tuple[int, Any] | Exception) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str, dict[str, Any] | None, float | None]] = []

    def call(self, method: str, path: str, body: Any = None,
             query: dict[str, Any] | None = None, timeout: float | None = None
             ) -> tuple[int, Any]:
        self.calls.append((method, path, query, timeout))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


@pytest.mark.parametrize("status", [204, 404])
def test_a_container_removed_at_once_or_gone_is_not_waited_for(status, caplog):
    engine = Engine((status, None))
    DockerSandbox._remove(engine, "c1")  # type: ignore[arg-type]
    assert engine.calls == [("DELETE", "/containers/c1", {"force": "1"}, None)]
    assert not caplog.records


@pytest.mark.parametrize("waited", [(200, {"StatusCode": 137}), (404, {"message": "gone"})])
def test_a_removal_in_progress_is_waited_for(waited, caplog):
    engine = Engine((409, {"message": "removal of container c1 is already in progress"}),
                    waited)
    DockerSandbox._remove(engine, "c1")  # type: ignore[arg-type]
    assert engine.calls[1] == ("POST", "/containers/c1/wait", {"condition": "removed"},
                               REMOVAL_WAIT_S)
    assert not caplog.records


def test_a_removal_of_the_engines_that_failed_is_asked_once_more(caplog):
    engine = Engine((409, {"message": "in progress"}),
                    (200, {"StatusCode": 0, "Error": {"Message": "device busy"}}), (204, None))
    DockerSandbox._remove(engine, "c1")  # type: ignore[arg-type]
    assert [c[:2] for c in engine.calls] == [("DELETE", "/containers/c1"),
                                             ("POST", "/containers/c1/wait"),
                                             ("DELETE", "/containers/c1")]
    assert not caplog.records
    engine = Engine((409, {"message": "in progress"}),
                    (200, {"StatusCode": 0, "Error": {"Message": "device busy"}}),
                    (500, {"message": "still busy"}))
    DockerSandbox._remove(engine, "c1")  # type: ignore[arg-type]
    assert [r.levelname for r in caplog.records] == ["ERROR"]


@pytest.mark.parametrize("replies", [
    [(500, {"message": "boom"})],
    [(409, {"message": "in progress"}), (500, {"message": "stuck"})],
    [SandboxError("the engine did not answer")],
    [(409, {"message": "in progress"}), SandboxError("timed out")],
])
def test_a_container_that_cannot_be_removed_is_logged_not_raised(replies, caplog):
    DockerSandbox._remove(Engine(*replies), "c1")  # type: ignore[arg-type]
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert "cannot remove the sandbox container c1" in caplog.records[0].getMessage()
