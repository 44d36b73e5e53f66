"""Rich consoles that print plain text off a terminal, and agent text made safe to print.

On a terminal, output has colours and the terminal's width. Anywhere else (a pipe, a
file, a CI log) it is plain text: no ANSI codes, a fixed width, whatever ``FORCE_COLOR``
says. Nothing a console prints is read as markup or emoji codes: every styled piece is
built from :class:`rich.text.Text`, and text that agents or their environments produced
(actions, observations, replies) goes through :func:`literal` first, which shows control
characters as escapes so they cannot move the cursor, recolour or clear the terminal.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable
from typing import TextIO

from rich.console import Console
from rich.text import Text

__all__ = ["console_for", "cut", "emit", "is_tty", "literal", "plain_text"]

PLAIN_WIDTH = 100  # columns off a terminal: stable lines for logs and tests

# C0 controls but tab and newline, DEL, C1 controls, bidirectional overrides (text that
# reads differently from what it is), lone surrogates (unprintable in UTF-8), BOM
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                    "\ud800-\udfff\ufeff]")


def is_tty(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands escape codes."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def console_for(stream: TextIO | None = None) -> Console:
    """A console on ``stream`` (standard output by default), plain when it is not a
    terminal."""
    stream = stream if stream is not None else sys.stdout
    tty = is_tty(stream)
    return Console(file=stream, force_terminal=tty, force_interactive=tty,
                   color_system="auto" if tty else None, width=None if tty else PLAIN_WIDTH,
                   markup=False, emoji=False, highlight=False, force_jupyter=False,
                   legacy_windows=False)


def plain_text(render: Callable[[Console], None]) -> str:
    """What ``render`` prints on a plain console, without trailing blanks (tables pad
    their lines to their width) or blank lines around it."""
    buffer = io.StringIO()
    render(console_for(buffer))
    text = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).strip("\n")
    return text + "\n" if text else ""


def emit(render: Callable[[Console], None], stream: TextIO | None = None) -> None:
    """Print what ``render`` prints: in colour on a terminal, else as :func:`plain_text`."""
    stream = stream if stream is not None else sys.stdout
    if is_tty(stream):
        render(console_for(stream))
    else:
        stream.write(plain_text(render))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` with control characters (but newline and tab) shown as ``\\xNN`` escapes;
    Windows line ends become plain ones."""
    return UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def literal(text: object, style: str = "") -> Text:
    """Text printed exactly as written: never markup, control characters escaped."""
    return Text(clean(str(text)), style=style)


def cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut at ``limit`` characters, and how many were cut."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)
