"""What ``upstream_quirks=True`` (``--upstream-quirks``) changes in the Bash environment.

Upstream InterCode (``intercode/envs/bash/bash_env.py`` and ``docker/nl2bash.Dockerfile``)
ran its tasks in a Docker container whose file system was committed to git at ``/``;
this module reproduces what that did to actions, trees and rewards, for replaying
recorded results. Nothing here runs in the default mode.

* **Actions**: each one a fresh ``/bin/bash -c "<action>"``, split by Docker's argument
  splitting (an inner double quote ends the quoted argument), ``cd`` emulated in Python
  (:func:`run_like_upstream`), globbing as in the image's bash 5.1, with the environment
  ``docker exec`` gave it as root: ``PATH``, ``HOSTNAME``, ``HOME=/root`` and nothing
  else, so no locale (:data:`UPSTREAM_EXEC_ENV`).
* **Empty directories**: the reset was ``git reset --hard; git clean -fd``. git does not
  track directories, so every directory holding no file, link or ignored entry was
  deleted by the first reset (:func:`upstream_tree`).
* **File times**: the image's files were as old as the image when an episode ran.
  Every entry the setup script made (dated ``EPOCH`` by :mod:`intercode.datasets.fsbuild`)
  is dated ``UPSTREAM_AGE_NS`` before the episode's start; times the script set
  itself (``touch -t``) are kept. Thirty minutes: the recorded episodes show files older
  than five minutes (``-mmin +5`` matched) and younger than an hour (``-mmin -60``,
  ``-cmin -60``, ``-amin -60`` matched all). Access times are the image's age for
  every entry, also those whose modification time the script set (``touch -m``
  leaves the access time alone): :func:`date_access_times`.
  The directories the image's build made or changed (``/``, ``/var``, ``/var/log``,
  ``/root``, ...: :data:`BUILT_DIRS`) are as old as the image too; ``/boot`` and
  ``/home`` keep the sandbox's old date, as the base image's packages dated them.
  ``/tmp`` and ``/mnt`` are gone: empty, and not ignored, so the first reset's
  ``git clean -fd`` deleted them (:func:`settle_skeleton`).
* **The gold's container across turns**: upstream scored every turn, and each scoring
  reset the gold's container (``git reset --hard``) and ran the gold again. git keeps
  no times: a file the gold changed or deleted was written anew at the next scoring's
  reset, dated then, and so was the directory holding anything the gold changed, made
  or deleted. A gold that depends on file times (``find -mtime +31 -delete``) finds
  other files at its second run. :func:`rewritten_by_reset` says which paths, and the
  gold's tree of each later scoring is dated so (``redated`` of :func:`upstream_tree`).
* **Containers that lived from episode to episode**: upstream kept its two containers
  while the tasks shared an image, and reset the agent's only at the start of an
  episode. So an episode found the files the earlier episodes' agents and golds had
  changed written anew, dated at the reset after them. An environment keeps that
  history while its tasks share a file system (a task of another one starts it
  afresh, as a new image did): a replay reproduces a recorded run when its episodes
  run in the file's order in one environment (``--workers 1``); with more workers each
  has its own history, as separate upstream runs had.
* **Fingerprints**: the reward compared ``md5sum p`` for a path with a "." and
  ``md5deep -r p`` for the others; the image had no ``md5deep``, so the command failed
  with the same message on both sides and such a path always matched
  (:func:`upstream_hashes`).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace

from intercode.sandbox.base import Change, ExecResult, Sandbox
from intercode.sandbox.filetree import DIR, LINK, Entry, FileTree
from intercode.sandbox.layout import EPOCH_NS, PATH

__all__ = ["BUILT_DIRS", "CLEANED_DIRS", "MISSING_MD5DEEP", "UPSTREAM_AGE_NS",
           "UPSTREAM_EXEC_ENV", "UPSTREAM_GLOBBING", "date_access_times", "rewritten_by_reset",
           "run_like_upstream", "settle_skeleton", "upstream_hashes", "upstream_simplify_path",
           "upstream_tree"]

# globbing as in upstream's bash 5.1 (no-op where the option is unknown)
UPSTREAM_GLOBBING = "shopt -u globskipdots 2>/dev/null; "
UPSTREAM_AGE_NS = 30 * 60 * 1_000_000_000
# the sandbox's own directories that upstream's image build made or wrote into
BUILT_DIRS = ("/", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var",
              "/var/log", "/var/tmp")
# what ``docker exec`` gave a command in upstream's container (as root): these variables
# and no other (no locale: the POSIX one), through env(1), which execs the command
UPSTREAM_EXEC_ENV = ("/usr/bin/env", "-i", f"PATH={PATH}", "HOSTNAME=intercode",
                     "HOME=/root")
# and those git did not keep: not ignored, empty unless the setup script put files there
CLEANED_DIRS = ("/mnt", "/tmp")
# what ``docker exec`` answered for ``md5deep -r <path>`` in upstream's image (no md5deep)
MISSING_MD5DEEP = ('OCI runtime exec failed: exec failed: unable to start container process: '
                   'exec: "md5deep": executable file not found in $PATH: unknown\r\n')


def upstream_tree(tree: FileTree, start_ns: int, ignored: Sequence[str],
                  redated: Mapping[str, int] | None = None) -> FileTree:
    """``tree`` as an upstream episode starting at ``start_ns`` found it: without the
    directories ``git clean -fd`` deletes and dated by the image's age (module docstring);
    the paths of ``redated`` dated as it says (rewritten by a later reset).

    A directory stays when something below it is a file or a link, or when it or
    something below it has an ignored name (``ignored``: the names of upstream's
    ``.gitignore``; git clean without ``-x`` leaves those).
    """
    ignored_names = frozenset(ignored)
    kept: set[str] = set()
    for entry in tree.entries:
        parts = entry.path.split("/")
        if entry.kind != DIR or ignored_names.intersection(parts):
            kept.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    dated = start_ns - UPSTREAM_AGE_NS
    redated = redated or {}

    def date(e: Entry) -> Entry:
        if e.path in redated:
            return replace(e, mtime_ns=redated[e.path])
        return replace(e, mtime_ns=dated) if e.mtime_ns == EPOCH_NS else e

    return FileTree.of(date(e) for e in tree.entries if e.kind != DIR or e.path in kept)


def date_access_times(sandbox: Sandbox, tree: FileTree, start_ns: int,
                      redated: Collection[str] = ()) -> None:
    """Give the files and directories of ``tree`` (just loaded in ``sandbox`` by
    :func:`upstream_tree` for ``start_ns``) whose modification time the setup script
    set the image's age as access time: a restore sets both times to the entry's
    (``redated``: paths a reset wrote anew, whose access time is their new date)."""
    dated = start_ns - UPSTREAM_AGE_NS
    paths = ["/" + e.path for e in tree.entries
             if e.kind != LINK and e.mtime_ns != dated and e.path not in redated]
    if paths:
        sandbox.exec(["touch", "-a", "-c", "-d", _touch_date(dated), "--", *paths])


def settle_skeleton(sandbox: Sandbox, tree: FileTree, start_ns: int) -> None:
    """The sandbox's own directories as upstream's container had them after a reset for
    an episode starting at ``start_ns`` (``tree`` just loaded): :data:`CLEANED_DIRS`
    that hold nothing of the tree deleted, the rest of :data:`BUILT_DIRS` (those the
    sandbox has) dated as old as the image."""
    used = {"/" + e.path.split("/", 1)[0] for e in tree.entries}
    gone = [d for d in CLEANED_DIRS if d not in used]
    dated = [d for d in BUILT_DIRS if d not in gone]
    sandbox.exec(["touch", "-c", "-d", _touch_date(start_ns - UPSTREAM_AGE_NS), "--",
                  *dated])
    if gone:
        sandbox.exec(["rmdir", "--", *gone])


def _touch_date(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    return f"@{seconds}.{frac:09d}"


def rewritten_by_reset(changes: Iterable[Change], tree: FileTree) -> set[str]:
    """The paths of ``tree`` that upstream's reset (``git reset --hard; git clean -fd``)
    wrote anew after a command made ``changes`` (the sandbox's diff, ``git status``'s
    lines): each changed or deleted file, and the directory holding anything changed,
    deleted or made (git writes a file anew and deletes what it does not track), or a
    directory deleted whole."""
    known = {e.path for e in tree.entries}
    paths: set[str] = set()
    deleted: set[str] = set()
    for change in changes:
        path = change.path.rstrip("/")
        if change.code != "??":
            paths.add(path)
        if change.code == "D":
            deleted.add(path)
        paths.add(posixpath.dirname(path))
    if deleted:
        # a directory whose every entry was deleted was deleted too (``rm -r``): git
        # made it anew, which changed the directory holding it
        below: dict[str, list[str]] = {}
        for e in tree.entries:
            if e.kind != DIR:
                for parent in _parents(e.path):
                    below.setdefault(parent, []).append(e.path)
        for directory, inside in below.items():
            if all(p in deleted for p in inside):
                paths.add(posixpath.dirname(directory))
    return {p for p in paths if p in known}


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def upstream_hashes(paths: Sequence[str], hashes: Callable[[list[str]], Mapping[str, str]],
                    ) -> dict[str, str]:
    """Fingerprints of ``paths`` as upstream compared them: ``hashes`` (the sandbox's)
    for a path with a "." (``md5sum``), upstream's failed ``md5deep`` for the others."""
    hashed = [p for p in paths if "." in p]
    found = dict(hashes(hashed)) if hashed else {}
    return {p: found[p] if "." in p else MISSING_MD5DEEP for p in paths}


def run_like_upstream(sandbox: Sandbox, action: str, workdir: str,
                      track_cd: bool) -> tuple[ExecResult, str]:
    """Upstream's ``exec_run('/bin/bash -c "<action>"', workdir=...)`` with its ``cd``
    emulation: the result and the working directory after it (``workdir`` when
    ``track_cd`` is false: the gold always ran at ``/``)."""
    action = action.strip()
    if not track_cd:
        workdir = "/"
    is_cd = track_cd and action.startswith("cd")
    new_path = workdir
    run_in = workdir
    if is_cd:
        new_path = upstream_simplify_path(workdir, action.partition("cd ")[2].strip())
        action, run_in = f"cd {new_path}", "/"
    try:
        argv = shlex.split(f'/bin/bash -c "{action}"')
    except ValueError:
        return ExecResult(output="Malformed command", exit_code=None, cwd=run_in), workdir
    if len(argv) >= 3 and argv[1] == "-c":
        # upstream's image had bash 5.1, where `.*` matches `.` and `..` (5.2's
        # globskipdots); on the same line, so error messages keep their line numbers
        argv[2] = UPSTREAM_GLOBBING + argv[2]
    result = sandbox.exec([*UPSTREAM_EXEC_ENV, *argv], cwd=run_in)
    if result.timed_out:
        return ExecResult(output="Command timed out", exit_code=None, timed_out=True,
                          cwd=run_in), workdir
    if is_cd and result.exit_code == 0:
        return result, new_path
    return result, workdir


def upstream_simplify_path(current: str, changed: str) -> str:
    """Where upstream's emulated ``cd`` went: ``changed`` resolved lexically from ``current``."""
    if not changed:
        return current
    joined = changed if changed.startswith("/") else f"{current}/{changed}"
    return "/" + posixpath.normpath("/" + joined).lstrip("/")
