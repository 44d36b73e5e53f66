"""Patches handed in for SWE tasks: split by file, and the test-file policy.

**Policy.** A handed-in patch may change the code, never what decides whether the code
works. Its changes to *protected* paths are dropped before it is applied (and named in
the score's ``reward_info``), so those paths come from the pristine tree and the task's
test patch:

* test files: any path inside a directory named ``test``, ``tests``, ``testing`` or
  ``e2e`` (SWE-bench's own words for what goes into a test patch, taken as whole path
  components, so that ``src/_pytest/`` or ``attestation.py`` stay code), and files named
  ``test_*``, ``*_test.py``, ``*_tests.py``, ``test.py``, ``tests.py``, ``conftest.py``;
* the test runner's configuration: ``pytest.ini``, ``.pytest.ini``, ``pytest.toml``,
  ``.pytest.toml``, ``setup.cfg``, ``tox.ini``, ``tox.toml``, ``pyproject.toml``,
  ``.coveragerc``, ``noxfile.py``;
* git's own files (any ``.git`` component) and paths with ``..``;
* what Python runs at start-up whatever the test: ``sitecustomize.py``,
  ``usercustomize.py``, ``*.pth``; and, at the repository's top level (first on
  ``sys.path`` when the tests start), a module or package named like a test runner
  (``pytest``, ``_pytest``, ``unittest``, ``pluggy``, ``nose``) or like a module of
  Python's standard library (which the runner imports before any test), whatever its
  suffix (``unittest.pyc`` and ``argparse.cpython-311-x86_64-linux-gnu.so`` import as
  well as ``unittest.py``);
* the test command's own runner script, when it is a file of the repository
  (``bin/test`` for SymPy), and beside it the modules named like the standard library's
  (its folder is first on ``sys.path`` when it runs): :func:`runner_paths`.

A fix that needs one of these files changed is scored without that change (``validate``
names the gold patches this touches). Code under test still runs inside the test
process; what it does there is the task's code, not a file this policy can vouch for.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FilePatch", "filter_patch", "is_protected", "runner_paths", "split_patch"]

TEST_DIRS = frozenset({"test", "tests", "testing", "e2e"})
TEST_FILES = frozenset({"test.py", "tests.py", "conftest.py"})
RUNNER_CONFIG = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml",
                           "setup.cfg", "tox.ini", "tox.toml", "pyproject.toml",
                           ".coveragerc", "noxfile.py", "sitecustomize.py", "usercustomize.py"})
RUNNER_MODULES = frozenset({"pytest", "_pytest", "unittest", "pluggy", "nose"})
# top-level names that shadow what the runner imports (``test`` is a test folder anyway)
SHADOWED = RUNNER_MODULES | (frozenset(sys.stdlib_module_names) - {"__future__"})
PY_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd")  # what Python imports a module from
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_INTERPRETER = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|bash|sh)$")
_HEADER = re.compile(r"^diff --git (.+)$")
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class FilePatch:
    """One file's section of a git diff: the paths it names (old and new) and its text."""

    paths: tuple[str, ...]
    text: str


def is_protected(path: str, runner: Sequence[str] = ()) -> bool:
    """Whether changes to ``path`` are dropped (see the module's policy); ``runner``:
    the test command's :func:`runner_paths`."""
    parts = [p for p in path.lower().split("/") if p not in ("", ".")]
    if not parts or ".git" in parts or ".." in parts:
        return True  # git's own files, or a path that leaves the repository
    name = parts[-1]
    if TEST_DIRS.intersection(parts[:-1]) or name in TEST_FILES or name in RUNNER_CONFIG:
        return True
    if name.startswith("test_") or name.endswith(("_test.py", "_tests.py", ".pth")):
        return True
    top = parts[0].split(".", 1)[0]  # a top-level module imports by this, whatever its suffix
    if top in RUNNER_MODULES and (len(parts) > 1 or parts[0].endswith(PY_SUFFIXES)):
        return True
    if top in SHADOWED and name.endswith(PY_SUFFIXES) and (len(parts) == 1 or top == parts[0]):
        return True
    plain, folder = "/".join(parts), "/".join(parts[:-1])
    shadow = name.split(".", 1)[0] in SHADOWED and name.endswith(PY_SUFFIXES)
    return any(plain == r or (shadow and folder == posixpath.dirname(r)) for r in runner)


def runner_paths(command: str) -> tuple[str, ...]:
    """The scripts of the repository the test ``command`` starts by a relative path,
    itself or through an interpreter (``bin/test``, ``tests/runtests.py`` for
    ``./tests/runtests.py``, ``scripts/run.py`` for ``python3 scripts/run.py``), lower
    case: protected, with the modules of their folder named like the standard library's
    (the folder is first on ``sys.path`` when the script runs)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        words = command.split()
    found: list[str] = []
    first, interpreter = True, False
    for word in words:
        if word and set(word) <= set(";&|()"):
            first, interpreter = True, False
            continue
        if first and _ASSIGNMENT.match(word):
            continue
        if first and _INTERPRETER.match(posixpath.basename(word)):
            first, interpreter = False, True
            continue
        if interpreter and word in ("-m", "-c"):
            interpreter = False
            continue
        if (first or (interpreter and not word.startswith("-"))) and "/" in word \
                and not word.startswith(("/", "~", "$")):
            path = posixpath.normpath(word).lower()
            if not path.startswith("..") and path != ".":
                found.append(path)
        if first or not word.startswith("-"):
            interpreter = False
        first = False
    return tuple(dict.fromkeys(found))


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


def filter_patch(patch: str, runner: Sequence[str] = ()) -> tuple[str, list[str]]:
    """``patch`` without its sections that change a protected path, and those paths."""
    preamble, sections = split_patch(patch)
    kept: list[str] = []
    dropped: list[str] = []
    for section in sections:
        if not section.paths or any(is_protected(p, runner) for p in section.paths):
            dropped += list(section.paths) or ["(a file section without a path)"]
        else:
            kept.append(section.text)
    return preamble + "".join(kept), dropped
