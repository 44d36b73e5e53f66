"""--upstream-quirks' trees and fingerprints: what upstream's reset and image did."""

from __future__ import annotations

from intercode.envs.bash_upstream import (
    MISSING_MD5DEEP,
    UPSTREAM_AGE_NS,
    rewritten_by_reset,
    upstream_hashes,
    upstream_tree,
)
from intercode.envs.core.bash import IGNORED_NAMES
from intercode.sandbox.base import Change
from intercode.sandbox.filetree import DIR, FILE, LINK, Entry, FileTree
from intercode.sandbox.layout import EPOCH_NS

START = 1_800_000_000 * 1_000_000_000
SET_BY_SCRIPT = 1_654_041_599 * 1_000_000_000  # touch -t 202205312359.59


def tree(*entries: Entry) -> FileTree:
    return FileTree.of(entries)


def d(path: str) -> Entry:
    return Entry(path, DIR, 0o755, EPOCH_NS)


def f(path: str, mtime: int = EPOCH_NS) -> Entry:
    return Entry(path, FILE, 0o644, mtime, b"x\n")


def test_directories_without_a_file_are_gone_as_after_git_clean():
    before = tree(d("w"), d("w/empty"), d("w/nested"), d("w/nested/deeper"), d("w/full"),
                  f("w/full/a.txt"))
    after = upstream_tree(before, START, IGNORED_NAMES)
    assert after.paths() == ["w", "w/full", "w/full/a.txt"]


def test_a_link_or_an_empty_file_keeps_its_directories():
    before = tree(d("w"), d("w/l"), Entry("w/l/to", LINK, 0o777, EPOCH_NS, "/nowhere"),
                  d("w/e"), Entry("w/e/empty", FILE, 0o644, EPOCH_NS, b""))
    after = upstream_tree(before, START, IGNORED_NAMES)
    assert after.paths() == ["w", "w/e", "w/e/empty", "w/l", "w/l/to"]


def test_ignored_names_are_left_alone_by_git_clean():
    before = tree(d("w"), d("w/bin"), d("home"), d("home/user"), d("home/user/empty"),
                  d("w/x"), d("w/x/var"))
    after = upstream_tree(before, START, IGNORED_NAMES)
    assert after.paths() == ["home", "home/user", "home/user/empty", "w", "w/bin", "w/x",
                             "w/x/var"]


def test_the_scripts_entries_are_as_old_as_the_image_at_the_episodes_start():
    before = tree(d("w"), f("w/a.txt"), f("w/old.txt", SET_BY_SCRIPT))
    times = {e.path: e.mtime_ns for e in upstream_tree(before, START, IGNORED_NAMES).entries}
    assert times == {"w": START - UPSTREAM_AGE_NS, "w/a.txt": START - UPSTREAM_AGE_NS,
                     "w/old.txt": SET_BY_SCRIPT}
    assert 5 * 60 * 10**9 < UPSTREAM_AGE_NS < 60 * 60 * 10**9  # -mmin +5 and -mmin -60 match


def test_the_dated_tree_is_the_same_for_the_same_start():
    before = tree(d("w"), d("w/empty"), f("w/a.txt"))
    assert upstream_tree(before, START, IGNORED_NAMES).id == \
        upstream_tree(before, START, IGNORED_NAMES).id
    assert upstream_tree(before, START, IGNORED_NAMES).id != \
        upstream_tree(before, START + 1, IGNORED_NAMES).id


def test_a_path_without_a_dot_matches_as_upstreams_failed_md5deep():
    asked: list[list[str]] = []

    def hashes(paths: list[str]) -> dict[str, str]:
        asked.append(paths)
        return {p: f"digest of {p}" for p in paths}

    found = upstream_hashes(["backup/", "w/a.txt", "w/dir.d/", "w/Icon\r"], hashes)
    assert asked == [["w/a.txt", "w/dir.d/"]]  # md5deep never ran: not asked
    assert found == {"backup/": MISSING_MD5DEEP, "w/a.txt": "digest of w/a.txt",
                     "w/dir.d/": "digest of w/dir.d/", "w/Icon\r": MISSING_MD5DEEP}


def test_no_sandbox_request_when_every_path_lacks_a_dot():
    def hashes(paths: list[str]) -> dict[str, str]:
        raise AssertionError("asked")

    assert upstream_hashes(["backup/"], hashes) == {"backup/": MISSING_MD5DEEP}


def test_a_reset_writes_anew_what_changed_and_the_directories_holding_changes():
    before = tree(d("w"), d("w/a"), f("w/a/kept.txt"), f("w/a/edited.txt"), d("w/b"),
                  f("w/b/gone.txt"), d("w/c"), f("w/c/x.txt"))
    changes = [Change("w/a/edited.txt", "M"), Change("w/b/gone.txt", "D"),
               Change("w/c/new/", "??"), Change("w/new.txt", "??")]
    assert rewritten_by_reset(changes, before) == {
        "w/a/edited.txt", "w/a", "w/b/gone.txt", "w/b", "w/c", "w"}


def test_the_paths_a_reset_wrote_anew_take_their_new_date():
    before = tree(d("w"), f("w/a.txt"), f("w/old.txt", SET_BY_SCRIPT))
    later = START + 60 * 1_000_000_000
    after = upstream_tree(before, START, IGNORED_NAMES, {"w/old.txt": later})
    times = {e.path: e.mtime_ns for e in after.entries}
    assert times == {"w": START - UPSTREAM_AGE_NS, "w/a.txt": START - UPSTREAM_AGE_NS,
                     "w/old.txt": later}
