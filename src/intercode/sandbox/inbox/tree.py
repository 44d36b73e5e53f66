"""The writable file system of a sandbox: load, restore, capture, diff and hash.

Runs inside the sandbox (as part of the supervisor) and, for tests, on the host
against a temporary directory. Paths are relative to the root, ``/``-separated,
without a leading slash. Symlinks are never followed and other mounts are never
entered.
"""

import errno
import hashlib
import os
import stat
import time

DIR, FILE, LINK = "d", "f", "l"

# A change within one clock tick of our last look at an entry may leave its ctime
# unchanged on kernels that stamp files with a coarse clock; such recent records are
# checked by content instead of being trusted.
TRUST_NS = 50 * 1000 * 1000


def kind_of(mode):
    """Return the entry kind of an ``st_mode`` (``None`` for sockets, fifos, devices)."""
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISLNK(mode):
        return LINK
    return None


def ancestors(rel):
    """Proper ancestors of a relative path, outermost first (``a/b/c`` -> ``a``, ``a/b``)."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


class Tree:
    """One writable root and the pristine state it returns to at every restore."""

    def __init__(self, root, scratch_mounts=()):
        self.root = root
        self.root_dev = os.lstat(root).st_dev
        self.scratch_mounts = list(scratch_mounts)
        self.base = {}
        self.pristine = {}
        self.clean = {}
        self._md5_cache = {}

    # -- paths and listing -------------------------------------------------------------

    def abspath(self, rel):
        """Absolute path of a relative one."""
        return os.path.join(self.root, rel) if rel else self.root

    def scan(self, prune_names=frozenset()):
        """Map every entry below the root to its ``lstat`` result.

        Entries named in ``prune_names`` are skipped with everything below them, as
        are other mounts. Unreadable directories are opened with a temporary chmod.
        """
        found = {}
        stack = [""]
        while stack:
            rel = stack.pop()
            for name, st in self._listdir(rel):
                if name in prune_names:
                    continue
                child = rel + "/" + name if rel else name
                if stat.S_ISDIR(st.st_mode):
                    if st.st_dev != self.root_dev:
                        continue
                    stack.append(child)
                found[child] = st
        return found

    def _listdir(self, rel):
        path = self.abspath(rel)
        try:
            return self._scandir(path)
        except PermissionError:
            pass
        except OSError:
            return []
        try:
            mode = os.lstat(path).st_mode
            os.chmod(path, stat.S_IMODE(mode) | 0o700)
        except OSError:
            return []
        try:
            return self._scandir(path)
        except OSError:
            return []
        finally:
            os.chmod(path, stat.S_IMODE(mode))

    @staticmethod
    def _scandir(path):
        result = []
        with os.scandir(path) as it:
            for entry in it:
                try:
                    result.append((entry.name, entry.stat(follow_symlinks=False)))
                except OSError:
                    continue
        return result

    # -- pristine state ----------------------------------------------------------------

    def set_base(self, entries):
        """Declare the entries every tree has (the sandbox skeleton)."""
        self.base = {e[0]: tuple(e[1:]) for e in entries}

    def load(self, entries):
        """Make ``base`` plus ``entries`` the pristine state and restore to it."""
        new = dict(self.base)
        for path, kind, mode, mtime_ns, payload in entries:
            new[path] = (kind, mode, mtime_ns, payload)
        for path in list(self.clean):
            if self.pristine.get(path) != new.get(path):
                del self.clean[path]
        self.pristine = new
        return self.restore()

    def capture(self):
        """Return ``(entries, skipped)`` describing the whole tree with file contents."""
        entries = []
        skipped = []
        for rel, st in sorted(self.scan().items()):
            kind = kind_of(st.st_mode)
            mode = stat.S_IMODE(st.st_mode)
            if kind == DIR:
                entries.append((rel, DIR, mode, st.st_mtime_ns, None))
            elif kind == FILE:
                entries.append((rel, FILE, mode, st.st_mtime_ns, self._read(rel)))
            elif kind == LINK:
                entries.append((rel, LINK, mode, st.st_mtime_ns, os.readlink(self.abspath(rel))))
            else:
                skipped.append(rel)
        return entries, skipped

    # -- restore -----------------------------------------------------------------------

    def restore(self):
        """Bring the tree back to the pristine state, touching only what changed."""
        current = self.scan()
        stats = {"deleted": 0, "written": 0}
        doomed = set()
        dirty = set()
        for rel in sorted(current):
            if doomed and any(a in doomed for a in ancestors(rel)):
                continue
            want = self.pristine.get(rel)
            if want is None or want[0] != kind_of(current[rel].st_mode):
                self._unlocked(rel, dirty)
                self._remove(rel, current[rel])
                doomed.add(rel)
                stats["deleted"] += 1
        touched = []
        for rel in sorted(self.pristine):
            st = None if rel in doomed else current.get(rel)
            if st is not None and self._same_inode(rel, st):
                if not self._trusted(rel, st):
                    if not self._matches_pristine(rel, st):
                        self._unlocked(rel, dirty)
                        self._create(rel, *self.pristine[rel], exists=True)
                        stats["written"] += 1
                        if self.pristine[rel][0] == DIR:
                            dirty.add(rel)
                    touched.append(rel)
                continue
            kind, mode, mtime_ns, payload = self.pristine[rel]
            if st is None or kind != DIR:
                self._unlocked(rel, dirty)
            self._create(rel, kind, mode, mtime_ns, payload, exists=st is not None)
            touched.append(rel)
            stats["written"] += 1
            if kind == DIR:
                dirty.add(rel)
        for rel in sorted(dirty, key=lambda r: -r.count("/")):
            want = self.pristine.get(rel)
            if rel and want is not None and want[0] == DIR:
                path = self.abspath(rel)
                os.chmod(path, want[1])
                os.utime(path, ns=(want[2], want[2]), follow_symlinks=False)
                touched.append(rel)
        now = time.time_ns()
        for rel in touched:
            st = os.lstat(self.abspath(rel))
            self.clean[rel] = (st.st_ino, st.st_ctime_ns, now)
        self._empty_scratch()
        return stats

    def _same_inode(self, rel, st):
        record = self.clean.get(rel)
        return record is not None and record[0] == st.st_ino and record[1] == st.st_ctime_ns

    def _trusted(self, rel, st):
        """Whether an entry is unchanged since the last restore, from its metadata alone."""
        record = self.clean.get(rel)
        return (record is not None and record[0] == st.st_ino and record[1] == st.st_ctime_ns
                and st.st_ctime_ns + TRUST_NS < record[2])

    def _matches_pristine(self, rel, st):
        """Full comparison of an entry with its pristine state."""
        kind, mode, mtime_ns, payload = self.pristine[rel]
        if kind_of(st.st_mode) != kind or stat.S_IMODE(st.st_mode) != mode:
            return False
        if st.st_mtime_ns != mtime_ns:
            return False
        if kind == FILE:
            return st.st_size == len(payload) and self._read(rel) == payload
        if kind == LINK:
            return os.readlink(self.abspath(rel)) == payload
        return True

    def _unlocked(self, rel, dirty):
        """Make the parent of ``rel`` writable and remember to restore it afterwards."""
        parent = rel.rpartition("/")[0]
        dirty.add(parent)
        path = self.abspath(parent)
        mode = os.lstat(path).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(path, stat.S_IMODE(mode) | 0o700)

    def _remove(self, rel, st):
        path = self.abspath(rel)
        if stat.S_ISDIR(st.st_mode):
            self._rmtree(path)
        else:
            os.unlink(path)
        self.clean.pop(rel, None)

    def _rmtree(self, path):
        mode = os.lstat(path).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(path, stat.S_IMODE(mode) | 0o700)
        for name, st in self._scandir(path):
            child = os.path.join(path, name)
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != self.root_dev:
                    continue
                self._rmtree(child)
            else:
                os.unlink(child)
        os.rmdir(path)

    def _create(self, rel, kind, mode, mtime_ns, payload, exists):
        path = self.abspath(rel)
        if kind == DIR:
            if not exists:
                os.mkdir(path, 0o700)
            os.chmod(path, mode | 0o700)
            return
        if exists:
            os.unlink(path)
        if kind == FILE:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            os.utime(path, ns=(mtime_ns, mtime_ns))
        else:
            os.symlink(payload, path)
            os.utime(path, ns=(mtime_ns, mtime_ns), follow_symlinks=False)

    def _empty_scratch(self):
        for rel in self.scratch_mounts:
            path = self.abspath(rel)
            try:
                names = os.listdir(path)
            except OSError:
                continue
            for name in names:
                child = os.path.join(path, name)
                try:
                    if os.path.isdir(child) and not os.path.islink(child):
                        self._rmtree(child)
                    else:
                        os.unlink(child)
                except OSError:
                    continue

    # -- diff (what `git status --short` reported upstream) -----------------------------

    def status(self, ignore_names):
        """Return sorted ``[path, code]`` pairs as upstream's ``git status --short`` did.

        Tracked paths are the pristine files and symlinks; directories are not
        tracked; an untracked directory holding no tracked path is reported once as
        ``dir/``; names in ``ignore_names`` are ignored at any depth, and so is
        ``.git``, which git never lists (nested repositories are not modelled).
        """
        ignore = frozenset(ignore_names).union((".git",))
        current = self.scan(prune_names=ignore)
        tracked = {}
        tracked_dirs = set()
        for rel, entry in self.pristine.items():
            if entry[0] == DIR or ignore.intersection(rel.split("/")):
                continue
            tracked[rel] = entry
            tracked_dirs.update(ancestors(rel))
        changes = []
        for rel, entry in tracked.items():
            code = self._tracked_code(rel, entry, current.get(rel))
            if code:
                changes.append([rel, code])
        untracked = set()
        for rel, st in current.items():
            if rel in tracked or kind_of(st.st_mode) not in (FILE, LINK):
                continue
            shown = rel
            for anc in ancestors(rel):
                if anc not in tracked_dirs:
                    shown = anc + "/"
                    break
            if shown != rel and shown[:-1] in tracked:
                # a directory where a tracked file was: git drops the collapsed entry
                # because its name is in the index, and so shows nothing below it
                continue
            untracked.add(shown)
        changes.extend([u, "??"] for u in untracked)
        changes.sort()
        return changes

    def _tracked_code(self, rel, entry, st):
        if st is None:
            return "D"
        now = kind_of(st.st_mode)
        if now == DIR:
            return "D"
        if now is None:
            # git takes a fifo, socket or device for a regular file
            return "M" if entry[0] == FILE else "T"
        if now != entry[0]:
            return "T"
        if self._trusted(rel, st):
            return None
        if now == LINK:
            return "M" if os.readlink(self.abspath(rel)) != entry[3] else None
        if (st.st_mode & 0o100) != (entry[1] & 0o100):
            return "M"
        if st.st_size != len(entry[3]) or self._read(rel) != entry[3]:
            return "M"
        return None

    # -- hashing (upstream: `md5sum p` if "." in p, else `md5deep -r p`) -----------------

    def hashes(self, paths):
        """Map each status path to a string equal iff upstream's hash outputs were equal."""
        return {p: self._hash_one(p) for p in paths}

    def _hash_one(self, shown):
        rel = shown.rstrip("/")
        path = self.abspath(rel)
        if "." in shown:
            try:
                if os.path.isdir(path):
                    return "md5sum: %s: Is a directory" % shown
                return "%s  %s" % (self._md5_file(path), shown)
            except OSError as exc:
                return "md5sum: %s: %s" % (shown, os.strerror(exc.errno or errno.EIO))
        if not os.path.exists(path):
            return "md5deep: %s: No such file or directory" % shown
        if not os.path.isdir(path):
            return "%s  %s" % (self._md5_file(path), shown)
        lines = []
        for dirpath, _dirs, files in os.walk(path):
            for name in files:
                full = os.path.join(dirpath, name)
                if os.path.islink(full) and os.path.isdir(full):
                    continue
                shown_file = os.path.relpath(full, self.root)
                try:
                    lines.append("%s  %s" % (self._md5_file(full), shown_file))
                except OSError as exc:
                    lines.append("md5deep: %s: %s" % (shown_file,
                                                      os.strerror(exc.errno or errno.EIO)))
        lines.sort(key=lambda line: line[34:])
        return "\n".join(lines)

    def _md5_file(self, path):
        st = os.stat(path)
        key = (path, st.st_ino, st.st_ctime_ns, st.st_size)
        cached = self._md5_cache.get(key)
        if cached is None:
            digest = hashlib.md5()
            with self._open_for_read(path) as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            cached = digest.hexdigest()
            if len(self._md5_cache) > 4096:
                self._md5_cache.clear()
            self._md5_cache[key] = cached
        return cached

    def _read(self, rel):
        with self._open_for_read(self.abspath(rel)) as fh:
            return fh.read()

    @staticmethod
    def _open_for_read(path):
        """Open a file for reading even if its owner removed the read permission."""
        try:
            return open(path, "rb")
        except PermissionError:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, mode | 0o400)
            try:
                return open(path, "rb")
            finally:
                os.chmod(path, mode)
