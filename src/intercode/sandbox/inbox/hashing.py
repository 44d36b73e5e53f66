"""Fingerprints of diff paths, as upstream compared them: ``md5sum p`` if "." in p, else
``md5deep -r p``; two fingerprints are equal iff upstream's outputs were.

A mixin of :class:`tree.Tree`: it needs ``abspath``, ``ours`` and ``_md5_cache``.
"""

import errno
import os
import stat
import time

from . import fsops
from .fsops import ancestors, join

# What one `hashes` request may read; past it the remaining paths get a fingerprint
# that matches nothing (the agent's tree made the comparison too costly).
HASH_BYTES = 1 << 30
HASH_SECONDS = 30.0
DEV_NULL = (1, 3)
EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"


class Hashing:
    """The ``hashes`` request of a tree."""

    def hashes(self, paths):
        """Map each status path to a string equal iff upstream's hash outputs were equal.

        Links are followed as md5sum did, but only to a regular file or, at the top of
        an ``md5deep -r``, to a directory of the tree; a fifo, socket or device gives
        its type instead of a digest and is never opened (``/dev/null`` reads empty).
        At most ``HASH_BYTES`` (and ``HASH_SECONDS``) are read per request; past that,
        the remaining paths get a fingerprint that matches nothing.
        """
        budget = _Budget()
        grants = fsops.Grants()
        try:
            return {p: self._hash_one(p, grants, budget) for p in paths}
        finally:
            grants.revert()

    def _hash_one(self, shown, grants, budget):
        rel = shown.rstrip("/")
        path = self.abspath(rel)
        self._open_ancestors(rel, grants)
        tool = "md5sum" if "." in shown else "md5deep"
        try:
            st = os.stat(path)
        except OSError as exc:
            if tool == "md5deep":
                return "md5deep: %s: No such file or directory" % shown
            return "%s: %s: %s" % (tool, shown, os.strerror(exc.errno or errno.EIO))
        if not stat.S_ISDIR(st.st_mode):
            try:
                return "%s  %s" % (self._digest(path, st, True, grants, budget), shown)
            except OSError as exc:
                return "%s: %s: %s" % (tool, shown, os.strerror(exc.errno or errno.EIO))
        if tool == "md5sum":
            return "md5sum: %s: Is a directory" % shown
        if not self.ours(st.st_dev):
            return "md5deep: %s: a directory outside the sandbox's tree" % shown
        return "\n".join(self._md5deep(rel, st, grants, budget))

    def _md5deep(self, rel, st, grants, budget):
        """Lines of ``md5deep -r rel``: every file below, links to directories skipped."""
        lines = []
        stack = [(rel, st)]
        while stack:
            top, top_st = stack.pop()
            listed = fsops.list_dir(self.abspath(top), top_st, grants, follow=top == rel)
            for name, child_st in listed or ():
                child = join(top, name)
                if stat.S_ISDIR(child_st.st_mode):
                    if self.ours(child_st.st_dev):
                        stack.append((child, child_st))
                    continue
                line = self._md5deep_line(child, child_st, grants, budget)
                if line is not None:
                    lines.append((child, line))
        lines.sort()
        return [line for _child, line in lines]

    def _md5deep_line(self, rel, st, grants, budget):
        path = self.abspath(rel)
        try:
            if stat.S_ISLNK(st.st_mode):
                st = os.stat(path)
                if stat.S_ISDIR(st.st_mode):
                    return None
            return "%s  %s" % (self._digest(path, st, True, grants, budget), rel)
        except OSError as exc:
            return "md5deep: %s: %s" % (rel, os.strerror(exc.errno or errno.EIO))

    def _open_ancestors(self, rel, grants):
        """Let us search the directories above ``rel`` (the agent may have closed them)."""
        for anc in ["", *ancestors(rel)]:
            path = self.abspath(anc)
            try:
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode) and self.ours(st.st_dev):
                    grants.need(path, st, fsops.NEED_READ)
            except OSError:
                return

    def _digest(self, path, st, follow, grants, budget):
        """MD5 of a regular file (cached by inode), or what stands in for one."""
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev),
                                             os.minor(st.st_rdev)) == DEV_NULL:
                return EMPTY_MD5
            return "(%s)" % _special_name(st.st_mode)
        if not budget.take(st.st_size):
            return budget.marker
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._md5_cache.get(key)
        if cached is None:
            cached = fsops.md5_file(path, st, follow, grants)
            if len(self._md5_cache) > 4096:
                self._md5_cache.clear()
            self._md5_cache[key] = cached
        return cached


class _Budget:
    """Bytes and time one hashes request may spend."""

    def __init__(self):
        self.left = HASH_BYTES
        self.deadline = time.monotonic() + HASH_SECONDS
        self.marker = "(not hashed: the tree is too large to compare, %s)" % os.urandom(8).hex()

    def take(self, size):
        """Account for reading ``size`` bytes; False once over budget."""
        self.left -= size
        return self.left >= 0 and time.monotonic() < self.deadline


def _special_name(mode):
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"
