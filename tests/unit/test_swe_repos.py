"""Repository clones for SWE tasks: cached once per repository, from a GitHub-like server,
with the token in an HTTP header that never lands in a file or a message."""

from __future__ import annotations

import base64
import http.server
import subprocess
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import ClassVar

import pytest

from intercode.datasets.swe import demo_repository
from intercode.errors import DatasetError
from intercode.swe import repos

TOKEN = "tok-Secret-9f2c"


class Recording(http.server.SimpleHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Recording.seen.append(self.headers.get("Authorization", ""))
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    demo = demo_repository()
    source = repos.repo_path(demo["repo"], demo["base_commit"])  # the bundled one, built
    served = tmp_path / "srv" / "octo" / "pkg.git"
    served.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(served)], check=True)
    subprocess.run(["git", "update-server-info"], cwd=served, check=True)  # dumb HTTP
    handler = partial(Recording, directory=str(tmp_path / "srv"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("INTERCODE_GITHUB_URL", f"http://127.0.0.1:{httpd.server_port}")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    Recording.seen = []
    try:
        yield demo["base_commit"]
    finally:
        httpd.shutdown()


def test_a_clone_is_cached_once_with_the_token_only_in_its_header(server: str,
                                                                  tmp_path: Path) -> None:
    path = repos.repo_path("octo/pkg", server)
    assert path == tmp_path / "cache" / "repos" / "octo__pkg.git"
    expected = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert Recording.seen
    for header in Recording.seen:
        scheme, _, value = header.partition(" ")
        assert scheme.lower() == "basic" and value == expected
    asked = len(Recording.seen)
    assert repos.repo_path("octo/pkg", server) == path and len(Recording.seen) == asked
    tree = repos.testbed_tree("octo/pkg", server)
    assert any(e.path == "testbed/textkit/words.py" for e in tree.entries)
    secret_b64 = base64.b64encode(f"x-access-token:{TOKEN}".encode())
    for file in (tmp_path / "cache").rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert TOKEN.encode() not in data and secret_b64 not in data, file


def test_a_failed_clone_is_one_line_without_the_token(server: str) -> None:
    with pytest.raises(DatasetError) as err:
        repos.repo_path("octo/missing", server)
    assert TOKEN not in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["../etc", "octo/../../x", "octo/pkg/extra", "octo/.."])
def test_repository_names_cannot_leave_the_cache(name: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path))
    with pytest.raises(DatasetError):
        repos.repo_path(name, "a" * 40)


def test_a_mirror_is_read_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    demo = demo_repository()
    source = repos.repo_path(demo["repo"], demo["base_commit"])
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(mirror / "octo__pkg.git")],
                   check=True)
    before = sorted(p.name for p in (mirror / "octo__pkg.git").rglob("*"))
    assert repos.repo_path("octo/pkg", demo["base_commit"], mirror) == mirror / "octo__pkg.git"
    repos.testbed_tree("octo/pkg", demo["base_commit"], mirror)
    assert sorted(p.name for p in (mirror / "octo__pkg.git").rglob("*")) == before
    with pytest.raises(DatasetError, match="has no commit"):
        repos.repo_path("octo/pkg", "b" * 40, mirror)
    with pytest.raises(DatasetError, match="not in the repository mirror"):
        repos.repo_path("octo/other", demo["base_commit"], mirror)
