"""Turning a model's reply into an action, without ever changing the command.

Upstream lowercased fenced code and collapsed its whitespace (and flattened every reply
onto one line), which broke commands such as ``grep "Error  code"`` or Python
indentation. Here the code is taken verbatim: the first fenced block (its language
tag dropped), else the reply itself (Bash, Python, CTF) or the first SQL statement in
it. ``submit`` / ``skip`` are recognised; a reply with no action is *invalid*, and the
agent gets the paper's retry message instead of an output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from intercode.benchmarks import benchmarks, get

__all__ = ["Parsed", "control_action", "first_sql_statement", "language", "parse_code",
           "parse_react", "retry_message", "truncate_observation"]

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*\n?(.*?)```", re.DOTALL)
GENERIC_TAGS = frozenset({"text", "plaintext"})
SQL_KEYWORDS = ("SELECT", "SHOW", "DESCRIBE", "DESC", "WITH")
SQL_START = re.compile(r"\b(SELECT|SHOW|DESCRIBE|DESC|WITH)\b", re.IGNORECASE)
REACT_ACTION = re.compile(r"^\s*Action(?:\s*\d+)?\s*:\s*(.*)", re.IGNORECASE | re.MULTILINE
                          | re.DOTALL)
REACT_EXECUTE = re.compile(r"execute\[(.*)\]", re.DOTALL)
REACT_SUBMIT = re.compile(r"submit(?:\[(.*?)\]|\s+(\S+))?\s*$", re.DOTALL | re.IGNORECASE)



def language_tags() -> frozenset[str]:
    """Code-block tags dropped from a fenced block: every benchmark's, and its language's."""
    tags = set(GENERIC_TAGS)
    for benchmark in benchmarks():
        tags |= benchmark.parsing.tags | {benchmark.name.lower(),
                                         benchmark.prompting.language.lower()}
    return frozenset(tags)


def language(env: str) -> str:
    """The language name the prompts use for ``env`` (bash, SQL, python, ...)."""
    return get(env).prompting.language


@dataclass(frozen=True)
class Parsed:
    """``kind`` is ``code``, ``submit`` (``text`` is the whole submit action), ``skip``,
    or ``none`` (no action: the retry message is due)."""

    kind: str
    text: str = ""


def retry_message(language: str) -> str:
    """The paper's message for a reply without code (upstream's wording, for fidelity)."""
    lang = language.upper()
    return (f"No {lang} code was found in your last response.\n\nYour response should be a "
            f"{lang} command. Format your {lang} command as follows:\n\n```{lang}\n"
            f"Your {lang} code here\n```\n")


def first_fenced_block(reply: str) -> str | None:
    """The code of the first fenced block, verbatim (``None`` if there is none)."""
    match = FENCE.search(reply)
    if match is None:
        return None
    tag, body = match.group(1), match.group(2)
    if tag and tag.lower() not in language_tags():
        body = f"{tag}\n{body}" if "\n" in match.group(0).split("```", 2)[1] else f"{tag} {body}"
    return body.strip("\n").rstrip()


def first_sql_statement(text: str) -> str:
    """``text`` up to its first ``;`` outside quotes and comments (without the ``;``)."""
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                if i + 1 < len(text) and text[i + 1] == quote:
                    i += 2
                    continue
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            return text[:i].strip()
        elif text.startswith("--", i) or ch == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        i += 1
    return text.strip()


def _control(text: str, env: str) -> Parsed | None:
    """``submit`` / ``skip`` (CTF: ``submit <flag>``; Python: ``submit <function>``)."""
    stripped = text.strip()
    words = stripped.split()
    if not words:
        return None
    head = words[0].lower()
    if head == "skip" and len(words) == 1:
        return Parsed("skip", "skip")
    if head == "submit":
        if len(words) == 1:
            return Parsed("submit", "submit")
        if get(env).parsing.submit_argument and len(stripped.splitlines()) == 1:
            return Parsed("submit", "submit " + stripped.split(None, 1)[1].strip())
    return None


def control_action(text: str, env: str) -> Parsed | None:
    """``text`` as ``submit`` / ``skip`` if it is one, else ``None``."""
    return _control(text, env)


def parse_code(reply: str, env: str) -> Parsed:
    """The action of a plain (Try Again, single-turn, Plan & Solve) reply."""
    block = first_fenced_block(reply)
    text = block if block is not None else reply.strip()
    control = _control(text, env)
    if control is not None:
        return control
    if not text.strip():
        return Parsed("none")
    rules = get(env).parsing
    if rules.statement == "sql":
        if block is None:
            match = SQL_START.search(text)
            if match is None:
                return Parsed("none")
            text = text[match.start():]
        statement = first_sql_statement(text)
        words = statement.split()
        if not words or words[0].upper() not in SQL_KEYWORDS:
            return Parsed("none")
        return Parsed("code", statement)
    if block is None:
        for prefix in rules.prefixes:
            if text.lower().startswith(prefix):
                text = text[len(prefix):].strip()
    return Parsed("code", text)


def parse_react(reply: str, env: str) -> tuple[str, Parsed]:
    """A ReAct reply ``Thought: ... Action: execute[...] | submit``: (thought, action)."""
    match = REACT_ACTION.search(reply)
    if match is None:
        return reply.strip(), Parsed("none")
    thought = reply[:match.start()].strip()
    thought = re.sub(r"^\s*Thought(?:\s*\d+)?\s*:\s*", "", thought, flags=re.IGNORECASE)
    action = match.group(1).strip()
    action = re.split(r"\n\s*Observation(?:\s*\d+)?\s*:", action, maxsplit=1)[0].strip()
    execute = REACT_EXECUTE.search(action)
    if execute is not None:
        code = execute.group(1).strip()
        if get(env).parsing.statement == "sql":
            code = first_sql_statement(code)
        return thought, Parsed("code", code) if code else Parsed("none")
    submitted = REACT_SUBMIT.match(action)
    if submitted is not None:
        argument = (submitted.group(1) or submitted.group(2) or "").strip()
        if argument and get(env).parsing.submit_argument:
            return thought, Parsed("submit", f"submit {argument}")
        return thought, Parsed("submit", "submit")
    if action.lower() == "skip":
        return thought, Parsed("skip", "skip")
    return thought, Parsed("none")


def truncate_observation(text: str, chars: int | None, rows: int | None) -> str:
    """Cut an observation as upstream did: a list of result rows to ``rows`` rows, any
    other text to ``chars`` characters."""
    if rows is not None and text.startswith("[(") and text.rstrip().endswith(")]"):
        cut = _after_rows(text, rows)
        return text if cut is None else text[:cut] + "]"
    if chars is not None and len(text) > chars:
        return text[:chars]
    return text


def _after_rows(text: str, rows: int) -> int | None:
    """Index just after the ``rows``-th top-level element of a repr'd list, if any more follow."""
    depth, quote, count, i = 0, None, 0, 1
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return None
            depth -= 1
            if depth == 0:
                count += 1
                if count == rows:
                    rest = text[i + 1:].lstrip()
                    return i + 1 if rest.startswith(",") else None
        i += 1
    return None
