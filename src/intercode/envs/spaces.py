"""Text spaces for actions and observations of any Unicode content."""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

from intercode.envs.shared_text import register_shared_memory

__all__ = ["AnyText"]

SAMPLE_CHARSET = string.ascii_letters + string.digits


class AnyText(spaces.Text):
    """A Gymnasium ``Text`` space that contains every string up to ``max_length``.

    ``Text`` only contains strings over its charset; shell output is arbitrary
    Unicode. Sampling still draws from letters and digits. In a vector environment's
    shared memory, a text takes at most ``4 * max_length`` bytes (see ``shared_text``).
    """

    def __init__(self, max_length: int, min_length: int = 0) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET)

    def contains(self, x: Any) -> bool:
        """Any ``str`` whose length is within bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, AnyText) and self.min_length == other.min_length
                and self.max_length == other.max_length)

    def __hash__(self) -> int:
        return hash(("AnyText", self.min_length, self.max_length))


register_shared_memory(AnyText)
