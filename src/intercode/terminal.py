"""The terminal a person plays in (``intercode play``, the human policy of ``eval``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

__all__ = ["Terminal"]


class Terminal:
    """Input and output of a play session (replaceable in tests)."""

    def __init__(self, read: Callable[[str], str] = input, out: TextIO | None = None) -> None:
        self.read = read
        self.out = out or sys.stdout
        self.color = self.out.isatty()

    def say(self, text: str = "", style: str = "") -> None:
        """Print a line, dimmed or bold on a colour terminal."""
        codes = {"dim": "2", "bold": "1", "green": "32", "red": "31"}
        if self.color and style in codes:
            text = f"\033[{codes[style]}m{text}\033[0m"
        print(text, file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        """Read one command (joining continuation lines)."""
        lines = [self.read(prompt)]
        while lines[-1].endswith("\\"):
            lines.append(self.read("> "))
        return "\n".join(lines)
