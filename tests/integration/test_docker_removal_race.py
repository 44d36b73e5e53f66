"""A docker sandbox's container removed by the engine on its own (``AutoRemove``) while
the sandbox closes: the engine answers the close's removal with 409 and still lists the
container; the close returns only once it is gone."""

from __future__ import annotations

from backends import need

from intercode.sandbox.docker.engine import DockerEngine
from intercode.sandbox.docker.sandbox import DockerSandbox, default_image


def test_a_removal_the_engine_began_is_waited_for():
    need("docker")
    engine = DockerEngine()
    for _ in range(10):  # (the engine's own removal was under way in most, here all)
        made = engine.ok("POST", "/containers/create", {
            "Image": default_image(), "Cmd": ["true"], "User": "1000:1000",
            "HostConfig": {"AutoRemove": True, "NetworkMode": "none"}})
        container = made["Id"]
        engine.ok("POST", f"/containers/{container}/start")
        engine.ok("POST", f"/containers/{container}/wait", timeout=30.0)  # it exited
        DockerSandbox._remove(engine, container)
        assert engine.call("GET", f"/containers/{container}/json")[0] == 404
