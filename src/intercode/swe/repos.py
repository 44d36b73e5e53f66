"""Repositories of SWE tasks: one bare clone per repository, and the tree of ``/testbed``.

Clones live once per repository in ``$INTERCODE_CACHE/repos/<owner>__<name>.git`` (bare,
shared by every instance); a commit they lack is fetched. ``repo_mirror`` (``--repo-mirror
DIR``) names a folder of local clones instead (``DIR/<owner>__<name>[.git]``,
``DIR/<owner>/<name>[.git]`` or ``DIR/<name>[.git]``), read and never written: the
offline way. With neither, clones come from GitHub (``$INTERCODE_GITHUB_URL``, default
``https://github.com``: a GitHub Enterprise server, a local mirror server), with
``$GITHUB_TOKEN`` when set: the token goes to git in its environment (an HTTP header for
that server only), never into a command line, a file, a record or a message. The
bundled ``swe-demo`` repository is made from the package's files, the same commit on
every machine.

``/testbed`` (:func:`testbed_tree`) is the repository at the task's base commit, with a
``.git`` that holds that one commit and nothing later (a shallow fetch: no future fix
in its history, no remote, no tags), every time stamp the same. It is built once per
commit and kept as a tar archive in ``$INTERCODE_CACHE/swe/testbeds``.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from intercode.datasets.swe import demo_repository
from intercode.errors import DatasetError
from intercode.fsutil import cache_dir, write_atomic
from intercode.sandbox.filetree import DIR, FILE, LINK, Entry, FileTree
from intercode.sandbox.layout import EPOCH_NS

__all__ = ["GIT_IDENTITY", "TESTBED", "clean_git_env", "github_url", "repo_path", "testbed_tree",
           "tree_of_folder"]

TESTBED = "testbed"
GIT_TIMEOUT = 1800.0  # a first clone of a large repository
MAX_TREE_FILES = 200_000
MAX_TREE_BYTES = 2 << 30
GIT_IDENTITY = (("user.name", "agent"), ("user.email", "agent@intercode.invalid"))
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def clean_git_env(token: bool = False) -> dict[str, str]:
    """An environment for the host's git: no user or system configuration, no prompts;
    with ``token``, ``$GITHUB_TOKEN`` as an HTTP header for github.com."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"})
    secret = os.environ.get("GITHUB_TOKEN", "") if token else ""
    if secret:
        basic = base64.b64encode(f"x-access-token:{secret}".encode()).decode()
        env.update({"GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": f"http.{github_url()}/.extraheader",
                    "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"})
    return env


def github_url() -> str:
    """Where repositories are cloned from (``$INTERCODE_GITHUB_URL``)."""
    url = os.environ.get("INTERCODE_GITHUB_URL", "").strip().rstrip("/")
    if not url:
        return "https://github.com"
    if not re.match(r"^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]*)?$", url):
        raise DatasetError(f"INTERCODE_GITHUB_URL is not an http(s) URL: {url[:80]!r}")
    return url


def _git(args: list[str], cwd: Path | None = None, token: bool = False,
         timeout: float = GIT_TIMEOUT) -> str:
    env = clean_git_env(token)
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        raise DatasetError("git is not installed (sudo apt-get install git)") from None
    except subprocess.TimeoutExpired:
        raise DatasetError(f"git {args[0]} took longer than {timeout:.0f} s") from None
    if done.returncode != 0:
        raise DatasetError(f"git {args[0]} failed: {_scrub(done.stderr.decode(errors='replace'))}")
    return done.stdout.decode(errors="replace")


def _scrub(text: str) -> str:
    secret = os.environ.get("GITHUB_TOKEN", "")
    if secret:
        text = text.replace(secret, "***")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-3:])[:400] or "(no message)"


def _folder_name(repo: str) -> str:
    owner, _, name = repo.partition("/")
    if not (_SAFE_NAME.match(owner) and _SAFE_NAME.match(name)) or ".." in repo:
        raise DatasetError(f"not a repository name: {repo!r}")
    return f"{owner}__{name}"


def _in_mirror(repo: str, mirror: Path) -> Path:
    owner, _, name = repo.partition("/")
    folder = _folder_name(repo)
    for candidate in (mirror / folder, mirror / f"{folder}.git", mirror / owner / name,
                      mirror / owner / f"{name}.git", mirror / name, mirror / f"{name}.git"):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    raise DatasetError(f"{repo} is not in the repository mirror {mirror} (looked for "
                       f"{folder}[.git], {owner}/{name}[.git] and {name}[.git])")


