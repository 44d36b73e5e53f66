"""What the official ``swebench`` package knows about an instance: how to test it, how to
read the test log, what its environment needs.

The package (``pip install 'intercode[swe]'``, version 4.1: the last with its per-version
specs) owns the test commands (``MAP_REPO_VERSION_TO_SPECS``, ``get_test_directives``), the
log parsers per repository (``MAP_REPO_TO_PARSER``) and the environment specs (Python
version, pinned packages, install command). It is imported on first use, on the host,
never on the step path (its import costs about a second). An instance's own fields
(``test_cmd``, ``log_parser``, ``install``, ``pip_packages``, ``python``) take precedence,
for repositories the specs do not know (SWE-smith, SWE-Gym, your own).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from intercode.datasets.swe import SweTask
from intercode.errors import ConfigError

__all__ = ["DEFAULT_PYTHON", "PARSE_TIMEOUT", "ParseFailed", "TestPlan", "parse_log", "plan",
           "requirements_paths", "swebench_version"]

DEFAULT_PYTHON = "3.11"  # the sandbox's root (Debian 12) has this one
DEFAULT_TEST_CMD = "pytest -rA"
DEFAULT_PARSER = "pytest"
PARSE_TIMEOUT = 60.0  # seconds a parser may take on one log (a linear one needs about 1)
INSTALL_HINT = "install the SWE-bench extra: pip install 'intercode[swe]'"
ParserFn = Callable[[str, Any], dict[str, str]]


class ParseFailed(ValueError):
    """The official parser failed on a log (the message says how)."""


@dataclass(frozen=True)
class TestPlan:
    """How an instance is tested and what its environment needs.

    ``command`` is a shell command run in ``/testbed`` (the spec's test command and the
    test files of the test patch, quoted); ``parser`` names the log parser; ``python`` is
    the version the spec asks for; ``requirements`` is the spec's ``packages`` field
    (``requirements.txt``, ``environment.yml``, conda package names or empty);
    ``pre_install`` the spec's system commands (not run here: see :mod:`~intercode.swe.build`).
    ``python_repo`` says whether it is a Python repository (SWE-bench's specs do not know
    it, or name a Python version for it).
    """

    command: str
    parser: str
    python: str
    pip_packages: tuple[str, ...]
    requirements: str
    install: str
    pre_install: tuple[str, ...]
    python_repo: bool = True


def swebench_version() -> str:
    """The installed ``swebench`` version (a one-line error without it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swebench")
    except PackageNotFoundError:
        raise ConfigError(f"the swe benchmark scores with the swebench package; "
                          f"{INSTALL_HINT}") from None


@lru_cache(maxsize=1)
def _swebench() -> SimpleNamespace:
    """The parts of ``swebench`` used here (imported once; ``.env`` files are not read)."""
    swebench_version()
    import importlib

    saved = os.getcwd()
    try:
        os.chdir("/")  # swebench.harness.utils loads a .env from the working directory up
        constants = importlib.import_module("swebench.harness.constants")
        parsers = importlib.import_module("swebench.harness.log_parsers")
        python_parsers = importlib.import_module("swebench.harness.log_parsers.python")
        test_spec = importlib.import_module("swebench.harness.test_spec.python")
    except ImportError as exc:
        raise ConfigError(f"cannot import the swebench package ({exc}); {INSTALL_HINT}") \
            from None
    finally:
        os.chdir(saved)
    specs = getattr(constants, "MAP_REPO_VERSION_TO_SPECS", None)
    if specs is None:
        raise ConfigError("this swebench package has no per-version specs (5.0 moved them "
                          "out); install swebench>=4.1,<5: pip install 'intercode[swe]'")
    return SimpleNamespace(specs=specs, parsers=parsers.MAP_REPO_TO_PARSER,
                           reqs=getattr(constants, "MAP_REPO_TO_REQS_PATHS", {}),
                           python_parsers=python_parsers, directives=test_spec.get_test_directives,
                           status=constants.TestStatus)


def plan(task: SweTask) -> TestPlan:
    """The test plan of ``task``: its own fields, else SWE-bench's specs, else pytest."""
    sb = _swebench()
    spec: dict[str, Any] = sb.specs.get(task.repo, {}).get(task.version, {})
    known = bool(spec)
    test_cmd = task.test_cmd or spec.get("test_cmd") or DEFAULT_TEST_CMD
    if isinstance(test_cmd, list):
        test_cmd = " && ".join(test_cmd)
    directives: list[str] = []
    if not task.test_cmd:
        directives = [str(d) for d in sb.directives(task.instance())]
    command = " ".join([test_cmd, *(shlex.quote(d) for d in directives)])
    if task.log_parser:
        parser = task.log_parser
    elif task.repo in sb.parsers:
        parser = sb.parsers[task.repo].__name__.removeprefix("parse_log_")
    else:
        parser = DEFAULT_PARSER
    _parser_fn(parser)  # an unknown parser is the dataset's error, said before any run
    pip = task.pip_packages or tuple(str(p) for p in spec.get("pip_packages", ()))
    packages = spec.get("packages", "")
    pre = spec.get("pre_install", ())
    return TestPlan(command=command, parser=parser,
                    python=task.python or str(spec.get("python", DEFAULT_PYTHON)),
                    pip_packages=pip, requirements=packages if isinstance(packages, str) else "",
                    install=task.install or str(spec.get("install", "")),
                    pre_install=tuple(str(p) for p in pre),
                    python_repo=not known or "python" in spec or bool(task.python))


def requirements_paths(repo: str) -> list[str]:
    """Where SWE-bench looks for ``repo``'s requirements file (first found wins)."""
    return [str(p) for p in _swebench().reqs.get(repo, ["requirements.txt"])]


def _parser_fn(name: str) -> ParserFn:
    sb = _swebench()
    for fn in sb.parsers.values():
        if fn.__name__ == f"parse_log_{name}":
            return fn  # type: ignore[no-any-return]
    fn = getattr(sb.python_parsers, f"parse_log_{name}", None)
    if fn is None:
        raise ConfigError(f"swebench has no log parser {name!r} (log_parser names parse_log_"
                          "<name> of swebench.harness.log_parsers: pytest, django, sympy, ...)")
    return fn  # type: ignore[no-any-return]


def parse_log(log: str, task: SweTask, parser: str,
              timeout: float = PARSE_TIMEOUT) -> dict[str, str]:
    """Test name -> status (``PASSED``, ``FAILED``, ``SKIPPED``, ``ERROR``, ``XFAIL``), as
    the official parser reads ``log``, in a helper process (:mod:`~intercode.swe.logparse`):
    :class:`ParseFailed` when it fails or takes longer than ``timeout`` seconds."""
    from intercode.swe import logparse

    _parser_fn(parser)
    spec = {"instance_id": task.task_id, "repo": task.repo, "version": task.version,
            "FAIL_TO_PASS": list(task.fail_to_pass), "PASS_TO_PASS": list(task.pass_to_pass)}
    try:
        return logparse.parse(parser, log, spec, timeout)
    except logparse.Overrun as exc:  # a log the parser chokes on scores 0
        raise ParseFailed(str(exc)[:300]) from None
    except logparse.ParserGone as exc:
        raise ConfigError(f"{exc}; {INSTALL_HINT}") from None
