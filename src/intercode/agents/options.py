"""The LLM strategies' settings (:class:`StrategyOptions`): what a run's processes pass
around and record, without the strategies (a worker of a run without a model never
imports them)."""

from __future__ import annotations

from dataclasses import dataclass

from intercode.errors import ConfigError

__all__ = ["StrategyOptions"]


@dataclass(frozen=True)
class StrategyOptions:
    """Settings of the LLM strategies; ``None`` means upstream's default."""

    observation_chars: int | None = None
    observation_rows: int | None = None
    dialogue_limit: int | None = None
    refine_turns: int = 3
    show_reward: bool = False

    def __post_init__(self) -> None:
        for name in ("observation_chars", "observation_rows", "dialogue_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if self.refine_turns < 0:
            raise ConfigError("refine_turns must not be negative")
