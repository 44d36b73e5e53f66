"""Inspect's own conformance suite for third-party sandboxes, on ``sandbox="intercode"``
(on each sandbox backend).

The checks this provider cannot satisfy are expected failures, each with its reason.
"""

from __future__ import annotations

import pytest
from backends import backends, need
from inspect_ai.util._sandbox.self_check import *  # noqa: F403

from intercode.integrations.inspectai.sandbox import (
    IntercodeSandboxConfig,
    IntercodeSandboxEnvironment,
)

pytestmark = pytest.mark.anyio

XFAIL: dict[str, str] = {
    "test_exec_as_user": "the sandbox has one unprivileged user (agent); no root to add users",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=backends())
def _shared(request) -> object:
    import anyio

    need(request.param)
    config = IntercodeSandboxConfig(backend=request.param)
    envs = anyio.run(IntercodeSandboxEnvironment.sample_init, "self-check", config, {})
    yield envs["default"]
    anyio.run(IntercodeSandboxEnvironment.sample_cleanup, "self-check", None, envs, False)


@pytest.fixture
def sandbox_env(_shared, request):
    reason = XFAIL.get(request.node.originalname)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    return _shared
