"""A hostile agent against the SWE environment's scoring: every attack below hands in a
patch that fixes nothing, and must score 0 (never 1.0, never an error of the run).

The agent's diff is its own business (it can put any ``git`` first on its ``PATH``), so
the patch text is hostile, and so is every file it adds to the scoring tree."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backends import backends
from swe_helpers import NEEDS_SWEBENCH, step, swe_env

from intercode.datasets.swe import SweTask, load, load_instances
from intercode.envs.swe import SweEnv
from intercode.errors import ConfigError
from intercode.swe import grading, patches, specs

pytestmark = NEEDS_SWEBENCH

# a module that loads the real unittest and makes every test method a no-op ("ok")
NO_OP_TESTS = '''import sys, os
_saved = list(sys.path)
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.modules.pop("unittest", None)
import unittest.case
sys.path[:] = _saved
unittest.case.TestCase._callTestMethod = lambda self, m: None
'''


@pytest.fixture(scope="module", params=backends())
def env(request: pytest.FixtureRequest) -> Iterator[SweEnv]:
    yield from swe_env(request.param)


def heredoc(path: str, text: str) -> str:
    return f"cat > {path} <<'INTERCODE_EOF'\n{text}INTERCODE_EOF"


def hand_in(env: SweEnv, patch: str) -> str:
    """The agent's ``git diff`` replaced by one printing ``patch`` (a ``git`` of its own
    first on the ``PATH``): what ``submit`` hands in is then any text."""
    step(env, "mkdir -p /opt/venv/bin && " + heredoc("/tmp/hand-in.patch", patch))
    step(env, "printf '#!/bin/sh\\ncase \"$1\" in diff) cat /tmp/hand-in.patch;; "
              "*) exec /usr/bin/git \"$@\";; esac\\n' > /opt/venv/bin/git "
              "&& chmod +x /opt/venv/bin/git")
    return env.current_patch()[0]


def test_a_top_level_bytecode_module_named_unittest_is_dropped(env: SweEnv) -> None:
    """``unittest.pyc`` at the top level is what ``python3 -m unittest`` runs (a
    sourceless module is imported like a ``.py``): it was not a protected path."""
    env.reset(options={"task": 2})
    step(env, heredoc("/tmp/u.py", NO_OP_TESTS + "import runpy\nrunpy.run_module("
                      "'unittest', run_name='__main__', alter_sys=True)\n"))
    step(env, "python3 -c \"import py_compile; py_compile.compile('/tmp/u.py', "
              "cfile='unittest.pyc', doraise=True)\" && git add -f unittest.pyc")
    assert "unittest.pyc" in env.current_patch()[0]
    _, reward, info = step(env, "submit")
    assert reward == 0.0, info
    assert "unittest.pyc" in info["dropped_paths"]
    assert info["fail_to_pass"] == 0.0


def test_a_top_level_module_named_like_the_standard_library_is_dropped(env: SweEnv) -> None:
    """``argparse.py`` beside the tests is imported by ``unittest.main`` before any test."""
    env.reset(options={"task": 2})
    step(env, heredoc("argparse.py", NO_OP_TESTS.replace('"unittest"', '"argparse"')
                      .replace("import unittest.case", "import argparse, unittest.case")
                      + "sys.modules[__name__] = argparse\n"))
    _, reward, info = step(env, "submit")
    assert reward == 0.0, info
    assert "argparse.py" in info["dropped_paths"]


def test_a_section_hidden_from_the_splitter_and_ignored_by_git_scores_zero(
        env: SweEnv) -> None:
    """A plain ``---``/``+++`` section after a git section's hunk: ``git apply`` applies
    it, the splitter read it as part of the section before; a ``.gitignore`` line in the
    same patch kept the new package out of the check by ``git status``."""
    body = "".join("+" + line + "\n" for line in NO_OP_TESTS.splitlines())
    patch = ("diff --git a/.gitignore b/.gitignore\n--- a/.gitignore\n+++ b/.gitignore\n"
             "@@ -2,3 +2,4 @@\n *.py[cod]\n *.egg-info/\n build/\n+unittest/\n"
             "--- /dev/null\n+++ b/unittest/__init__.py\n"
             f"@@ -0,0 +1,{len(NO_OP_TESTS.splitlines())} @@\n{body}")
    assert patches.filter_patch(patch)[1] == []  # the splitter does not see it
    env.reset(options={"task": 2})
    assert hand_in(env, patch) == patch
    _, reward, info = step(env, "submit")
    assert reward == 0.0, info
    assert "protected paths" in info["reason"] and "unittest/__init__.py" in info["reason"]


def test_an_ignored_protected_file_is_seen_by_the_status_check(env: SweEnv) -> None:
    """The last check (the scoring tree's own ``git status``) lists ignored files too."""
    env.reset(options={"task": 2})
    tree, layout = env._tree(env.task)  # type: ignore[arg-type]
    box = env._scoring_sandbox(layout)
    box.load(tree)
    box.exec(["/bin/bash", "-c", "echo unittest/ >> .gitignore && mkdir unittest "
                                 "&& touch unittest/__init__.py"], cwd="/testbed")
    seen = env._changed_paths(box)
    assert seen is not None and "unittest/__init__.py" in seen


def test_the_test_commands_runner_script_is_protected() -> None:
    """SymPy's tests run as ``bin/test``: a patch rewriting it (to print every test as
    ``ok``) decides the score, as a test file would."""
    task = SweTask(index=0, query="q", gold="", dataset="d", source="s", source_index=0,
                   task_id="sympy__sympy-1", repo="sympy/sympy",
                   base_commit="0" * 40, test_patch="", fail_to_pass=("test_x",),
                   version="1.12")
    command = specs.plan(task).command
    assert "bin/test" in command
    runner = patches.runner_paths(command)
    rewrite = ("diff --git a/bin/test b/bin/test\n--- a/bin/test\n+++ b/bin/test\n"
               "@@ -1 +1 @@\n-#!/usr/bin/env python\n+#!/bin/sh\n")
    shadow = rewrite.replace("bin/test", "bin/argparse.py")
    code = rewrite.replace("bin/test", "sympy/core/add.py")
    kept, dropped = patches.filter_patch(rewrite + shadow + code, runner)
    assert kept == code and dropped == ["bin/test", "bin/argparse.py"]
    assert patches.runner_paths("./tests/runtests.py --verbosity 2") == ("tests/runtests.py",)
    assert patches.runner_paths("python3 -u scripts/run.py x/y.py") == ("scripts/run.py",)
    assert patches.runner_paths("python3 -m unittest -v; pytest -rA a/b.py") == ()


def test_an_ok_printed_by_the_code_under_test_does_not_pass_a_failing_test(
        env: SweEnv) -> None:
    """The function stays broken and writes ``ok`` to stderr: unittest's
    ``name ... FAIL`` became ``name ... ok`` then ``FAIL``, and the summary's
    ``FAIL: name`` is keyed by the short name in the official parser, so the log had a
    failure (no distrust from the exit status) and the test read as passed."""
    env.reset(options={"task": 2})
    step(env, heredoc("/tmp/extra.py", "\n_broken = title_case\n\n\ndef title_case(text):\n"
                      "    import sys\n    sys.stderr.write('ok\\n')\n    sys.stderr.flush()\n"
                      "    return _broken(text)\n"))
    step(env, "cat /tmp/extra.py >> textkit/words.py")
    _, reward, info = step(env, "submit")
    assert reward == 0.0, info
    assert info["tests"]["test_mixed_case (tests.test_words.TitleCaseTest.test_mixed_case)"] \
        == "FAILED"


def test_a_passed_line_printed_after_pytests_summary_does_not_override_its_failure() -> None:
    """An ``atexit`` print of ``PASSED name`` after ``FAILED name - ...``: the official
    pytest parser keeps the last word; another failing test keeps the exit status
    consistent with the log."""
    task = SweTask(index=0, query="q", gold="", dataset="d", source="s", source_index=0,
                   task_id="a__b-1", repo="a/b", base_commit="0" * 40, test_patch="",
                   fail_to_pass=("tests/test_a.py::test_new",),
                   pass_to_pass=("tests/test_a.py::test_old",))
    log = ("=== short test summary info ===\nPASSED tests/test_a.py::test_old\n"
           "FAILED tests/test_a.py::test_new - assert 1 == 2\n"
           "FAILED tests/test_a.py::test_always_broken - OSError\n"
           "=== 2 failed, 1 passed in 0.1s ===\nPASSED tests/test_a.py::test_new\n")
    statuses = specs.parse_log(log, task, "pytest")
    assert statuses["tests/test_a.py::test_new"] == "PASSED"  # the parser's reading
    statuses.update(grading.failures_shown(log, task.fail_to_pass + task.pass_to_pass))
    verdict = grading.grade(statuses, task.fail_to_pass, task.pass_to_pass, 1)
    assert not verdict.resolved and verdict.failing == ["tests/test_a.py::test_new"]


def test_an_ok_printed_into_a_docstring_tests_line_does_not_pass_it() -> None:
    """Django's tests with a docstring are named by its first line (``Docstring ...
    ok``); the failure header names the method, with the docstring on the line under it."""
    name = "A regression test for the new behaviour."
    task = SweTask(index=0, query="q", gold="", dataset="d", source="s", source_index=0,
                   task_id="a__b-1", repo="a/b", base_commit="0" * 40, test_patch="",
                   fail_to_pass=(name,))
    log = (f"test_new (app.tests.T.test_new)\n{name} ... ok\nFAIL\n"
           "test_broken (app.tests.T.test_broken) ... FAIL\n" + "=" * 70 + "\n"
           "FAIL: test_new (app.tests.T.test_new)\n" f"{name}\n" + "-" * 70 + "\n"
           "AssertionError: 1 != 2\n\nFAILED (failures=2)\n")
    statuses = specs.parse_log(log, task, "django")
    assert statuses[name] == "PASSED"  # the parser's reading
    statuses.update(grading.failures_shown(log, task.fail_to_pass))
    assert not grading.grade(statuses, task.fail_to_pass, (), 1).resolved


@pytest.mark.parametrize(("field", "value"), [
    ("test_cmd", "python3 -m unittest -v # \ud800"),
    ("test_patch", "diff --git a/x b/x\n\udcff\n"),
    ("problem_statement", "fix \ud800 it"),
    ("FAIL_TO_PASS", ["test_x \ud800"]),
    ("FAIL_TO_PASS", "[" * 100_000 + "]" * 100_000),
])
def test_a_hostile_task_file_is_refused_on_load_in_one_line(
        tmp_path: Path, field: str, value: Any) -> None:
    """A lone surrogate (``"\\ud800"`` in JSON) loaded, then the scoring raised
    ``UnicodeEncodeError`` (the test patch) or a ``SandboxError`` (the test command): an
    error of the run; a deeply nested ``FAIL_TO_PASS`` text raised ``RecursionError``."""
    row = load("swe-demo")[0].instance()  # type: ignore[attr-defined]
    row.update({"test_cmd": "python3 -m unittest -v", "log_parser": "django", field: value})
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_instances(path)
    assert f'field "{field}"' in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("path", [".pytest.ini", "pytest.toml", ".pytest.toml", "tox.toml"])
def test_runner_configuration_files_of_every_name_are_protected(path: str) -> None:
    """pytest reads ``.pytest.ini`` before ``pyproject.toml``, ``tox.ini`` and
    ``setup.cfg`` in the same folder (so a new one replaced the repository's settings:
    its ``filterwarnings = error``, its plugins), newer pytest ``pytest.toml``, tox 4
    ``tox.toml``."""
    patch = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
             f"+++ b/{path}\n@@ -0,0 +1,2 @@\n+[pytest]\n+addopts = -p textkit.plugin\n")
    kept, dropped = patches.filter_patch(patch)
    assert kept == "" and path in dropped


