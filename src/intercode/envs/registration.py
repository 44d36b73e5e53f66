"""Gymnasium ids of the intercode environments (one per registered benchmark)."""

from __future__ import annotations

__all__ = ["register_all"]


def env_id(name: str) -> str:
    """The Gymnasium id of an environment (``bash`` -> ``intercode/bash-v0``)."""
    return f"intercode/{name}-v0"


def register_all() -> None:
    """Register every benchmark, built-in and plugin, with Gymnasium (idempotent)."""
    from intercode.benchmarks.registry import register_gym_ids

    register_gym_ids()
