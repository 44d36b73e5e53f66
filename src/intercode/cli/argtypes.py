"""Argument types of the command line: each refuses a bad value with a one-line reason."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["DAY", "Parser", "integer", "number", "sandbox_backend", "seconds"]

DAY = 86400.0


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (exit code 2), without the usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print ``prog: error: message`` and exit with 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def seconds(limit: float = DAY) -> Callable[[str], float]:
    """A positive, finite number of seconds, at most ``limit``."""
    def parse(text: str) -> float:
        value = _float(text)
        if not 0 < value <= limit:
            raise argparse.ArgumentTypeError(
                f"must be a number of seconds above 0 and at most {limit:g}, got {text!r}")
        return value
    return parse


def number(low: float, high: float, low_open: bool = False) -> Callable[[str], float]:
    """A finite number in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    def parse(text: str) -> float:
        value = _float(text)
        if not (low < value if low_open else low <= value) or value > high:
            span = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"must be a number in {span}, got {text!r}")
        return value
    return parse


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number of at least ``low`` (and at most ``high``)."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"must be {span}, got {text!r}")
        return value
    return parse


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def sandbox_backend(text: str) -> str:
    """A registered sandbox backend: ``bwrap``, ``docker``, or a plugin's (entry point
    group ``intercode.sandboxes``)."""
    from intercode.errors import ConfigError
    from intercode.sandbox import require_backend

    try:
        return require_backend(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
