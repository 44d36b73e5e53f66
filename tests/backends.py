"""Which sandbox backends the tests run on, and what they need.

``INTERCODE_SANDBOX_BACKENDS`` (comma-separated, default ``bwrap,docker``) names them.
The Docker backend needs an engine and an image (``INTERCODE_DOCKER_IMAGE``, else
the one ``intercode image build`` makes): without them its tests skip, except under
``INTERCODE_REQUIRE_DOCKER=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest


def backends() -> list[str]:
    """The backends to run the parametrised suites on."""
    names = os.environ.get("INTERCODE_SANDBOX_BACKENDS", "bwrap,docker")
    return [n.strip() for n in names.split(",") if n.strip()]


@cache
def _docker_problem() -> str | None:
    from intercode.errors import IntercodeError
    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.docker.sandbox import DockerSandbox, default_image

    try:
        DockerSandbox.preflight()
        image = default_image()
        status, _ = DockerEngine().call("GET", f"/images/{image}/json")
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
        from intercode.sandbox.docker.engine import DockerEngine

        DockerEngine().ok("POST", f"/containers/{container}/kill", accept=(204, 404, 409))
        return
    proc = box._proc  # type: ignore[attr-defined]
    proc.kill()
    proc.wait()


def chosen_backend() -> str | None:
    """The backend ``--sandbox-backend`` (or its fallback ``INTERCODE_TEST_SANDBOX``) puts
    every sandbox on, if one was chosen (tests/conftest.py publishes it there)."""
    return os.environ.get("INTERCODE_TEST_SANDBOX") or None


def shell_envs() -> list[tuple[str, str]]:
    """``(backend, shell)`` pairs for suites that run on a Bash and a Python environment
    of each backend (one backend under ``--sandbox-backend``, which already puts every
    sandbox on the backend it names)."""
    names = ["bwrap"] if chosen_backend() else backends()
    return [(b, s) for b in names for s in ("bash", "python")]


def shell_env_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}-{pair[1]}"


@contextmanager
def shell_env(pair: tuple[str, str]) -> Iterator[Any]:
    """A Bash (NL2Bash fs1) or Python (MBPP) environment on the backend, closed after."""
    from intercode.envs.bash import BashEnv
    from intercode.envs.python import PythonEnv

    backend, shell = pair
    need(backend)
    env = (BashEnv("nl2bash-fs1", backend=backend) if shell == "bash"
           else PythonEnv("mbpp", backend=backend))
    try:
        yield env
    finally:
        env.close()
