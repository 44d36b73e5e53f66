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
        groups = [m.args[0] for m in item.iter_markers("parallel_group")]
        print("MARKS\t" + item.nodeid + "\t" + ",".join(names) + "\t" + ",".join(groups))
'''
MODULES = ["tests/unit/test_lint.py", "tests/unit/test_tfidf.py", "tests/unit/test_testing.py",
           "tests/adversarial/test_mysql.py", "tests/contract/test_sandbox_contract.py",
           "tests/report/test_report_browser.py", "tests/ray/test_env_pool.py",
           "tests/integration/test_clean_install.py", "tests/integration/test_replay.py"]


def collected(tmp_path, *args: str, modules: list[str] = MODULES
              ) -> dict[str, tuple[set[str], list[str]]]:
    """Each collected test's markers (of KNOWN) and xdist groups."""
    (tmp_path / "dump_marks.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]),
        "INTERCODE_SANDBOX_BACKENDS": "bwrap,docker"}
    env.pop("INTERCODE_TEST_SANDBOX", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "dump_marks", *args, *modules],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith("MARKS\t"):
            _, nodeid, names, groups = line.split("\t", 3)
            found[nodeid] = (set(filter(None, names.split(","))), groups.split(","))
    return found


def collected_marks(tmp_path, *args: str, modules: list[str] = MODULES) -> dict[str, set[str]]:
    return {nodeid: names for nodeid, (names, _) in collected(tmp_path, *args,
                                                              modules=modules).items()}


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


def test_each_test_has_one_parallel_group_its_shared_resource_or_its_module(tmp_path):
    groups = {nodeid: found[1] for nodeid, found in collected(tmp_path).items()}
    assert all(len(g) == 1 for g in groups.values()), groups

    def of(prefix: str) -> set[str]:
        return set().union(*where({n: set(g) for n, g in groups.items()}, prefix))

    assert of("tests/ray/test_env_pool.py::") == {"ray"}
    assert of("tests/adversarial/test_mysql.py::") == {"mysql"}
    assert of("tests/integration/test_replay.py::test_upstream_gpt35_sql_fidelity[mysql]") == {
        "mysql"}
    assert of("tests/report/test_report_browser.py::test_a_whole_spider_run") == {"browser"}
    assert of("tests/contract/test_sandbox_contract.py::test_shell_death_is_survived[") == {
        "tests/contract/test_sandbox_contract.py"}  # both backends: the module's fixtures
    assert of("tests/unit/test_tfidf.py::") == {"tests/unit/test_tfidf.py"}
