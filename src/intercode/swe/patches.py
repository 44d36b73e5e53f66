"""Patches handed in for SWE tasks: split by file, and the test-file policy.

**Policy.** A handed-in patch may change the code, never what decides whether the code
works. Its changes to *protected* paths are dropped before it is applied (and named in
the score's ``reward_info``), so those paths come from the pristine tree and the task's
test patch:

* every path SWE-bench itself counts as a test file when it splits a fix from its tests:
  one whose path contains ``test``, ``tests``, ``testing`` or ``e2e`` (which covers
  ``tests/``, ``test_*.py``, ``conftest.py``, ``pytest.ini``, a ``unittest.py`` that
  would shadow the runner);
* the test runner's configuration: ``setup.cfg``, ``tox.ini``, ``pyproject.toml``,
  ``.coveragerc``, ``noxfile.py``;
* what Python runs at start-up whatever the test: ``sitecustomize.py``,
  ``usercustomize.py``, ``*.pth``.

A fix that needs one of these files changed is scored without that change (``validate``
names the gold patches this touches). Code under test still runs inside the test
process; what it does there is the task's code, not a file this policy can vouch for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FilePatch", "filter_patch", "is_protected", "split_patch"]

TEST_WORDS = ("test", "tests", "testing", "e2e")
RUNNER_CONFIG = frozenset({"setup.cfg", "tox.ini", "pyproject.toml", ".coveragerc",
                           "noxfile.py", "sitecustomize.py", "usercustomize.py"})
_HEADER = re.compile(r"^diff --git (.+)$")
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class FilePatch:
    """One file's section of a git diff: the paths it names (old and new) and its text."""

    paths: tuple[str, ...]
    text: str


def is_protected(path: str) -> bool:
    """Whether changes to ``path`` are dropped (see the module's policy)."""
    lowered = path.lower()
    if any(word in lowered for word in TEST_WORDS):
        return True
    name = lowered.rsplit("/", 1)[-1]
    return name in RUNNER_CONFIG or name.endswith(".pth")


def split_patch(patch: str) -> tuple[str, list[FilePatch]]:
    """The text before the first file section, and the file sections of a git diff."""
    lines = patch.splitlines(keepends=True)
    preamble: list[str] = []
    sections: list[list[str]] = []
    plain = not any(line.startswith("diff --git ") for line in lines)
    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or (
                plain and line.startswith("--- ") and i + 1 < len(lines)
                and lines[i + 1].startswith("+++ ")):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
        else:
            preamble.append(line)
    out = [FilePatch(_paths(section), "".join(section)) for section in sections]
    return "".join(preamble), out


def _paths(section: list[str]) -> tuple[str, ...]:
    """The paths a file section names: from ``---``/``+++``, rename/copy lines and its
    header (whichever it has)."""
    found: list[str] = []
    header = _HEADER.match(section[0].rstrip("\n"))
    if header:
        found += _header_paths(header.group(1))
    for line in section[0 if header is None else 1:]:
        if line.startswith(("@@", "GIT binary patch")):
            break
        text = line.rstrip("\n")
        for prefix in ("--- a/", "+++ b/", "--- ", "+++ ", "rename from ", "rename to ",
                       "copy from ", "copy to "):
            if text.startswith(prefix):
                found.append(_unquote(text[len(prefix):]))
                break
        for prefix in ('--- "a/', '+++ "b/'):
            if text.startswith(prefix):
                found.append(_unquote('"' + text[len(prefix):]))
    return tuple(dict.fromkeys(p for p in found if p))


def _header_paths(rest: str) -> list[str]:
    if rest.startswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return [_strip_prefix(_unquote(p)) for p in parts[:2]]
    # a/<path> b/<path>: the same path twice unless renamed (then rename lines name both)
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3:]:
        return [rest[2:half]]
    return [_strip_prefix(p) for p in rest.split(" ", 1)]


def _strip_prefix(path: str) -> str:
    return path[2:] if path[:2] in ("a/", "b/") else path


def _unquote(text: str) -> str:
    """A path as git writes it: plain, or C-quoted with octal escapes."""
    if not (text.startswith('"') and text.endswith('"') and len(text) >= 2):
        return text.split("\t", 1)[0]
    body = text[1:-1]
    raw = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), body)
    raw = raw.replace('\\"', '"').replace("\\t", "\t").replace("\\n", "\n") \
        .replace("\\\\", "\\")
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def filter_patch(patch: str) -> tuple[str, list[str]]:
    """``patch`` without its sections that change a protected path, and those paths."""
    preamble, sections = split_patch(patch)
    kept: list[str] = []
    dropped: list[str] = []
    for section in sections:
        if not section.paths or any(is_protected(p) for p in section.paths):
            dropped += list(section.paths) or ["(a file section without a path)"]
        else:
            kept.append(section.text)
    return preamble + "".join(kept), dropped
