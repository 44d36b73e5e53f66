"""What an environment's execution state in a snapshot must do: be released.

The environments' snapshots (:mod:`intercode.envs.snapshot`) hold one; the SQL backends and
the sandboxes make them, so the protocol lives below both.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ExecState", "NoState"]


class ExecState(Protocol):
    """An environment's execution state in a snapshot."""

    def release(self) -> None:
        """Free what the state holds (idempotent; may run from a finalizer)."""


class NoState:
    """The execution state of an environment whose state lives on the host only."""

    def release(self) -> None:
        """Nothing to free."""