def repo_path(repo: str, commit: str, mirror: str | os.PathLike[str] | None = None) -> Path:
    """A local git repository of ``repo`` that has ``commit``: the mirror's, or the
    cached clone (cloned or fetched if needed)."""
    if mirror:
        path = _in_mirror(repo, Path(mirror))
        if not _has_commit(path, commit):
            raise DatasetError(f"the mirror of {repo} ({path}) has no commit {commit}")
        return path
    path = cache_dir() / "repos" / f"{_folder_name(repo)}.git"
    demo = demo_repository()
    if repo == demo["repo"]:
        if not _has_commit(path, commit):
            _make_demo(path, demo)
        if not _has_commit(path, commit):
            raise DatasetError(f"the bundled repository {repo} has no commit {commit}")
        return path
    url = f"{github_url()}/{repo}.git"
    if not (path / "HEAD").is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            _git(["clone", "--bare", "--quiet", url, str(partial)], token=True)
            os.replace(partial, path)
        except OSError:
            if not (path / "HEAD").is_file():
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    if not _has_commit(path, commit):
        _git(["fetch", "--quiet", url, commit], cwd=path, token=True)
    if not _has_commit(path, commit):
        raise DatasetError(f"{repo} has no commit {commit}")
    return path


def _has_commit(path: Path, commit: str) -> bool:
    if not path.exists():
        return False
    try:
        return _git(["cat-file", "-t", commit], cwd=path, timeout=60).strip() == "commit"
    except DatasetError:
        return False


def _make_demo(path: Path, demo: dict[str, object]) -> None:
    """The bundled repository, committed with a fixed identity and date."""
    ident = demo["identity"]
    files = demo["files"]
    assert isinstance(ident, dict) and isinstance(files, dict)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="swe-demo.") as tmp:
        work = Path(tmp)
        for rel, text in files.items():
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        env = clean_git_env()
        env.update({"GIT_AUTHOR_NAME": ident["name"], "GIT_AUTHOR_EMAIL": ident["email"],
                    "GIT_COMMITTER_NAME": ident["name"], "GIT_COMMITTER_EMAIL": ident["email"],
                    "GIT_AUTHOR_DATE": ident["date"], "GIT_COMMITTER_DATE": ident["date"]})
        for args in (["init", "-q", "-b", ident["branch"], "."], ["add", "-A"],
                     ["commit", "-q", "-m", ident["message"]]):
            subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            _git(["clone", "--bare", "--quiet", str(work), str(partial / "r")])
            shutil.rmtree(path, ignore_errors=True)
            os.replace(partial / "r", path)
        finally:
            shutil.rmtree(partial, ignore_errors=True)


def testbed_tree(repo: str, commit: str,
                 mirror: str | os.PathLike[str] | None = None) -> FileTree:
    """``/testbed``: the repository at ``commit`` with a one-commit ``.git`` (cached)."""
    folder = cache_dir() / "swe" / "testbeds" / _folder_name(repo)
    archive = folder / f"{commit}.tar"
    if archive.is_file():
        return FileTree.from_tar(archive.read_bytes(), str(archive))
    source = repo_path(repo, commit, mirror)
    with tempfile.TemporaryDirectory(prefix="testbed.") as tmp:
        work = Path(tmp) / TESTBED
        work.mkdir()
        upload = "git -c uploadpack.allowAnySHA1InWant=true upload-pack"
        _git(["init", "--quiet", "-b", "main", "."], cwd=work)
        _git(["fetch", "--quiet", "--depth", "1", "--no-tags", f"--upload-pack={upload}",
              f"file://{source.resolve()}", commit], cwd=work)
        _git(["reset", "--quiet", "--hard", commit], cwd=work)
        for key, value in GIT_IDENTITY:
            _git(["config", key, value], cwd=work)
        for leftover in ("FETCH_HEAD", "description", "hooks", "logs"):
            target = work / ".git" / leftover
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        (work / ".git" / "hooks").mkdir()
        tree = tree_of_folder(Path(tmp), TESTBED)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(archive, tree.to_tar())
    return tree


def tree_of_folder(root: Path, top: str) -> FileTree:
    """``root/top`` as a tree: every directory, file and link below it, dated
    :data:`EPOCH_NS` (nothing else: no device, no fifo)."""
    return FileTree.of(_entries(root, top))


def _entries(root: Path, top: str) -> list[Entry]:
    """Every directory, file and link below ``root/top``, dated :data:`EPOCH_NS`."""
    out = [Entry(top, DIR, 0o755, EPOCH_NS)]
    total = 0
    stack = [top]
    while stack:
        rel = stack.pop()
        for child in sorted(os.scandir(root / rel), key=lambda e: e.name):
            sub = f"{rel}/{child.name}"
            st = child.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                out.append(Entry(sub, LINK, 0o777, EPOCH_NS, os.readlink(child.path)))
            elif stat.S_ISDIR(st.st_mode):
                out.append(Entry(sub, DIR, 0o755, EPOCH_NS))
                stack.append(sub)
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                mode = 0o755 if st.st_mode & 0o100 else 0o644
                out.append(Entry(sub, FILE, mode, EPOCH_NS, Path(child.path).read_bytes()))
            if len(out) > MAX_TREE_FILES or total > MAX_TREE_BYTES:
                raise DatasetError(f"the repository at {top} has more than {MAX_TREE_FILES} "
                                   f"files or {MAX_TREE_BYTES >> 20} MiB")
    return out
