"""The markers tests/conftest.py gives each test from what it uses (what ``-m`` and
``scripts/test --quick`` select by), checked on real modules of the suite."""

from __future__ import annotations

import os
import subprocess
import sys

from checks import ROOT

PLUGIN = '''
KNOWN = {"sandbox", "docker", "mysql", "browser", "ray", "network", "lint", "slow"}


def pytest_collection_finish(session):
    for item in session.items:
        names = sorted({m.name for m in item.iter_markers()} & KNOWN)
        print("MARKS\t" + item.nodeid + "\t" + ",".join(names))
'''
MODULES = ["tests/unit/test_lint.py", "tests/unit/test_tfidf.py", "tests/unit/test_testing.py",
           "tests/adversarial/test_mysql.py", "tests/contract/test_sandbox_contract.py",
           "tests/report/test_report_browser.py", "tests/ray/test_env_pool.py",
           "tests/integration/test_clean_install.py", "tests/integration/test_replay.py"]


def collected_marks(tmp_path, *args: str, modules: list[str] = MODULES) -> dict[str, set[str]]:
    (tmp_path / "dump_marks.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]),
        "INTERCODE_SANDBOX_BACKENDS": "bwrap,docker"}
    env.pop("INTERCODE_TEST_SANDBOX", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "dump_marks", *args, *modules],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    marks = {}
    for line in proc.stdout.splitlines():
        if line.startswith("MARKS\t"):
            _, nodeid, names = line.split("\t", 2)
            marks[nodeid] = set(filter(None, names.split(",")))
    return marks


def where(marks: dict[str, set[str]], prefix: str) -> list[set[str]]:
    found = [names for nodeid, names in marks.items() if nodeid.startswith(prefix)]
    assert found, prefix
    return found


def test_each_test_is_marked_by_what_it_uses(tmp_path):
    marks = collected_marks(tmp_path)
    assert all(m == {"lint"} for m in where(marks, "tests/unit/test_lint.py::"))
    # a pure unit test gets none; one that checks the built-ins' sandboxes gets sandbox
    assert all(m == set() for m in where(marks, "tests/unit/test_tfidf.py::"))
    assert where(marks, "tests/unit/test_testing.py::test_check_sandbox_passes_on_bwrap") == [
        {"sandbox"}]
    assert all({"mysql", "sandbox"} <= m and "docker" not in m
               for m in where(marks, "tests/adversarial/test_mysql.py::"))
    assert where(marks, "tests/integration/test_replay.py::test_upstream_gpt35_sql_fidelity[mysql]"
                 ) == [{"mysql", "sandbox"}]
    contract = "tests/contract/test_sandbox_contract.py::test_shell_death_is_survived"
    assert where(marks, contract + "[bwrap-exit 3]") == [{"sandbox"}]
    assert where(marks, contract + "[docker-exit 3]") == [{"docker", "sandbox"}]
    assert where(marks, "tests/report/test_report_browser.py::test_a_whole_spider_run") == [
        {"browser", "sandbox", "slow"}]
    assert all("ray" in m for m in where(marks, "tests/ray/test_env_pool.py::"))
    assert all({"network", "slow"} <= m
               for m in where(marks, "tests/integration/test_clean_install.py::"))


def test_the_quick_selection_leaves_out_what_needs_a_service(tmp_path):
    marks = collected_marks(tmp_path, "-m",
                            "not (docker or mysql or browser or ray or network or slow or lint)",
                            modules=MODULES[:5])
    assert marks and not any(m & {"docker", "mysql", "browser", "ray", "network", "slow", "lint"}
                             for m in marks.values())
    assert "tests/contract/test_sandbox_contract.py::test_shell_death_is_survived[bwrap-exit 3]" in marks
    assert not any(nodeid.startswith("tests/unit/test_lint.py") for nodeid in marks)
