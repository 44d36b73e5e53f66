"""Which sandbox backends the tests run on, and what they need.

``INTERCODE_SANDBOX_BACKENDS`` (comma-separated, default ``bwrap,docker``) names them.
The Docker backend needs an engine and an image (``INTERCODE_DOCKER_IMAGE``, else
the one ``intercode image build`` makes): without them its tests skip, except under
``INTERCODE_REQUIRE_DOCKER=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
from functools import cache

import pytest


def backends() -> list[str]:
    """The backends to run the parametrised suites on."""
    names = os.environ.get("INTERCODE_SANDBOX_BACKENDS", "bwrap,docker")
    return [n.strip() for n in names.split(",") if n.strip()]


@cache
def _docker_problem() -> str | None:
    from intercode.errors import IntercodeError
    from intercode.sandbox.docker import DockerSandbox, default_image
    from intercode.sandbox.docker_engine import Engine

    try:
        DockerSandbox.preflight()
        image = default_image()
        status, _ = Engine().call("GET", f"/images/{image}/json")
        if status != 200:
            return f"the Docker image {image!r} does not exist"
    except IntercodeError as exc:
        return str(exc)
    return None


def need(backend: str) -> None:
    """Skip (or, where required, fail) a test of ``backend`` this machine cannot run."""
    if backend != "docker":
        return
    problem = _docker_problem()
    if problem is None:
        return
    if os.environ.get("INTERCODE_REQUIRE_DOCKER"):
        pytest.fail(f"the docker sandbox is required (INTERCODE_REQUIRE_DOCKER) but: {problem}")
    pytest.skip(f"no docker sandbox here: {problem}")


def kill_sandbox(box: object) -> None:
    """Kill a started sandbox from outside (an infrastructure fault)."""
    container = getattr(box, "_container", None)
    if container is not None:
        from intercode.sandbox.docker_engine import Engine

        Engine().ok("POST", f"/containers/{container}/kill", accept=(204, 404, 409))
        return
    proc = box._proc  # type: ignore[attr-defined]
    proc.kill()
    proc.wait()
