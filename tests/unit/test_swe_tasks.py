"""SWE tasks on the host: task files, the test-file policy, grading, pinned downloads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from intercode.datafiles import DataFile
from intercode.datasets.swe import SweTask, load, load_instances
from intercode.errors import ConfigError, DatasetError
from intercode.fetch import blob_id, fetch_file
from intercode.swe import grading, patches

BASE = "a" * 40


def row(**extra: object) -> dict[str, object]:
    found: dict[str, object] = {
        "instance_id": "octo__pkg-1", "repo": "octo/pkg", "base_commit": BASE,
        "problem_statement": "it breaks", "patch": "", "test_patch": "diff --git a/t b/t\n",
        "FAIL_TO_PASS": json.dumps(["tests/test_a.py::test_x"]), "PASS_TO_PASS": "[]",
        "version": "1.0", "environment_setup_commit": BASE}
    found.update(extra)
    return found


def test_demo_dataset_has_three_tasks_with_gold_patches() -> None:
    ds = load("swe-demo")
    assert ds.env == "swe" and len(ds) == 3
    for task in ds:
        assert isinstance(task, SweTask)
        assert task.gold.startswith("diff --git") and task.test_patch.startswith("diff --git")
        assert task.fail_to_pass and task.pass_to_pass


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_swe_bench_instance_files_load_as_they_are(tmp_path: Path, layout: str) -> None:
    rows = [row(), row(instance_id="octo__pkg-2", version=3.1, image="swebench/x:latest",
                       FAIL_TO_PASS=["a", "b"]),
            row(instance_id="octo__pkg-3", image_name="swesmith.x86_64.octo__pkg.a1b2c3")]
    path = tmp_path / f"tasks.{layout}"
    text = (json.dumps(rows) if layout == "json"
            else "\n".join(json.dumps(r) for r in rows) + "\n")
    path.write_text(text)
    ds = load_instances(path)
    first, second, third = ds.tasks
    assert isinstance(third, SweTask) and third.image == "swesmith.x86_64.octo__pkg.a1b2c3"
    assert isinstance(first, SweTask) and isinstance(second, SweTask)
    assert first.fail_to_pass == ("tests/test_a.py::test_x",)  # SWE-bench's JSON text
    assert second.fail_to_pass == ("a", "b") and second.version == "3.1"
    assert second.image == "swebench/x:latest" and first.category == "octo/pkg"
    assert ds.revision == hashlib.sha256(path.read_bytes()).hexdigest()


def test_seed_transform_rows_are_read(tmp_path: Path) -> None:
    seed = {"query": "it breaks", "task_id": "octo__pkg-7", "base_commit": BASE,
            "repo": "octo/pkg", "tests": {"patch": "diff --git a/t b/t\n",
                                          "FAIL_TO_PASS": '["t1"]', "PASS_TO_PASS": '["t2"]'},
            "version": "0.4", "environment_setup_commit": BASE}
    path = tmp_path / "ic.json"
    path.write_text(json.dumps([seed]))
    task = load_instances(path).tasks[0]
    assert isinstance(task, SweTask)
    assert (task.task_id, task.gold, task.fail_to_pass, task.pass_to_pass) == \
        ("octo__pkg-7", "", ("t1",), ("t2",))


@pytest.mark.parametrize(("change", "said"), [
    ({"repo": "../../etc"}, 'field "repo"'),
    ({"base_commit": "HEAD; rm -rf /"}, 'field "base_commit"'),
    ({"instance_id": "a/../b"}, 'field "instance_id"'),
    ({"FAIL_TO_PASS": "[]"}, 'field "FAIL_TO_PASS"'),
    ({"FAIL_TO_PASS": ["ok", "two\nlines"]}, 'field "FAIL_TO_PASS"'),
    ({"FAIL_TO_PASS": "not json"}, 'field "FAIL_TO_PASS"'),
    ({"PASS_TO_PASS": {"a": 1}}, 'field "PASS_TO_PASS"'),
    ({"problem_statement": 5}, 'field "problem_statement"'),
    ({"log_parser": "../os"}, 'field "log_parser"'),
    ({"pip_packages": ["ok", "$(curl evil)"]}, 'field "pip_packages"'),
])
def test_bad_rows_are_one_line_errors(tmp_path: Path, change: dict[str, object],
                                      said: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row(**change)) + "\n")
    with pytest.raises(ConfigError) as err:
        load_instances(path)
    message = str(err.value)
    assert said in message and "\n" not in message and f"{path}:1" in message


def test_duplicate_ids_and_non_objects_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(row()) + "\n" + json.dumps(row()) + "\n")
    with pytest.raises(ConfigError, match="duplicate instance_id"):
        load_instances(path)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_instances(path)


# -- the test-file policy ------------------------------------------------------------------


def section(path: str, new: str = "x = 1") -> str:
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1 +1 @@\n-x = 0\n+{new}\n")


@pytest.mark.parametrize("path", [
    "tests/test_a.py", "src/pkg/testing/util.py", "conftest.py", "sub/conftest.py",
    "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "unittest.py", "_pytest/x.py",
    "sitecustomize.py", "lib/usercustomize.py", "evil.pth", "e2e/run.py", "TESTS/X.py",
    "pkg/test_util.py", "pkg/util_test.py", "./tests/x", "a//tests/b.py",
    ".git/hooks/pre-commit", "sub/.git/config", "../outside.py", "a/../../b.py", ""])
def test_protected_paths(path: str) -> None:
    assert patches.is_protected(path)


@pytest.mark.parametrize("path", ["src/pkg/core.py", "README.md", "setup.py", "docs/a.rst",
                                  "src/_pytest/unittest.py", "src/attestation.py",
                                  "pkg/testament.py", "requests/models.py"])
def test_code_paths_are_not_protected(path: str) -> None:
    assert not patches.is_protected(path)


def test_filter_drops_protected_sections_and_keeps_the_rest() -> None:
    patch = section("src/pkg/core.py") + section("tests/test_core.py") + section("setup.cfg")
    kept, dropped = patches.filter_patch(patch)
    assert kept == section("src/pkg/core.py")
    assert dropped == ["tests/test_core.py", "setup.cfg"]


def test_renames_and_quoted_paths_are_seen() -> None:
    rename = ("diff --git a/src/a.py b/tests/a.py\nsimilarity index 100%\n"
              "rename from src/a.py\nrename to tests/a.py\n")
    quoted = ('diff --git "a/tests/t\\303\\251st.py" "b/tests/t\\303\\251st.py"\n'
              '--- "a/tests/t\\303\\251st.py"\n+++ "b/tests/t\\303\\251st.py"\n'
              '@@ -1 +1 @@\n-a\n+b\n')
    kept, dropped = patches.filter_patch(rename + quoted)
    assert kept == "" and "tests/a.py" in dropped and "tests/tést.py" in dropped


def test_plain_unified_diffs_are_split_too() -> None:
    plain = ("--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-a\n+b\n"
             "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n")
    kept, dropped = patches.filter_patch(plain)
    assert dropped == ["tests/test_a.py"] and kept.startswith("--- a/src/a.py")


# -- grading ----------------------------------------------------------------------------------


def test_resolved_needs_every_listed_test_to_pass() -> None:
    sm = {"f": "PASSED", "p1": "PASSED", "p2": "FAILED", "other": "FAILED"}
    assert not grading.grade(sm, ("f",), ("p1", "p2"), 1).resolved
    verdict = grading.grade(sm, ("f",), ("p1",), 1)
    assert verdict.resolved and verdict.info()["status"] == "RESOLVED_FULL"


def test_skipped_fail_to_pass_is_a_failure_and_missing_tests_fail() -> None:
    verdict = grading.grade({"f": "SKIPPED", "p": "SKIPPED", "x": "FAILED"}, ("f",), ("p",), 1)
    assert not verdict.resolved and verdict.f2p_passed == 0 and verdict.p2p_passed == 1
    assert not grading.grade({}, ("f",), (), 0).resolved


def test_a_failing_command_whose_log_shows_no_failure_is_not_trusted() -> None:
    verdict = grading.grade({"f": "PASSED"}, ("f",), (), 1)
    assert not verdict.resolved and "cannot be trusted" in verdict.reason
    assert grading.grade({"f": "PASSED"}, ("f",), (), 0).resolved


# -- files pinned by their git blob id --------------------------------------------------------


def test_a_blob_pinned_file_is_checked_by_its_blob_id(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'[{"task_id": "x"}]\n'
    (tmp_path / "swe-bench").mkdir()
    (tmp_path / "swe-bench" / "f.json").write_bytes(data)
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(tmp_path))
    good = DataFile("data/swe-bench/f.json", "swe-bench/f.json", "", 0, blob=blob_id(data))
    assert fetch_file(good).read_bytes() == data
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob
    bad = DataFile("data/swe-bench/f.json", "swe-bench/f.json", "", 0, blob="0" * 40)
    with pytest.raises(DatasetError, match="does not match the pinned revision"):
        fetch_file(bad)


def test_a_blob_pinned_file_is_downloaded_and_checked(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import http.server
    import threading
    from functools import partial

    data = b'[{"task_id": "x"}]\n'
    served = tmp_path / "srv" / "data" / "swe-bench"
    served.mkdir(parents=True)
    (served / "f.json").write_bytes(data)
    (served / "g.json").write_bytes(b"tampered")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "srv"))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("INTERCODE_DATA_MIRROR", raising=False)
        monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("INTERCODE_DATA_URL", f"http://127.0.0.1:{httpd.server_port}")
        good = DataFile("data/swe-bench/f.json", "swe-bench/f.json", "", 0, blob=blob_id(data))
        path = fetch_file(good)
        assert path.read_bytes() == data and str(path).startswith(str(tmp_path / "cache"))
        bad = DataFile("data/swe-bench/g.json", "swe-bench/g.json", "", 0, blob=blob_id(data))
        with pytest.raises(DatasetError, match="does not have the pinned content"):
            fetch_file(bad)
    finally:
        httpd.shutdown()


def test_the_seed_file_absent_from_a_mirror_is_unavailable_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from intercode.errors import DataUnavailable

    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataUnavailable, match=r"ic_swe_bench\.json"):
        load("ic-swe-bench")


def test_environments_that_cannot_be_built_here_say_why(tmp_path: Path) -> None:
    pytest.importorskip("swebench")
    from intercode.sandbox.layout import Layout
    from intercode.swe import build

    rows = [row(instance_id="x__js-1", repo="axios/axios", version="5892"),
            row(instance_id="x__xr-1", repo="pydata/xarray", version="0.12")]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js, xr = load_instances(path).tasks
    layout = Layout(rootfs=tmp_path)
    for task, why in ((js, "not a Python repository"), (xr, "conda environment.yml")):
        with pytest.raises(build.BuildError, match=why):
            build.build_env(task, "bwrap", layout, mirror=str(tmp_path / "none"))
