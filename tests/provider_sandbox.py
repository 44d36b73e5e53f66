"""Helpers of the tests of ``sandbox="intercode"``: one provider sandbox of a backend, and
scripted replies of Inspect's mock model for tests that drive a whole evaluation (a
``bash`` tool call, the ``submit`` of an answer)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from backends import need
from inspect_ai.model import ModelOutput, ModelUsage

from intercode.integrations.inspectai.sandbox import (
    IntercodeSandboxConfig,
    IntercodeSandboxEnvironment,
)


@contextmanager
def provider_sandbox(backend: str, task: str) -> Iterator[Any]:
    """The sandbox environment Inspect's ``sample_init`` gives a sample of ``task`` on
    ``backend``, cleaned up after."""
    need(backend)
    config = IntercodeSandboxConfig(backend=backend)
    envs = anyio.run(IntercodeSandboxEnvironment.sample_init, task, config, {})
    try:
        yield envs["default"]
    finally:
        anyio.run(IntercodeSandboxEnvironment.sample_cleanup, task, None, envs, False)


def tool_call(command: str) -> ModelOutput:
    """The mock model calls Inspect's ``bash`` tool with ``command``."""
    return _counted(ModelOutput.for_tool_call("mockllm/model", "bash", {"command": command}))


def submit(answer: str = "42") -> ModelOutput:
    """The mock model submits ``answer``."""
    return _counted(ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": answer}))


def _counted(out: ModelOutput) -> ModelOutput:
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out
