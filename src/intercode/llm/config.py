"""Which model a run calls, where, and how (:class:`ModelConfig`): what the run's
processes pass around and record, without the client that calls the model (a worker of
a run without a model never imports it)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from intercode.errors import ConfigError

__all__ = ["CONNECT_WAIT_MAX", "REASONING_EFFORTS", "RESERVED_BODY", "ModelConfig",
           "parse_extra_body"]

REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# model names (with or without a provider prefix) of OpenAI's reasoning families
REASONING_FAMILY = re.compile(r"(^|/)(o[1-9]|gpt-5)([-.:_]|$)", re.IGNORECASE)
# fields of the request the client owns; --extra-body may not replace them
RESERVED_BODY = frozenset({"model", "messages", "stream", "tools", "n"})
CONNECT_WAIT_MAX = 86400.0  # a day


@dataclass(frozen=True)
class ModelConfig:
    """Which model, where, and how to call it.

    ``base_url`` None means ``$OPENAI_BASE_URL`` or OpenAI's own endpoint. The key is
    read from the environment variable ``api_key_env``; a custom ``base_url`` works
    without one.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 512
    top_p: float | None = None
    timeout: float = 60.0
    retries: int = 6
    backoff: float = 1.0
    backoff_max: float = 60.0
    connect_wait: float = 120.0
    reasoning_effort: str | None = None
    stream: bool = False
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("a model name is needed (--model)")
        if self.timeout <= 0 or self.retries < 0 or self.backoff < 0 or self.max_tokens < 1:
            raise ConfigError("model timeout and max_tokens must be positive, retries and "
                              "backoff not negative")
        if not 0 <= self.connect_wait <= CONNECT_WAIT_MAX:  # NaN too
            raise ConfigError(f"the connect wait must be from 0 to {CONNECT_WAIT_MAX:g} "
                              f"seconds, not {self.connect_wait!r}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ConfigError(f"reasoning effort must be one of {', '.join(REASONING_EFFORTS)}, "
                              f"not {self.reasoning_effort!r}")
        if not isinstance(self.extra_body, Mapping):
            raise ConfigError("extra_body must be a JSON object")
        reserved = sorted(RESERVED_BODY & set(self.extra_body))
        if reserved:
            raise ConfigError(f"--extra-body may not set {', '.join(reserved)} (the client "
                              "sends them)")

    @property
    def reasoning_family(self) -> bool:
        """Whether the model name is one of OpenAI's reasoning families (o1, o3, gpt-5...)."""
        return REASONING_FAMILY.search(self.model) is not None

    def identity(self) -> dict[str, Any]:
        """What decides the answers (a resumed run must keep it; the endpoint may move)."""
        identity: dict[str, Any] = {"model": self.model, "temperature": self.temperature,
                                    "max_tokens": self.max_tokens, "top_p": self.top_p}
        if self.reasoning_effort is not None:
            identity["reasoning_effort"] = self.reasoning_effort
        if self.extra_body:
            identity["extra_body"] = dict(self.extra_body)
        return identity

    def endpoint(self) -> str:
        """The base URL calls go to."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"


def parse_extra_body(text: str) -> dict[str, Any]:
    """``--extra-body``: a JSON object, or a one-line :class:`ConfigError`."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--extra-body is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--extra-body must be a JSON object such as "
                          f"'{{\"top_k\": 20}}', not {type(value).__name__}")
    return value
