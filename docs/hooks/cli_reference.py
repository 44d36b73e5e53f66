"""mkdocs hook: the command-line reference, generated from ``intercode.cli.build_parser()``.

A page holding the line ``<!-- intercode-cli-reference -->`` gets, in its place, every
command and subcommand of the parser with each option, its choices, default and help, so
the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import html
from typing import Any

MARKER = "<!-- intercode-cli-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker with the reference (other pages are returned unchanged)."""
    if MARKER not in markdown:
        return markdown
    from intercode.cli import build_parser  # the package or module, whichever it is

    return markdown.replace(MARKER, render(build_parser()))


def render(parser: argparse.ArgumentParser) -> str:
    """The reference of ``parser`` and of every subcommand under it, as Markdown."""
    out: list[str] = []
    _command(parser, parser.prog, 2, out)
    return "\n".join(out) + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _command(parser: argparse.ArgumentParser, name: str, level: int, out: list[str]) -> None:
    out.append(f"{'#' * level} `{name}`\n")
    if parser.description and level > 2:
        out.append(_text(parser.description) + "\n")
    usage = parser.format_usage().strip().removeprefix("usage: ")
    out.append("```\n" + " ".join(usage.split()) + "\n```\n")
    formatter = parser._get_formatter()
    rows = [_row(action, formatter) for action in parser._actions
            if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)]
    if rows:
        out.append("| argument | default | description |")
        out.append("|---|---|---|")
        out.extend(rows)
        out.append("")
    for sub_name, sub_help, sub in _subparsers(parser):
        if sub_help and not sub.description:
            sub.description = sub_help
        _command(sub, f"{name} {sub_name}", min(level + 1, 4), out)


def _row(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if action.option_strings:
        names = ", ".join(f"`{opt}`" for opt in action.option_strings)
        if action.nargs != 0:
            names += f" `{action.metavar or action.dest.upper()}`"
    else:
        names = f"`{action.metavar or action.dest}`"
        counts = {"?": "optional", "+": "one or more", "*": "any number"}
        if isinstance(action.nargs, str) and action.nargs in counts:
            names += f" ({counts[action.nargs]})"
    description = _text(formatter._expand_help(action) if action.help else "")
    if action.choices is not None:
        choices = ", ".join(f"`{choice}`" for choice in action.choices)
        description = f"{description} (one of {choices})" if description else f"one of {choices}"
    if action.required and action.option_strings:
        description = f"required. {description}"
    default = action.default
    shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
    return f"| {names} | {shown} | {description} |"


def _text(text: str) -> str:
    """Help text for a table cell: one line, HTML escaped, pipes kept out of the table."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")
