"""The APPS dataset: its file pinned by git blob id, downloaded and verified; its loader.

``ic_apps.json`` is not in the local mirror: the tests serve a file they make over HTTP,
pinned once by that file's own blob id (right) and once by the real one (wrong).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from apps_helpers import PROBLEMS, write_file
from upstream_server import serve_files

from intercode import fetch
from intercode.datafiles import FILES
from intercode.datasets import registry
from intercode.datasets.apps import AppsTask, load
from intercode.datasets.registry import dataset_names, load_dataset
from intercode.errors import DatasetError, DataUnavailable

PINNED = "32264df6ccc121f6acb5753f54e6bc91e696f258"


@pytest.fixture()
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[bytes, list[str]]]:
    """The test-made file served as upstream's ``data/python/apps/ic_apps.json``."""
    root = tmp_path / "upstream"
    data = write_file(root / FILES["apps"].upstream)
    monkeypatch.delenv("INTERCODE_DATA_MIRROR", raising=False)
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    with serve_files(root) as upstream:
        monkeypatch.setenv("INTERCODE_DATA_URL", upstream.url)
        registry._load_registered.cache_clear()
        try:
            yield data, upstream.requests
        finally:
            registry._load_registered.cache_clear()


def test_the_file_is_pinned_by_its_blob_id() -> None:
    spec = FILES["apps"]
    assert (spec.upstream, spec.blob, spec.sha256) == ("data/python/apps/ic_apps.json", PINNED, "")
    assert "apps" in dataset_names("python")


def test_a_download_with_the_right_blob_id_loads(served: tuple[bytes, list[str]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    data, requests = served
    monkeypatch.setitem(FILES, "apps", dataclasses.replace(FILES["apps"],
                                                           blob=fetch.blob_id(data)))
    ds = load_dataset("apps")
    assert len(ds) == len(PROBLEMS)  # whatever count the file has
    assert requests == ["/data/python/apps/ic_apps.json"]
    first = ds[0]
    assert isinstance(first, AppsTask) and first.category == "introductory"
    assert [t.category for t in ds] == ["introductory", "interview", "competition", "interview"]
    assert first.test_input(3) == "20 20\n" and first.test_output(3) == ["40"]
    second = ds[1]
    assert isinstance(second, AppsTask)
    assert second.fn_name == "add" and second.test_input(0) == [1, 2]
    assert "solution.py" in first.query and "standard input" in first.query
    assert "`add`" in ds[1].query
    assert len(load("apps")) == len(PROBLEMS) and len(requests) == 1  # cached, verified


def test_a_download_with_the_wrong_blob_id_is_refused(served: tuple[bytes, list[str]],
                                                      tmp_path: Path) -> None:
    _, requests = served
    with pytest.raises(DatasetError, match="pinned content"):
        load_dataset("apps")
    assert requests == ["/data/python/apps/ic_apps.json"]
    assert not list((tmp_path / "cache").rglob("ic_apps.json"))


def test_a_mirror_without_the_file_says_what_to_do(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataUnavailable, match=r"ic_apps\.json is missing"):
        load("apps")


BAD = [
    ({}, "non-empty JSON list"),
    ([], "non-empty JSON list"),
    ([1], "not an object"),
    ([{"query": "q", "gold": ""}], "'query' and 'gold'"),
    ([{"query": "q", "gold": "x", "input_output": []}], "'input_output' object"),
    ([{"query": "q", "gold": "x", "input_output": {"inputs": ["1"], "outputs": []}}],
     "as many 'inputs'"),
    ([{"query": "q", "gold": "x", "input_output": {"inputs": [1], "outputs": [1]}}],
     "must be text"),
    ([{"query": "q", "gold": "x",
       "input_output": {"inputs": [[1]], "outputs": [1], "fn_name": "a b"}}], "fn_name"),
]


@pytest.mark.parametrize(("content", "message"), BAD)
def test_a_malformed_file_is_a_clear_error(content: object, message: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ic_apps.json"
    path.write_text(json.dumps(content))
    monkeypatch.setattr("intercode.datasets.apps.data_file", lambda key: path)
    with pytest.raises(DatasetError, match=re.escape(message)):
        load("apps")
