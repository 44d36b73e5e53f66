"""A docker sandbox's container removed by the engine on its own (``AutoRemove``) while
the sandbox closes: the engine answers the close's removal with 409 and still lists the
container; the removal returns only once it is gone."""

from __future__ import annotations

from typing import Any

import pytest
from backends import need

from intercode.sandbox.docker.engine import API_TIMEOUT, DockerEngine
from intercode.sandbox.docker.sandbox import DockerSandbox, default_image


class Counting(DockerEngine):
    """The engine, with the statuses its removals got."""

    def __init__(self) -> None:
        super().__init__()
        self.deletes: list[int] = []

    def call(self, method: str, path: str, body: Any = None,
             query: dict[str, Any] | None = None, timeout: float = API_TIMEOUT
             ) -> tuple[int, Any]:
        status, reply = super().call(method, path, body, query, timeout)
        if method == "DELETE":
            self.deletes.append(status)
        return status, reply


def test_a_removal_the_engine_began_is_waited_for():
    need("docker")
    engine = Counting()
    for _ in range(10):
        made = engine.ok("POST", "/containers/create", {
            "Image": default_image(), "Entrypoint": [], "Cmd": ["true"], "User": "1000:1000",
            "HostConfig": {"AutoRemove": True, "NetworkMode": "none"}})
        container = made["Id"]
        engine.ok("POST", f"/containers/{container}/start")
        # it exited (a 404: and was removed already)
        engine.ok("POST", f"/containers/{container}/wait", accept=(200, 404), timeout=30.0)
        DockerSandbox._remove(engine, container)
        assert engine.call("GET", f"/containers/{container}/json")[0] == 404
    if 409 not in engine.deletes:  # (each removal of the engine's ended before ours)
        pytest.skip("the engine's own removal never overlapped the close's here")
