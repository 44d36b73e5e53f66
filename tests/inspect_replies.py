"""Scripted replies of Inspect's mock model for the tests that drive a whole Inspect
evaluation: a ``bash`` tool call, and the ``submit`` of an answer."""

from __future__ import annotations

from inspect_ai.model import ModelOutput, ModelUsage


def tool_call(command: str) -> ModelOutput:
    """The mock model calls Inspect's ``bash`` tool with ``command``."""
    return _counted(ModelOutput.for_tool_call("mockllm/model", "bash", {"command": command}))


def submit(answer: str = "42") -> ModelOutput:
    """The mock model submits ``answer``."""
    return _counted(ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": answer}))


def _counted(out: ModelOutput) -> ModelOutput:
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out
