"""``Tree.status`` and ``Tree.restore`` checked against a real ``git status``.

Upstream InterCode diffed the Bash sandbox by running ``git status --short`` in a
repository at ``/`` whose first commit held the pristine files, next to a committed
``.gitignore`` (docker.gitignore) that ignores a fixed list of names at any depth.
``Tree.status`` emulates that without git. Here every case builds a pristine tree
with ``Tree.load``, commits it to a real git repository, mutates the directory and
asserts that both sides report the same changes; then ``Tree.restore`` must bring
back the exact pristine entries (content, mode, mtime) and both sides must be clean.

Harness choices:

* The git directory lives *outside* the tree (``GIT_DIR`` next to the root,
  ``GIT_WORK_TREE`` = the root), so no ``.git`` exists under the root and the Tree
  side needs no exclusion for it. Upstream had ``/.git`` in the tree, but git never
  reports its own repository directory, so that is the same view.
* ``.gitignore`` (upstream's file, verbatim) is one of the pristine entries and is
  committed, as upstream committed it: both sides see it as an unchanged tracked
  file. Mutations never touch it and never create ``.git*`` names anywhere (git
  would then change its rules, which the Tree does not model: see the end).
* git's configuration is isolated from the user's (``GIT_CONFIG_GLOBAL=/dev/null``,
  ``GIT_CONFIG_NOSYSTEM=1``, no templates, no global excludes file, inherited
  ``GIT_*`` variables dropped) and pinned with ``-c`` (file mode, symlinks, case).
* Before each ``git status`` the index is reset to ``HEAD`` (``git read-tree``),
  which drops its cached stat data: git then compares every tracked file by
  content and cannot be fooled by a same-size change inside one clock tick. What
  is compared is git's semantics, not its stat cache.
* git's report is parsed from ``--porcelain=v1 -z`` (raw paths, no quoting) with the
  default untracked mode (``normal``: untracked directories collapse to ``dir/``).
  Every call also parses ``--short`` (C-unquoted) and checks it says the same, which
  is what upstream read. Our paths are git's raw paths, unquoted (intended).

What git does that the Tree design does not reproduce (and these tests avoid):
edits of ``/.gitignore`` or nested ``.gitignore``/``.gitattributes`` files (git's
rules change; the Tree's ignore list is fixed); anything done to upstream's own
``/.git`` (absent from the sandbox); nested repositories (an untracked directory
holding a *valid* repository in ``.git`` is shown by git as ``dir/`` even when
nothing else is in it; the Tree, like git for any other ``.git`` entry, skips
``.git`` and so shows such a directory only if it holds untracked files); and
git's quoting of unusual names in ``--short`` output (we keep raw names).
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from intercode.envs.core.bash import IGNORED_NAMES
from intercode.sandbox.inbox.tree import Tree

DIR, FILE, LINK = "d", "f", "l"
IS_ROOT = os.geteuid() == 0

# upstream's docker.gitignore, verbatim
GITIGNORE = (
    b"# Folders\nbin\nboot\ndev\netc\nhome\nlib\nmedia\nopt\nproc\nroot\nrun\nsbin\nsrv\n"
    b"sys\nusr\nvar\n\n# Files\n.dockerenv"
)
GITIGNORE_ENTRY = (".gitignore", FILE, 0o644, 1_600_000_000_123_456_789, GITIGNORE)

GIT_OPTIONS = [
    "-c", "core.filemode=true",
    "-c", "core.symlinks=true",
    "-c", "core.ignorecase=false",
    "-c", "core.precomposeunicode=false",
    "-c", "core.trustctime=true",
    "-c", "core.untrackedCache=false",
    "-c", "core.fsmonitor=false",
    "-c", "core.excludesFile=/dev/null",
    "-c", "core.quotepath=true",
    "-c", "core.autocrlf=false",
    "-c", "status.showUntrackedFiles=normal",
    "-c", "init.defaultBranch=main",
]
CODES = {" M": "M", " D": "D", " T": "T", "??": "??"}
C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
             ord("r"): 13, ord('"'): 34, ord("\\"): 92}

Change = tuple[str, str]


def test_gitignore_matches_ignored_names() -> None:
    """The committed .gitignore ignores exactly the names the Tree is given."""
    names = {line for line in GITIGNORE.decode().splitlines() if line and line[0] != "#"}
    assert names == set(IGNORED_NAMES)


# -- the independent view of the directory ----------------------------------------------


def walk(root: Path) -> dict[str, tuple]:
    """Every entry below ``root`` as ``rel -> (kind, mode, mtime_ns, payload)``."""
    found: dict[str, tuple] = {}

    def visit(path: str, rel: str) -> None:
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            child = f"{rel}/{name}" if rel else name
            st = os.lstat(full)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                found[child] = (DIR, mode, st.st_mtime_ns, None)
                visit(full, child)
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    found[child] = (FILE, mode, st.st_mtime_ns, fh.read())
            elif stat.S_ISLNK(st.st_mode):
                found[child] = (LINK, mode, st.st_mtime_ns, os.readlink(full))
            else:
                found[child] = ("special", mode, st.st_mtime_ns, None)

    visit(str(root), "")
    return found


def identities(root: Path) -> dict[str, tuple[int, int]]:
    """``rel -> (inode, ctime_ns)`` of every file and symlink below ``root``."""
    return {rel: (st.st_ino, st.st_ctime_ns) for rel, st in lstats(root).items()
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)}


def lstats(root: Path) -> dict[str, os.stat_result]:
    found = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        for name in os.listdir(os.path.join(root, rel)):
            child = f"{rel}/{name}" if rel else name
            st = os.lstat(os.path.join(root, child))
            found[child] = st
            if stat.S_ISDIR(st.st_mode):
                stack.append(child)
    return found


def c_unquote(raw: bytes) -> bytes:
    """Undo git's C-style quoting of a path (``"a\\tb"`` -> ``a<TAB>b``)."""
    if not raw.startswith(b'"'):
        return raw
    body = raw[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] != ord("\\"):
            out.append(body[i])
            i += 1
        elif body[i + 1] in C_ESCAPES:
            out.append(C_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


# -- one pristine tree, its repository and the Tree under test ---------------------------


class World:
    """A root loaded by ``Tree.load`` and a git repository whose commit is that root."""

    def __init__(self, base: Path, entries: list[tuple]) -> None:
        self.root = base / "root"
        self.gitdir = base / "git"
        self.root.mkdir()
        self.tree = Tree(str(self.root))
        self.tree.set_base([])
        self.reload(entries)

    def reload(self, entries: list[tuple]) -> None:
        """Load new pristine entries into the same Tree and commit them afresh."""
        self.entries = [GITIGNORE_ENTRY, *entries]
        self.pristine = {e[0]: tuple(e[1:]) for e in self.entries}
        self.tree.load(self.entries)
        assert walk(self.root) == self.pristine, "load did not materialise the entries"
        shutil.rmtree(self.gitdir, ignore_errors=True)
        self.git("init", "-q", "--template=")
        self.git("add", "-A")
        self.git("-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false",
                 "commit", "-q", "--no-verify", "-m", "pristine")
        assert self.git_status() == [], "git sees the fresh commit as dirty"
        assert self.tree_status() == []

    def git(self, *args: str) -> bytes:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_DIR=str(self.gitdir), GIT_WORK_TREE=str(self.root),
                   GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
        proc = subprocess.run(["git", *GIT_OPTIONS, *args], cwd=self.root, env=env,
                              capture_output=True, check=False)
        assert proc.returncode == 0, f"git {args}: {proc.stderr.decode(errors='replace')}"
        return proc.stdout

    def git_status(self) -> list[Change]:
        """What git reports, as sorted ``(path, code)`` pairs."""
        self.git("read-tree", "HEAD")
        raw = self.git("status", "--porcelain=v1", "-z", "--untracked-files=normal")
        items = raw.split(b"\0")
        assert items[-1] == b""
        changes = []
        for item in items[:-1]:
            xy = item[:2].decode()
            assert xy in CODES, f"unexpected git status {item!r}"
            changes.append((os.fsdecode(item[3:]), CODES[xy]))
        short = self.git("status", "--short", "--untracked-files=normal")
        lines = [line for line in short.split(b"\n") if line]
        from_short = [(os.fsdecode(c_unquote(line[3:])), CODES[line[:2].decode()])
                      for line in lines]
        assert sorted(from_short) == sorted(changes), "--short and -z disagree"
        return sorted(changes)

    def tree_status(self) -> list[Change]:
        result = self.tree.status(IGNORED_NAMES)
        assert result == sorted(result)
        return sorted((path, code) for path, code in result)

    def assert_same(self, context: str = "") -> list[Change]:
        expected = self.git_status()
        assert self.tree_status() == expected, context
        return expected

    def restore_and_check(self, before: dict[str, tuple[int, int]], context: str = "") -> None:
        """Restore; check the exact pristine state, cleanliness and minimal touching.

        ``before`` holds the identities taken before the mutation: a file or symlink
        the mutation left alone must not be rewritten by the restore.
        """
        untouched = identities(self.root)
        untouched = {rel: ident for rel, ident in untouched.items()
                     if rel in self.pristine and before.get(rel) == ident}
        self.tree.restore()
        assert walk(self.root) == self.pristine, context
        assert self.tree_status() == [], context
        assert self.git_status() == [], context
        after = identities(self.root)
        # the inode: a restore may move an untouched entry out and back (its ctime
        # changes) to give its directory the fresh tree's listing order, never rewrite it
        rewritten = sorted(rel for rel, ident in untouched.items()
                           if rel not in after or after[rel][0] != ident[0])
        assert rewritten == [], context
        assert self.tree.restore() == {"deleted": 0, "written": 0}, context


# -- mutations: a tiny language shared by the scenarios and the random test ------------


def apply(root: Path, op: tuple) -> None:
    """Perform one mutation ``(verb, *args)`` under ``root``; paths are relative."""
    verb, *args = op

    def p(rel: str) -> str:
        return os.path.join(root, rel)

    if verb == "write":  # write (create or truncate) a file, making parents
        rel, data = args
        os.makedirs(os.path.dirname(p(rel)), exist_ok=True)
        with open(p(rel), "wb") as fh:
            fh.write(data)
    elif verb == "mkdir":
        os.makedirs(p(args[0]))
    elif verb == "rm":
        os.unlink(p(args[0]))
    elif verb == "rmtree":
        shutil.rmtree(p(args[0]))
    elif verb == "symlink":  # symlink target path
        os.symlink(args[0], p(args[1]))
    elif verb == "hardlink":  # hardlink existing new
        os.link(p(args[0]), p(args[1]))
    elif verb == "chmod":
        os.chmod(p(args[0]), args[1], follow_symlinks=False)
    elif verb == "mv":
        os.rename(p(args[0]), p(args[1]))
    elif verb == "utime":  # utime path ns (None: now)
        rel, ns = args
        if ns is None:
            os.utime(p(rel), follow_symlinks=False)
        else:
            os.utime(p(rel), ns=(ns, ns), follow_symlinks=False)
    elif verb == "fifo":
        os.mkfifo(p(args[0]))
    elif verb == "socket":  # bound in a child whose cwd is the parent (short sun_path)
        parent, name = os.path.split(p(args[0]))
        subprocess.run([sys.executable, "-c",
                        "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                        name], cwd=parent, check=True)
    else:
        raise ValueError(verb)


# -- hand-written scenarios --------------------------------------------------------------

T0 = 1_650_000_000_000_000_000


def _d(rel: str, mode: int = 0o755) -> tuple:
    return (rel, DIR, mode, T0 + 1_000 * len(rel), None)


def _f(rel: str, data: bytes, mode: int = 0o644) -> tuple:
    return (rel, FILE, mode, T0 + 7_000 * len(rel) + len(data), data)


def _l(rel: str, target: str) -> tuple:
    return (rel, LINK, 0o777, T0 + 13_000 * len(rel), target)


PRISTINE = [
    _f("README", b"read me\n"),
    _f("run.sh", b"#!/bin/sh\necho hi\n", 0o755),
    _f("notes.txt", b"notes\n", 0o600),
    _f("empty.txt", b""),
    _f(".hidden", b"secret\n"),
    _d("data"),
    _f("data/a.txt", b"alpha\n"),
    _f("data/b.txt", b"beta\n"),
    _d("data/sub"),
    _f("data/sub/c.txt", b"gamma\n"),
    _d("data/sub/deep", 0o700),
    _f("data/sub/deep/d.txt", b"delta\n"),
    _d("docs", 0o555 if IS_ROOT else 0o755),
    _f("docs/guide.md", b"# guide\n", 0o444),
    _d("empty"),  # an empty directory: invisible to git
    _l("link", "README"),
    _l("dirlink", "data"),
    _l("dangling", "nowhere"),
    _d("only_ignored"),  # holds nothing git tracks
    _d("only_ignored/bin"),
    _f("only_ignored/bin/tool", b"\x7fELF", 0o755),
    _d("var"),
    _d("var/log"),
    _f("var/log/syslog", b"boot\n"),
    _d("src"),
    _f("src/usr", b"a file named like an ignored directory\n"),
    _d("my dir"),
    _f("my dir/my file.txt", b"spaced\n"),
]
DATA_FILES = ["data/a.txt", "data/b.txt", "data/sub/c.txt", "data/sub/deep/d.txt"]
TRACKED = sorted(["README", "run.sh", "notes.txt", "empty.txt", ".hidden", *DATA_FILES,
                  "docs/guide.md", "link", "dirlink", "dangling", "my dir/my file.txt"])
README_MTIME = PRISTINE[0][3]


@dataclass(frozen=True)
class Scenario:
    id: str
    ops: tuple[tuple, ...]
    expected: tuple[Change, ...]


def S(name: str, ops: list[tuple], expected: list[Change]) -> Scenario:
    return Scenario(name, tuple(ops), tuple(sorted(expected)))


def D(*paths: str) -> list[Change]:
    return [(path, "D") for path in paths]


def U(*paths: str) -> list[Change]:
    return [(path, "??") for path in paths]


SCENARIOS = [
    S("no-change", [], []),
    # untracked files and directories
    S("new-file-at-root", [("write", "new.txt", b"n")], U("new.txt")),
    S("new-empty-file", [("write", "zero", b"")], U("zero")),
    S("new-file-in-tracked-dir", [("write", "data/new.txt", b"n")], U("data/new.txt")),
    S("new-file-deep-in-tracked-dirs", [("write", "data/sub/deep/e.txt", b"e")],
      U("data/sub/deep/e.txt")),
    S("new-dir-with-file", [("write", "newdir/f", b"f")], U("newdir/")),
    S("new-nested-dirs-collapse", [("write", "newdir/x/y/z/f", b"f"),
                                   ("write", "newdir/x/g", b"g")], U("newdir/")),
    S("new-dir-under-tracked-subdir", [("write", "data/sub/newdir/more/f", b"f")],
      U("data/sub/newdir/")),
    S("two-new-dirs", [("write", "n1/f", b""), ("write", "data/n2/f", b"")],
      U("n1/", "data/n2/")),
    S("empty-new-dirs-invisible", [("mkdir", "newdir"), ("mkdir", "data/n1/n2")], []),
    S("untracked-dir-only-empty-subdirs", [("mkdir", "newdir/a/b"), ("mkdir", "newdir/c")], []),
    S("untracked-dir-only-ignored-dir", [("write", "newdir/bin/tool", b"t")], []),
    S("untracked-dir-only-ignored-file", [("write", "newdir/var", b"v"),
                                          ("write", "newdir/x/.dockerenv", b"")], []),
    S("untracked-dir-ignored-plus-real-file", [("write", "newdir/bin/tool", b"t"),
                                               ("write", "newdir/deep/x", b"x")], U("newdir/")),
    S("untracked-dir-only-symlink", [("mkdir", "newdir"), ("symlink", "../data", "newdir/l")],
      U("newdir/")),
    S("untracked-symlinks", [("symlink", "data", "newlink"), ("symlink", "nope", "dangle2"),
                             ("symlink", "/etc/passwd", "data/abs")],
      U("newlink", "dangle2", "data/abs")),
    S("pristine-empty-dir-gets-file", [("write", "empty/f", b"f")], U("empty/")),
    S("pristine-empty-dir-gets-empty-dir", [("mkdir", "empty/sub")], []),
    S("dir-holding-only-ignored-pristine-gets-file", [("write", "only_ignored/new", b"n")],
      U("only_ignored/")),
    S("dir-holding-ignored-named-file-gets-file", [("write", "src/main.c", b"int x;")],
      U("src/")),
    S("hardlink-of-tracked-file", [("hardlink", "README", "hard")], U("hard")),
    # ignored names
    S("files-in-ignored-dirs-at-any-depth",
      [("write", "var/x", b"x"), ("write", "var/log/new", b"n"), ("write", "data/bin/x", b"x"),
       ("write", "data/sub/etc/passwd", b"p"), ("write", "usr/lib/x", b"x"),
       ("write", "a/b/home/c/d", b"d"), ("write", "proc/1/status", b"s")], []),
    S("files-named-like-ignored-names",
      [("write", "data/bin", b"b"), ("write", "boot", b"b"), ("write", ".dockerenv", b""),
       ("write", "data/.dockerenv", b""), ("symlink", "/usr/bin", "data/sub/usr")], []),
    S("names-close-to-ignored-names",
      [("write", "Bin", b""), ("write", "binx", b""), ("write", "bin.txt", b""),
       ("write", "data/var2", b""), ("write", ".dockerenv2", b""), ("write", "xetc/f", b"")],
      U("Bin", "binx", "bin.txt", "data/var2", ".dockerenv2", "xetc/")),
    S("changes-to-ignored-pristine-files",
      [("write", "var/log/syslog", b"changed"), ("rm", "only_ignored/bin/tool"),
       ("write", "src/usr", b"changed"), ("chmod", "var/log", 0o700)], []),
    S("ignored-pristine-dir-removed", [("rmtree", "var"), ("rmtree", "only_ignored")], []),
    # deletions
    S("delete-file", [("rm", "notes.txt")], D("notes.txt")),
    S("delete-hidden-file", [("rm", ".hidden")], D(".hidden")),
    S("delete-symlinks", [("rm", "link"), ("rm", "dangling")], D("link", "dangling")),
    S("delete-tracked-dir", [("rmtree", "data")], D(*DATA_FILES)),
    S("delete-subdir-and-recreate-empty", [("rmtree", "data/sub"), ("mkdir", "data/sub")],
      D("data/sub/c.txt", "data/sub/deep/d.txt")),
    S("delete-subdir-then-new-dir-in-its-place",
      [("rmtree", "data/sub"), ("write", "data/sub/x/f", b"f")],
      [*D("data/sub/c.txt", "data/sub/deep/d.txt"), *U("data/sub/x/")]),
    S("delete-one-add-one-in-same-dir", [("rm", "data/a.txt"), ("write", "data/z", b"z")],
      [*D("data/a.txt"), *U("data/z")]),
    S("emptied-tracked-dir-gets-new-subdir",
      [("rm", "data/sub/c.txt"), ("rmtree", "data/sub/deep"), ("write", "data/sub/n/f", b"")],
      [*D("data/sub/c.txt", "data/sub/deep/d.txt"), *U("data/sub/n/")]),
    S("delete-everything", [("rm", p) for p in TRACKED if "/" not in p]
      + [("rmtree", "data"), ("rmtree", "docs"), ("rmtree", "my dir")], D(*TRACKED)),
    # content and mode
    S("modify-content", [("write", "README", b"changed\n")], [("README", "M")]),
    S("modify-same-size-keep-mtime",
      [("write", "README", b"reaD me\n"), ("utime", "README", README_MTIME)],
      [("README", "M")]),
    S("truncate-to-empty", [("write", "README", b"")], [("README", "M")]),
    S("empty-file-gets-content", [("write", "empty.txt", b"\0")], [("empty.txt", "M")]),
    S("rewrite-identical-content-new-inode",
      [("rm", "README"), ("write", "README", b"read me\n")], []),
    S("rewrite-identical-content-same-inode", [("write", "notes.txt", b"notes\n")], []),
    S("touch-only", [("utime", "README", None), ("utime", "data", None),
                     ("utime", "link", 5 * 10**18)], []),
    S("chmod-plus-x", [("chmod", "notes.txt", 0o700)], [("notes.txt", "M")]),
    S("chmod-minus-x", [("chmod", "run.sh", 0o644)], [("run.sh", "M")]),
    S("chmod-owner-x-only", [("chmod", "README", 0o100)], [("README", "M")]),
    S("chmod-without-owner-x-change",
      [("chmod", "README", 0o654), ("chmod", "docs/guide.md", 0o606),
       ("chmod", "run.sh", 0o4711), ("chmod", "notes.txt", 0o000)], []),
    S("chmod-x-and-back", [("chmod", "README", 0o755), ("chmod", "README", 0o644)], []),
    S("chmod-dirs", [("chmod", "data", 0o700), ("chmod", "docs", 0o777)], []),
    S("modify-and-chmod", [("write", "README", b"x"), ("chmod", "README", 0o755)],
      [("README", "M")]),
    # type changes
    S("file-to-symlink", [("rm", "README"), ("symlink", "run.sh", "README")], [("README", "T")]),
    S("file-to-symlink-with-content-as-target",
      [("rm", "notes.txt"), ("symlink", "notes\n", "notes.txt")], [("notes.txt", "T")]),
    S("symlink-to-file", [("rm", "link"), ("write", "link", b"x")], [("link", "T")]),
    S("symlink-to-file-with-target-as-content", [("rm", "link"), ("write", "link", b"README")],
      [("link", "T")]),
    S("retarget-symlink", [("rm", "link"), ("symlink", "run.sh", "link")], [("link", "M")]),
    S("recreate-symlink-same-target", [("rm", "link"), ("symlink", "README", "link")], []),
    S("dangling-target-created", [("write", "nowhere", b"now here")], U("nowhere")),
    # git drops an untracked directory whose name is a tracked path (it is "in the
    # index"), and in the normal untracked mode shows nothing below it either
    S("symlinked-dir-replaced-by-dir", [("rm", "dirlink"), ("write", "dirlink/f", b"f")],
      D("dirlink")),
    S("symlink-to-empty-dir", [("rm", "dirlink"), ("mkdir", "dirlink")], D("dirlink")),
    S("file-to-empty-dir", [("rm", "notes.txt"), ("mkdir", "notes.txt")], D("notes.txt")),
    S("file-to-dir-with-file", [("rm", "notes.txt"), ("write", "notes.txt/x", b"x")],
      D("notes.txt")),
    S("deep-file-to-dir-with-nested-content",
      [("rm", "data/a.txt"), ("write", "data/a.txt/x/y", b"y"), ("write", "data/a.txt/z", b"")],
      D("data/a.txt")),
    S("untracked-names-extending-tracked-names",
      [("write", "README2", b""), ("write", "READMEx/f", b""), ("write", "data/a.txtt", b""),
       ("write", "lin", b"")],
      U("README2", "READMEx/", "data/a.txtt", "lin")),
    S("file-to-dir-with-only-ignored", [("rm", "README"), ("write", "README/bin/x", b"x")],
      D("README")),
    S("dir-to-file", [("rmtree", "data/sub"), ("write", "data/sub", b"s")],
      [*D("data/sub/c.txt", "data/sub/deep/d.txt"), *U("data/sub")]),
    S("dir-to-symlink-to-moved-copy", [("mv", "data", "data2"), ("symlink", "data2", "data")],
      [*D(*DATA_FILES), *U("data", "data2/")]),
    S("dir-to-symlink-elsewhere", [("rmtree", "docs"), ("symlink", "data", "docs")],
      [*D("docs/guide.md"), *U("docs")]),
    S("fifo-untracked", [("fifo", "new.fifo"), ("mkdir", "fdir"), ("fifo", "fdir/p")], []),
    S("socket-untracked", [("socket", "sock")], []),
    S("fifo-replaces-file", [("rm", "notes.txt"), ("fifo", "notes.txt")], [("notes.txt", "M")]),
    S("fifo-replaces-symlink", [("rm", "link"), ("fifo", "link")], [("link", "T")]),
    S("socket-replaces-file", [("rm", "README"), ("socket", "README")], [("README", "M")]),
    # moves
    S("rename-file", [("mv", "README", "README.md")], [*D("README"), *U("README.md")]),
    S("rename-dir", [("mv", "docs", "manual")], [*D("docs/guide.md"), *U("manual/")]),
    S("rename-into-ignored-dir", [("mv", "data/a.txt", "var/a.txt")], D("data/a.txt")),
    S("move-away-and-back", [("mv", "data", "elsewhere"), ("mv", "elsewhere", "data"),
                             ("mv", "README", "R"), ("mv", "R", "README")], []),
    # names
    S("names-with-spaces",
      [("write", "new file.txt", b""), ("write", "my dir/other file", b""),
       ("write", "dir with space/inner", b""), ("write", " lead", b""),
       ("write", "trail ", b"")],
      U("new file.txt", "my dir/other file", "dir with space/", " lead", "trail ")),
    S("modify-file-in-spaced-dir", [("write", "my dir/my file.txt", b"x")],
      [("my dir/my file.txt", "M")]),
    S("delete-spaced-dir", [("rmtree", "my dir")], D("my dir/my file.txt")),
    S("hidden-files",
      [("write", ".newhidden", b""), ("write", ".hdir/x", b""), ("write", "data/.h", b""),
       ("write", ".hidden", b"changed")],
      [*U(".newhidden", ".hdir/", "data/.h"), (".hidden", "M")]),
    S("odd-names",
      [("write", "tab\there", b""), ("write", "new\nline", b""), ("write", "back\\slash", b""),
       ("write", 'quo"te', b""), ("write", "caf\u00e9", b""), ("write", "bad\udcff", b""),
       ("write", "star*", b""), ("write", "[x]", b""), ("write", "-n", b""),
       ("write", "odd\tdir/f", b"")],
      U("tab\there", "new\nline", "back\\slash", 'quo"te', "caf\u00e9", "bad\udcff", "star*",
        "[x]", "-n", "odd\tdir/")),
    # git never lists an entry named .git (a valid nested repository excepted)
    S("dot-git-names-invisible",
      [("write", ".git", b"gitdir: /nowhere\n"), ("write", "fake/.git/config", b"x"),
       ("write", "data/.git/HEAD", b"ref: refs/heads/main\n"), ("mkdir", "e/.git"),
       ("write", "withfile/.git", b""), ("write", "withfile/f", b"")],
      U("withfile/")),
    S("mixed",
      [("rm", "data/b.txt"), ("write", "data/sub/c.txt", b"C"), ("chmod", "run.sh", 0o600),
       ("write", "var/tmp/x", b""), ("write", "fresh/bin/x", b""), ("write", "fresh2/y", b""),
       ("rm", "dangling"), ("symlink", "README", "dangling"), ("mkdir", "e1/e2"),
       ("write", "docs/new.md", b"")],
      [*D("data/b.txt"), ("data/sub/c.txt", "M"), ("run.sh", "M"), *U("fresh2/"),
       ("dangling", "M"), *U("docs/new.md")]),
]


# modes that leave a file unreadable to its owner: git (not the Tree) needs root there
ROOT_ONLY = {"chmod-owner-x-only", "chmod-without-owner-x-change"}
if not IS_ROOT:
    SCENARIOS = [s for s in SCENARIOS if s.id not in ROOT_ONLY]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_scenario_matches_git(tmp_path: Path, scenario: Scenario) -> None:
    world = World(tmp_path, PRISTINE)
    before = identities(world.root)
    for op in scenario.ops:
        apply(world.root, op)
    # the expectation pins the harness: git itself must report exactly this
    assert world.git_status() == list(scenario.expected)
    assert world.tree_status() == list(scenario.expected)
    world.restore_and_check(before)


def test_repeated_rounds_on_one_tree(tmp_path: Path) -> None:
    """Every scenario in turn on the same Tree, restoring in between."""
    world = World(tmp_path, PRISTINE)
    for scenario in SCENARIOS:
        before = identities(world.root)
        for op in scenario.ops:
            apply(world.root, op)
        assert world.assert_same(scenario.id) == list(scenario.expected), scenario.id
        world.restore_and_check(before, scenario.id)


# -- randomized --------------------------------------------------------------------------

NAMES = ["a", "b", "c", "src", "lib64", "notes.txt", "run.sh", "x.py", "my file", "two  sp",
         ".hidden", ".cfg", "bin", "var", "etc", "usr", ".dockerenv", "Bin", "binx", "var.d",
         "caf\u00e9", "tab\tname", "new\nline", "bad\udcfe", "[x]", "*", "-n", 'q"']
FILE_MODES = [0o644, 0o755, 0o600, 0o700, 0o444, 0o555, 0o640, 0o744, 0o654, 0o611, 0o100,
              0o000, 0o4755, 0o2644, 0o1644]
DIR_MODES = [0o755, 0o700, 0o555, 0o777, 0o1777, 0o500, 0o2775, 0o000, 0o711]
if not IS_ROOT:  # an ordinary user cannot read or write below restrictive modes
    FILE_MODES = [m for m in FILE_MODES if m & 0o600 == 0o600]
    DIR_MODES = [m for m in DIR_MODES if m & 0o700 == 0o700]
TARGETS = ["a", "b", "../a", "/etc/passwd", "nowhere", "src/x.py", ".", "..", "my file",
           "bin", "a/b/c", "new\nline"]


def random_bytes(rng: random.Random) -> bytes:
    pick = rng.random()
    if pick < 0.15:
        return b""
    if pick < 0.5:
        return rng.choice([b"x", b"hello\n", b"a b c\n", b"\0", b"notes", b"a"])
    if pick < 0.97:
        return rng.randbytes(rng.randint(1, 64))
    return rng.randbytes(rng.randint(60_000, 200_000))


def random_mtime(rng: random.Random) -> int:
    return rng.randrange(946_684_800, 1_893_456_000) * 10**9 + rng.randrange(10**9)


def fresh_name(rng: random.Random, taken: set[str], parent: str) -> str:
    name = rng.choice(NAMES)
    while (f"{parent}/{name}" if parent else name) in taken or (
            not parent and name == ".gitignore"):
        name += rng.choice("0123456789z")
    return f"{parent}/{name}" if parent else name


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def random_entries(rng: random.Random) -> list[tuple]:
    entries: list[tuple] = []
    taken = {".gitignore"}
    dirs = [""]
    for _ in range(rng.randint(0, 30)):
        rel = fresh_name(rng, taken, rng.choice(dirs))
        taken.add(rel)
        kind = rng.choices([DIR, FILE, LINK], weights=[3, 6, 2])[0]
        if kind == DIR:
            entries.append((rel, DIR, rng.choice(DIR_MODES), random_mtime(rng), None))
            dirs.append(rel)
        elif kind == FILE:
            entries.append((rel, FILE, rng.choice(FILE_MODES), random_mtime(rng),
                            random_bytes(rng)))
        else:
            entries.append((rel, LINK, 0o777, random_mtime(rng), rng.choice(TARGETS)))
    return entries


def current_kinds(root: Path) -> dict[str, str]:
    kinds = {}
    for rel, st in lstats(root).items():
        if rel == ".gitignore":
            continue
        kinds[rel] = (DIR if stat.S_ISDIR(st.st_mode) else FILE if stat.S_ISREG(st.st_mode)
                      else LINK if stat.S_ISLNK(st.st_mode) else "special")
    return kinds


def random_subtree(rng: random.Random, taken: set[str], top: str) -> list[tuple]:
    """Ops creating a new directory ``top`` with random (maybe empty or ignored) content."""
    ops: list[tuple] = [("mkdir", top)]
    dirs = [top]
    for _ in range(rng.randint(0, 6)):
        parent = rng.choice(dirs)
        rel = fresh_name(rng, taken, parent)
        taken.add(rel)
        what = rng.random()
        if what < 0.35:
            ops.append(("mkdir", rel))
            dirs.append(rel)
        elif what < 0.8:
            ops.append(("write", rel, random_bytes(rng)))
        elif what < 0.9:
            ops.append(("symlink", rng.choice(TARGETS), rel))
        else:
            ops.append(("fifo", rel))
    return ops


def random_ops(rng: random.Random, root: Path) -> list[tuple]:
    """One random mutation of the current tree, as a list of ``apply`` ops."""
    kinds = current_kinds(root)
    taken = set(kinds) | {".gitignore"}
    dirs = [""] + [r for r, k in kinds.items() if k == DIR]
    files = [r for r, k in kinds.items() if k == FILE]
    links = [r for r, k in kinds.items() if k == LINK]
    nondirs = [r for r, k in kinds.items() if k != DIR]
    subdirs = dirs[1:]
    choice = rng.choice([
        "new_file", "new_file", "new_tree", "new_tree", "mkdir", "delete", "rmtree", "modify",
        "modify", "same_size", "rewrite", "touch", "chmod_file", "chmod_file", "chmod_dir",
        "file_to_link", "link_to_file", "retarget", "file_to_dir", "dir_to_other", "rename",
        "hardlink", "fifo", "dir_to_symlink", "away_and_back",
    ])
    new = fresh_name(rng, taken, rng.choice(dirs))
    if choice == "new_file":
        return [("write", new, random_bytes(rng))]
    if choice == "new_tree":
        return random_subtree(rng, taken | {new}, new)
    if choice == "mkdir":
        return [("mkdir", new)]
    if choice == "fifo":
        if nondirs and rng.random() < 0.5:
            victim = rng.choice(nondirs)
            return [("rm", victim), ("fifo", victim)]
        return [("fifo", new)]
    if choice == "delete" and nondirs:
        return [("rm", rng.choice(nondirs))]
    if choice == "rmtree" and subdirs:
        return [("rmtree", rng.choice(subdirs))]
    if choice == "modify" and files:
        return [("write", rng.choice(files), random_bytes(rng))]
    if choice == "same_size" and files:
        victim = rng.choice(files)
        with open(root / victim, "rb") as fh:
            data = bytearray(fh.read())
        mtime = os.lstat(root / victim).st_mtime_ns
        if data:
            i = rng.randrange(len(data))
            data[i] ^= rng.choice([1, 0x20, 0xFF])
        return [("write", victim, bytes(data)), ("utime", victim, mtime)]
    if choice == "rewrite" and files:
        victim = rng.choice(files)
        with open(root / victim, "rb") as fh:
            data = fh.read()
        if rng.random() < 0.5:
            return [("write", victim, data)]
        return [("rm", victim), ("write", victim, data)]
    if choice == "touch" and (files or links or subdirs):
        victim = rng.choice(files + links + subdirs)
        return [("utime", victim, rng.choice([None, random_mtime(rng)]))]
    if choice == "chmod_file" and files:
        return [("chmod", rng.choice(files), rng.choice(FILE_MODES))]
    if choice == "chmod_dir" and subdirs:
        return [("chmod", rng.choice(subdirs), rng.choice(DIR_MODES))]
    if choice == "file_to_link" and files:
        victim = rng.choice(files)
        with open(root / victim, "rb") as fh:
            data = fh.read()
        target = rng.choice(TARGETS)
        if data and b"\0" not in data and len(data) < 1000 and rng.random() < 0.3:
            target = os.fsdecode(data)
        return [("rm", victim), ("symlink", target, victim)]
    if choice == "link_to_file" and links:
        victim = rng.choice(links)
        data = os.fsencode(os.readlink(root / victim))
        return [("rm", victim), ("write", victim, rng.choice([data, random_bytes(rng)]))]
    if choice == "retarget" and links:
        victim = rng.choice(links)
        target = rng.choice([*TARGETS, os.readlink(root / victim)])
        return [("rm", victim), ("symlink", target, victim)]
    if choice == "file_to_dir" and nondirs:
        victim = rng.choice(nondirs)
        return [("rm", victim), *random_subtree(rng, taken, victim)]
    if choice == "dir_to_other" and subdirs:
        victim = rng.choice(subdirs)
        if rng.random() < 0.5:
            return [("rmtree", victim), ("write", victim, random_bytes(rng))]
        return [("rmtree", victim), ("symlink", rng.choice(TARGETS), victim)]
    if choice == "dir_to_symlink" and subdirs:
        victim = rng.choice(subdirs)
        moved = fresh_name(rng, taken, victim.rpartition("/")[0])
        return [("mv", victim, moved), ("symlink", os.path.basename(moved), victim)]
    if choice == "rename" and (nondirs or subdirs):
        victim = rng.choice(nondirs + subdirs)
        if new == victim or new.startswith(victim + "/"):
            return []
        return [("mv", victim, new)]
    if choice == "away_and_back" and (nondirs or subdirs):
        victim = rng.choice(nondirs + subdirs)
        away = fresh_name(rng, taken, "")
        return [("mv", victim, away), ("mv", away, victim)]
    if choice == "hardlink" and files:
        return [("hardlink", rng.choice(files), new)]
    return [("write", new, random_bytes(rng))]


def mutate(rng: random.Random, root: Path, count: int) -> list[tuple]:
    """Apply ``count`` random mutations, each drawn from the state the last one left."""
    log: list[tuple] = []
    for _ in range(count):
        ops = random_ops(rng, root)
        for op in ops:
            apply(root, op)
        log.extend(ops)
    return log


RANDOM_CASES = 300
ROUNDS = 3


@pytest.mark.parametrize("seed", range(RANDOM_CASES))
def test_random_mutations_match_git(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    world = World(tmp_path, random_entries(rng))
    for round_no in range(ROUNDS):
        before = identities(world.root)
        log = mutate(rng, world.root, rng.randint(1, 8))
        context = f"seed {seed}, round {round_no}, ops {log!r}"
        world.assert_same(context)
        world.restore_and_check(before, context)


RELOAD_CASES = 100


@pytest.mark.parametrize("seed", range(RELOAD_CASES))
def test_random_reload_matches_git(tmp_path: Path, seed: int) -> None:
    """``load`` of a new pristine state over a dirty tree, then mutate again."""
    rng = random.Random(10_000 + seed)
    first = random_entries(rng)
    world = World(tmp_path, first)
    mutate(rng, world.root, rng.randint(0, 6))
    # the next pristine state keeps, changes, retypes or drops the old entries ...
    second = []
    for rel, kind, mode, mtime, payload in first:
        roll = rng.random()
        if roll < 0.5 or kind == DIR:
            second.append((rel, kind, mode, mtime, payload))
        elif roll < 0.65 and kind == FILE:
            second.append((rel, FILE, rng.choice(FILE_MODES), mtime, random_bytes(rng)))
        elif roll < 0.75:
            second.append((rel, kind, mode, random_mtime(rng), payload))
        elif roll < 0.85:
            retyped = (LINK, 0o777, "a") if kind == FILE else (FILE, 0o644, b"a")
            second.append((rel, retyped[0], retyped[1], mtime, retyped[2]))
    kinds = {e[0]: e[1] for e in second}
    second = [e for e in second if all(kinds.get(a) == DIR for a in _ancestors(e[0]))]
    kinds = {e[0]: e[1] for e in second}
    # ... and adds new ones
    for entry in random_entries(rng):
        if entry[0] not in kinds and all(kinds.get(a) == DIR for a in _ancestors(entry[0])):
            second.append(entry)
            kinds[entry[0]] = entry[1]
    world.reload(second)
    before = identities(world.root)
    log = mutate(rng, world.root, rng.randint(1, 8))
    context = f"seed {seed}, ops {log!r}"
    world.assert_same(context)
    world.restore_and_check(before, context)