@pytest.mark.timeout(120)  # a hang guard: the parser took about 15 minutes on this log
def test_a_log_the_parser_is_quadratic_on_scores_zero_in_bounded_time(env: SweEnv) -> None:
    """The code under test prints 60,000 ``t ... Testing against Django installed in``
    lines: the Django parser's multi-line pattern scans to the end of the log from each
    (quadratic), on the host, with no time bound; a 16 MiB log would take days."""
    env.reset(options={"task": 2})
    step(env, heredoc("/tmp/extra.py", "\nimport sys\nsys.stderr.write('t ... Testing "
                      "against Django installed in x\\n' * 60_000)\n"))
    step(env, "cat /tmp/extra.py >> textkit/__init__.py")
    env.parse_timeout = 5.0
    try:
        _, reward, info = step(env, "submit")
    finally:
        env.parse_timeout = specs.PARSE_TIMEOUT
    assert reward == 0.0 and "took too long" in info["reason"], info


@pytest.mark.timeout(120)  # a hang guard
def test_the_sympy_parser_on_one_long_line_is_refused_in_bounded_time() -> None:
    """SymPy's parser runs ``(_*) (.*)\\.py:(.*) (_*)`` over the log: one line of a
    million spaces takes it days."""
    task = load("swe-demo")[0]
    assert isinstance(task, SweTask)
    with pytest.raises(specs.ParseFailed, match="took too long"):
        specs.parse_log("a " * 1_000_000, task, "sympy", timeout=3)
    assert specs.parse_log("test_x ok\n", task, "sympy") == {"test_x": "PASSED"}
