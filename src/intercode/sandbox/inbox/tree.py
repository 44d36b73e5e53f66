"""The writable file system of a sandbox: load, restore, capture, diff and hash.

Runs inside the sandbox (as part of the supervisor) and, for tests, on the host
against a temporary directory. Paths are relative to the root, ``/``-separated,
without a leading slash. Symlinks are never followed (except where upstream's
``md5sum`` followed them, and then only to a regular file), special files are never
opened, and other mounts are never entered.

The supervisor is the agent's user, so the agent's modes bind it too. Like
upstream's git and md5sum, which ran as root, the diff and the hashes read through
permissions: a directory or file the agent made unreadable is opened up for the
look and its mode put back. Git ignores directory modes and xattrs, so the diff
does too; a restore brings back every mode and removes every xattr or ACL.
"""

import errno
import os
import stat
import time

from . import fsops, hashing, views
from .fsops import ancestors, join

__all__ = ["DIR", "FILE", "LINK", "LOOKED", "TRUST_NS", "Tree", "ancestors", "kind_of",
           "vouch_ns"]

DIR, FILE, LINK = "d", "f", "l"

CLOCK_REALTIME_COARSE = 5  # Linux's clock id (``time`` names it on no platform)


def trust_ns():
    """How old a ctime must be, when we record it, for the record to be trusted.

    A change soon after our last look at an entry may leave its ctime unchanged on
    kernels that stamp files with a coarse clock: the ticking clock the kernel reads for
    time stamps moves in whole ticks and lags the precise one by up to about two of
    them (6.7 ms measured at 250 Hz). Such recent records are checked by content
    instead. Four ticks of the coarse clock, measured (16 ms at 250 Hz), at least 10 ms;
    50 ms where it cannot be measured.
    """
    try:
        tick = time.clock_getres(CLOCK_REALTIME_COARSE)
    except (OSError, AttributeError):
        return 50 * 1000 * 1000
    return min(50 * 1000 * 1000, max(10 * 1000 * 1000, int(4 * tick * 1e9)))


TRUST_NS = trust_ns()


def vouch_ns():
    """The time a record taken now vouches from: an entry whose ctime is before it is
    trusted (see ``Tree._trusted``). It is the kernel's coarse clock, the one that stamps
    files, read before the look: every later change is stamped at or after it, whatever
    the clock's lag behind the precise one, so an entry stamped in an earlier tick is
    trusted at once. Where that clock cannot be read: the precise clock less
    :data:`TRUST_NS`."""
    try:
        return time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    except (OSError, AttributeError):
        return time.time_ns() - TRUST_NS


# the vouch of a file's or link's record whose own look is its warrant (see
# Tree._trusted, fresh_ctimes): never a time, so no ctime is before it
LOOKED = -1

# a restore that finds no room waits this long (s) before each new try: the agent's last
# files may be freed only after its processes are gone (a file in flight on a unix socket
# is let go by the kernel's collector, later); then the room is the pristine tree's
ROOM_WAITS = (0.002, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)

_KINDS = {stat.S_IFDIR: DIR, stat.S_IFREG: FILE, stat.S_IFLNK: LINK}
# a trusted file read for its bytes (see Tree._same_bytes): never through a link, never
# blocking (a FIFO put in its place has another inode: it is not trusted), and without
# moving its access time (the owner may ask that: the supervisor is the owner)
NOATIME = getattr(os, "O_NOATIME", 0)
SAME_BYTES_FLAGS = (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
                    | NOATIME)


def kind_of(mode):
    """Return the entry kind of an ``st_mode`` (``None`` for sockets, fifos, devices)."""
    return _KINDS.get(stat.S_IFMT(mode))


# The size of an empty directory on tmpfs: the kernel counts 20 bytes per entry, "." and
# ".." included, in a size no one can set; a scan lists no directory of that size.
EMPTY_TMPFS_DIR = 40


def on_tmpfs(dev):
    """Whether the file system of device ``dev`` is a tmpfs (``/proc/self/mountinfo``)."""
    want = "%d:%d" % (os.major(dev), os.minor(dev))
    found = False
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                fields = line.split()
                if len(fields) > 2 and fields[2] == want and " - " in line:
                    found = line.split(" - ", 1)[1].split()[0] == "tmpfs"
    except OSError:
        return False
    return found


ENTRY_OVERHEAD = 256  # bytes a kept entry costs besides its payload (its tuple, its path)


def held_size(value):
    """What the supervisor's memory holds for a state's value ``(kind, mode, mtime,
    payload)``: the payload (a file's bytes, a link's target) and the entry."""
    payload = value[3]
    return ENTRY_OVERHEAD + (len(payload) if payload else 0)


class Tree(hashing.Hashing):
    """One writable root and the pristine state it returns to at every restore."""

    def __init__(self, root, scratch_mounts=()):
        self.root = root
        self._prefix = root if root.endswith("/") else root + "/"  # (see abspath)
        st = os.lstat(root)
        self.root_dev = st.st_dev
        self.devs = frozenset((st.st_dev,))
        self.root_mode = stat.S_IMODE(st.st_mode) | 0o700
        self.empty_size = EMPTY_TMPFS_DIR if on_tmpfs(st.st_dev) else None
        # whether a record may vouch by its own look (see _trusted): tried here, before
        # anything of an agent's runs (the supervisor builds its tree at its start)
        self.fresh_ctimes = fsops.fresh_ctimes(root)
        self.scratch_mounts = list(scratch_mounts)
        self.scratch_modes = {}
        for rel in self.scratch_mounts:
            try:
                self.scratch_modes[rel] = stat.S_IMODE(os.lstat(self.abspath(rel)).st_mode)
            except OSError:
                continue
        self.base = {}
        self.pristine = {}
        self.clean = {}
        self._md5_cache = {}
        self.views = views.Views(root)  # (see _same_bytes)
        # the roots of the tree and of the scratch mounts as a load left them: {path:
        # mtime}, and the root's listing order of pristine names (see _record_roots)
        self._root_times = {}
        self._root_order = None  # (the root's record is ``clean[""]``)
        self._tracked_cache = None  # (pristine, ignore, tracked, dirs): see _tracked

    # -- paths and listing -------------------------------------------------------------

    def ours(self, dev):
        """Whether a directory on device ``dev`` belongs to the tree (not another mount)."""
        return dev in self.devs

    def abspath(self, rel):
        """Absolute path of a relative one (which never starts with a slash: names come
        from directory listings; ``os.path.join`` cost a tenth of a scan)."""
        return self._prefix + rel if rel else self.root

    def scan(self, prune_names=frozenset()):
        """Map every entry below the root to its ``lstat`` result.

        Entries named in ``prune_names`` are skipped with everything below them, as
        are other mounts. Unreadable directories are opened up for the look.
        """
        grants = fsops.Grants()
        try:
            return self._scan(prune_names, grants)
        finally:
            grants.revert()

    def _scan(self, prune_names, grants, descend=None, opened=None):
        """``scan`` with the caller's grants; ``descend(rel)`` limits where it goes.

        The directories whose mode had to be opened up are added to ``opened``.
        """
        found = {}
        stack = [("", os.lstat(self.root))]
        empty = self.empty_size
        while stack:
            rel, st = stack.pop()
            if st.st_size == empty:  # an empty tmpfs directory: nothing to list
                continue
            granted = len(grants.changed)
            entries = fsops.list_dir(self.abspath(rel), st, grants, grants.bits)
            if opened is not None and len(grants.changed) > granted:
                opened.add(rel)
            prefix = rel + "/" if rel else ""
            devs = self.devs
            for name, child_st in entries or ():
                if name in prune_names:
                    continue
                child = prefix + name
                if stat.S_ISDIR(child_st.st_mode):
                    if child_st.st_dev not in devs:  # another mount: never entered
                        continue
                    if descend is None or descend(child):
                        stack.append((child, child_st))
                found[child] = child_st
        return found

    # -- pristine state ----------------------------------------------------------------

    def set_base(self, entries):
        """Declare the entries every tree has (the sandbox skeleton)."""
        self.base = {e[0]: tuple(e[1:]) for e in entries}

    def load(self, entries):
        """Make ``base`` plus ``entries`` the pristine state and restore to it."""
        new = dict(self.base)
        for path, kind, mode, mtime_ns, payload in entries:
            new[path] = (kind, mode, mtime_ns, payload)
        self._switch(new)
        self.clean.pop("", None)  # (the root's order is looked at)
        if self._root_order is not None:
            # a later load: the root keeps its order, the new tree's entries made after
            names = set(self._children(""))
            kept = [n for n in self._root_order if n in names]
            made = sorted(names - set(kept))
            self._root_order = made[::-1] + kept if self._newest_first() else kept + made
        stats = self.restore()
        if self._root_order is None:
            self._record_roots()
        return stats

    def _record_roots(self):
        """After the first load: the times of the tree's root and of the scratch mounts'
        roots, and the order the root lists its pristine entries in, which every restore
        (and later load) gives back. The root is in no state, so nothing else would; its
        order is the sandbox's start's, not a sorted one, so it is kept as found, and its
        times are the first load's whatever tree is loaded later (as if the sandbox had
        been started then), never what an agent left."""
        paths = [self.root] + [self.abspath(rel) for rel in self.scratch_mounts]
        for path in paths:
            try:
                self._root_times[path] = os.lstat(path).st_mtime_ns
            except OSError:
                continue
        names = set(self._children(""))
        fd = fsops.open_dir(self.root)
        try:
            self._root_order = [n for n in os.listdir(fd) if n in names]
        finally:
            os.close(fd)
        self._fix_root_times(paths)
        self._record([""])

    def _fix_root_times(self, paths):
        """Give the roots ``paths`` the times a load left them (access time: its
        modification time, as every entry)."""
        for path in paths:
            mtime = self._root_times.get(path)
            if mtime is None:
                continue
            try:
                st = os.lstat(path)
                if st.st_mtime_ns != mtime or st.st_atime_ns != mtime:
                    os.utime(path, ns=(mtime, mtime), follow_symlinks=False)
            except OSError:
                continue

    def capture(self):
        """Return ``(entries, skipped)`` describing the whole tree with file contents."""
        entries = []
        skipped = []
        grants = fsops.Grants()
        try:
            for rel, st in sorted(self._scan(frozenset(), grants).items()):
                entry = self._captured(rel, st, grants)
                if entry is None:
                    skipped.append(rel)
                else:
                    entries.append(entry)
        finally:
            grants.revert()
        return entries, skipped

    def _captured(self, rel, st, grants):
        kind = kind_of(st.st_mode)
        mode = stat.S_IMODE(st.st_mode)
        try:
            if kind == DIR:
                return (rel, DIR, mode, st.st_mtime_ns, None)
            if kind == FILE:
                data = fsops.read_file(self.abspath(rel), st, grants)
                return (rel, FILE, mode, st.st_mtime_ns, data)
            if kind == LINK:
                return (rel, LINK, mode, st.st_mtime_ns, os.readlink(self.abspath(rel)))
        except OSError:
            return None
        return None

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self, previous=None, budget=None, mapped=None):
        """The whole tree now as a pristine state ``{rel: (kind, mode, mtime, payload)}``,
        and what it read (pass it as ``previous`` to the next snapshot).

        Entries unchanged since the last restore share the pristine state's values, and
        entries unchanged since ``previous`` share its values (only changed files are
        read and kept), so a snapshot costs the changes, not the tree. ``budget``: the
        bytes it may keep of what it reads (:func:`held_size`), else ``MemoryError``.

        ``mapped`` (called once the snapshot's time is taken): the ``(st_dev, st_ino)``
        of the files some process has mapped shared and writable, or ``None`` if that
        cannot be known. Writes through such a mapping change a file without a new
        ``ctime`` (only a page's first write fault sets it): what this snapshot reads of
        them vouches for nothing later (a restore compares them, the next snapshot
        reads them again), and no earlier record vouches for them now.
        """
        previous = previous or {}
        state, reads = {}, {}
        kept = 0
        now = time.time_ns()
        writable = mapped() if mapped is not None else set()
        grants = fsops.Grants()
        try:
            for rel, st in self._scan(frozenset(), grants).items():
                want = self.pristine.get(rel)
                live = writable is None or (st.st_dev, st.st_ino) in writable
                if want is not None and not live and self._trusted(rel, st):
                    state[rel] = want
                    continue
                last = previous.get(rel)
                if (last is not None and not live and last[0] == st.st_ino
                        and last[1] == st.st_ctime_ns and st.st_ctime_ns + TRUST_NS < last[2]):
                    state[rel], reads[rel] = last[3], last
                    continue
                entry = self._captured(rel, st, grants)
                if entry is None:
                    continue
                value = want if entry[1:] == want else entry[1:]
                state[rel] = value
                if value is not want:
                    # a record read at time 0 is never trusted (see _trusted)
                    reads[rel] = (st.st_ino, st.st_ctime_ns, 0 if live else now, value)
                    kept += held_size(value)
                    if budget is not None and kept > budget:
                        raise MemoryError("the snapshot needs more than %d bytes" % budget)
        finally:
            grants.revert()
        return state, reads

    def restore_to(self, state, reads=None):
        """Bring the tree to ``state`` (of :meth:`snapshot`); the pristine state stays.

        ``reads`` (what that snapshot read) vouch for the entries still the inodes it
        read, unchanged since (the records of a restore: see :meth:`_trusted`), so that
        they are neither compared nor written again.
        """
        pristine = self.pristine
        self._switch(state)
        for rel, record in (reads or {}).items():
            if rel not in self.clean and state.get(rel) is record[3]:
                # (a snapshot's record holds when it was read: it vouches from
                # TRUST_NS before, as the snapshot's own next look trusts it)
                self.clean[rel] = (record[0], record[1], record[2] - TRUST_NS if record[2] else 0)
        try:
            return self.restore()
        finally:
            self._switch(pristine)

    def _switch(self, new):
        """Make ``new`` the state restores go to, keeping only the records still true."""
        old = self.pristine
        for path in list(self.clean):
            if old.get(path) is not new.get(path) and old.get(path) != new.get(path):
                del self.clean[path]
        self.pristine = new

    def _pristine_order(self):
        """The pristine paths, sorted (computed once per pristine state)."""
        cached = getattr(self, "_order_cache", None)
        if cached is None or cached[0] is not self.pristine:
            cached = self._order_cache = (self.pristine, sorted(self.pristine))
        return cached[1]

    # -- restore -----------------------------------------------------------------------

    def restore(self):
        """Bring the tree back to the pristine state, touching only what changed.

        Only pristine directories are listed; anything else found in them is removed
        whole, whatever its modes, depth or kind. Where the file system has no room
        left, tried again after each of :data:`ROOM_WAITS`. The kernel is first asked to
        let go of the files the agent's processes left in flight on unix sockets.
        """
        fsops.collect_unix_sockets()  # (the agent's processes are gone: see the function)
        for wait in ROOM_WAITS:
            try:
                return self._restore_once()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
            fsops.collect_unix_sockets()
            time.sleep(wait)
        return self._restore_once()

    def _restore_once(self):
        # the root unchanged since the last restore (its record, as any entry's): its mode,
        # xattrs, flags and listing order are as that restore left them
        root_kept = self._trusted("", os.lstat(self.root))
        if not root_kept:
            self._fix_mount_root(self.root, self.root_mode)
        grants = fsops.Grants(keep=True, bits=fsops.NEED_WRITE)
        dirty = set()  # the directories opened up by the scan get their mode back at the end
        current = self._scan(frozenset(), grants, descend=self._pristine_dir, opened=dirty)
        try:
            # no mapping may keep a removed or changed file's room while the tree is written
            self.views.keep(current, self._trusted)
            return self._restore(current, dirty, root_kept)
        finally:
            self.views.settle()

    def _restore(self, current, dirty, root_kept):
        pristine = self.pristine
        doomed, refill = set(), set()
        tmpfs = self.empty_size is not None
        for rel, st in current.items():
            want = pristine.get(rel)
            if want is None or want[0] != _KINDS.get(stat.S_IFMT(st.st_mode)):
                doomed.add(rel)
            elif tmpfs and want[0] == FILE and fsops.more_than(st, len(want[3] or b"")):
                # removed before anything is written: the room it took is free for the
                # tree (else a grown file fills the tmpfs and the writes before it fail)
                refill.add(rel)
        self._remove(doomed | refill, current, dirty)
        stats = {"deleted": len(doomed), "written": 0}
        reorder = set()
        if not root_kept:
            reorder.add("")  # (a rename in the root, even one undone, moves its listing)
        touched = self._write_pristine(current, doomed | refill, dirty, stats, reorder)
        touched += self._canonical_order(reorder, dirty, current)
        for rel in sorted(dirty, key=lambda r: -r.count("/")):
            want = self.pristine.get(rel)
            if rel and want is not None and want[0] == DIR:
                path = self.abspath(rel)
                os.chmod(path, want[1])
                os.utime(path, ns=(want[2], want[2]), follow_symlinks=False)
                touched.append(rel)
        self._fix_root_times([self.root])
        touched.append("")  # (the root's record)
        self._record(touched)
        self._empty_scratch()
        return stats

    def _record(self, touched):
        """Record the entries ``touched`` (written, compared or moved by this restore) as
        they are now, once nothing more of the restore changes them: ``(inode, ctime,
        vouch)`` (see :meth:`_trusted`). A directory's vouch is always the coarse clock's."""
        coarse = vouch_ns()  # (read before the looks: see vouch_ns)
        looked = LOOKED if self.fresh_ctimes else coarse
        clean = self.clean
        for rel in touched:
            st = os.lstat(self.abspath(rel))
            clean[rel] = (st.st_ino, st.st_ctime_ns,
                          coarse if stat.S_ISDIR(st.st_mode) else looked)

    def _pristine_dir(self, rel):
        want = self.pristine.get(rel)
        return want is not None and want[0] == DIR

    def _write_pristine(self, current, doomed, dirty, stats, reorder):
        """Create or rewrite every pristine entry that is missing or differs.

        ``reorder`` gets the directories whose listing order may have changed: the parent
        of each entry (re)created, and each directory changed since the last restore (a
        rename inside it, even one undone, moves an entry in the listing).
        """
        touched = []
        clean = self.clean
        pristine = self.pristine
        for rel in self._pristine_order():
            st = None if rel in doomed else current.get(rel)
            if st is not None:
                # the common case, inline: the inode we wrote, unchanged since (_trusted)
                record = clean.get(rel)
                if (record is not None and record[0] == st.st_ino
                        and record[1] == st.st_ctime_ns
                        and (st.st_ctime_ns < record[2] or record[2] == LOOKED)):
                    want = pristine[rel]
                    same, read = (self._same_bytes(rel, st, want) if want[0] == FILE
                                  else (True, False))
                    if not same:  # written through a shared mapping: no time of it moved
                        self._unlocked(rel, dirty)
                        self._create(rel, *want, exists=True)
                        reorder.add(rel.rpartition("/")[0])  # a new inode: listed anew
                        stats["written"] += 1
                        touched.append(rel)
                        continue
                    if read:  # read where O_NOATIME was refused: its access time back
                        self._reset_moved_atime(rel)
                        touched.append(rel)
                        continue
                    if st.st_atime_ns != st.st_mtime_ns:  # (a directory listed, a file read)
                        self._reset_atime(rel, st.st_mtime_ns, touched)
                    continue
            if st is not None and self._same_inode(rel, st):
                if not self._trusted(rel, st):
                    if self.pristine[rel][0] == DIR:
                        reorder.add(rel)
                    if not self._matches_pristine(rel, st):
                        self._unlocked(rel, dirty)
                        self._create(rel, *self.pristine[rel], exists=True)
                        stats["written"] += 1
                        if self.pristine[rel][0] == DIR:
                            dirty.add(rel)
                        else:  # a new inode: its directory lists it anew
                            reorder.add(rel.rpartition("/")[0])
                    else:  # the comparison may have read it (a link's target too)
                        self._reset_moved_atime(rel)
                    touched.append(rel)
                continue
            kind, mode, mtime_ns, payload = self.pristine[rel]
            if st is None or kind != DIR:
                self._unlocked(rel, dirty)
                reorder.add(rel.rpartition("/")[0])
            self._create(rel, kind, mode, mtime_ns, payload, exists=st is not None)
            touched.append(rel)
            stats["written"] += 1
            if kind == DIR:
                dirty.add(rel)
        return touched

    def _same_bytes(self, rel, st, want):
        """Whether a trusted file (``st``: its look in this restore; its inode, ctime and
        so its size and modes as recorded) still holds the pristine bytes ``want[3]``, and
        whether reading them may have moved its access time (``(same, moved)``).

        A write through a shared writable mapping of a tmpfs file sets no time at all
        once its page is mapped writable, which a read fault already does (tmpfs asks
        for no notice of a page's first write): the file keeps the ctime a record
        vouches for. Such a mapping needs the file open for reading and writing, so a
        file that is empty is not read (a mapping cannot grow a file, and any fault past
        its end is a SIGBUS). Its mode is no excuse: a mapping made while the mode allowed
        it outlives a change of the mode, and a held interpreter's (see ``snaps``) outlives
        a restore to a snapshot. A file its owner may not read is written anew.

        The look goes through the file's mapping kept since the last restore (see
        ``views``), else makes one, else reads the file.
        """
        payload = want[3]
        if not payload:
            return True, False
        same = self.views.same(rel, st, payload)
        if same is not None:
            return same, False
        fd, moved = self._open_for_look(rel)
        if fd is None:
            return False, moved
        try:
            if self.views.make(rel, fd, st, payload):
                return self.views.same(rel, st, payload), moved
            return (os.pread(fd, len(payload) + 1, 0) == payload
                    and fsops.tail_is_clear(fd, len(payload))), moved
        except OSError:
            return False, moved
        finally:
            os.close(fd)

    def _pages_clear(self, rel, size):
        """Whether the file ``rel`` of ``size`` bytes has no hole (:func:`fsops.is_dense`)
        and zeros after its end (:func:`fsops.tail_is_clear`); ``False`` if it cannot be
        opened: it is then written anew."""
        if not size:
            return True
        fd, _moved = self._open_for_look(rel)
        if fd is None:
            return False
        try:
            return fsops.is_dense(fd, size) and fsops.tail_is_clear(fd, size)
        finally:
            os.close(fd)

    def _open_for_look(self, rel):
        """``(fd, moved)``: the file ``rel`` open for reading without moving its access
        time where the owner may ask that (``moved``: where it may not, a read moves it);
        ``fd`` is ``None`` if it cannot be opened."""
        path = self.abspath(rel)
        try:
            return os.open(path, SAME_BYTES_FLAGS), False
        except PermissionError:  # O_NOATIME, where we are not the owner
            try:
                return os.open(path, SAME_BYTES_FLAGS & ~NOATIME), True
            except OSError:
                return None, True
        except OSError:
            return None, False

    def _reset_atime(self, rel, mtime_ns, touched):
        """Give an unchanged pristine entry its access time back (a read of a file or a
        link, a listing of a directory moved it: the agent's, or a fingerprint's in an
        earlier episode), so ``find -atime`` sees the same at every episode's start;
        ``touched`` gets ``rel`` (its ctime moved)."""
        try:
            os.utime(self.abspath(rel), ns=(mtime_ns, mtime_ns), follow_symlinks=False)
        except OSError:
            return
        if touched is not None:
            touched.append(rel)

    def _reset_moved_atime(self, rel):
        """:meth:`_reset_atime` when the access time moved (a read moved it before, or
        the comparison's own read where O_NOATIME was refused): only then, since
        ``utime`` moves the ctime, which costs the file its trust at the next restore."""
        try:
            st = os.lstat(self.abspath(rel))
        except OSError:
            return
        if st.st_atime_ns != st.st_mtime_ns:
            self._reset_atime(rel, st.st_mtime_ns, None)

    def _canonical_order(self, reorder, dirty, current=None):
        """Give each directory of ``reorder`` the listing order of a fresh load.

        A directory lists its entries (``ls -f``, ``find``, ``readdir``) in an order set by
        when each was created, so after restoring only what changed, it depended on the
        sandbox's earlier episodes: a file deleted in one episode and restored came first
        in the next episode's ``find``, and a gold answer built from that order scored
        below 1. Moving every pristine entry out and back, in path order, makes the order
        a function of the entries alone. Returns the moved entries.

        ``current`` (the restore's scan, whose entries are in each directory's listing
        order) gives the order of a directory the restore has not changed (not in
        ``dirty``): it is not listed again.
        """
        moved = []
        scanned = None
        spare = ".intercode-order-%s" % os.urandom(6).hex()
        for parent in sorted(reorder):
            want = self.pristine.get(parent) if parent else (DIR,)
            if want is None or want[0] != DIR:
                continue
            names = sorted(rel.rpartition("/")[2] for rel in self._children(parent))
            if not names:
                continue
            pristine_names = set(names)
            wanted = names[::-1] if self._newest_first() else names
            if not parent and self._root_order is not None and set(
                    self._root_order) == pristine_names:
                wanted = self._root_order  # (the root's: as the sandbox's start left it)
                names = wanted[::-1] if self._newest_first() else wanted  # (creation order)
            if current is not None and parent not in dirty:
                if scanned is None:
                    scanned = {}
                    for rel in current:
                        above, _, name = rel.rpartition("/")
                        scanned.setdefault(above, []).append(name)
                listed = [n for n in scanned.get(parent, ()) if n in pristine_names]
            else:
                fd = fsops.open_dir(self.abspath(parent))
                try:  # (its access time stays)
                    listed = [n for n in os.listdir(fd) if n in pristine_names]
                finally:
                    os.close(fd)
            if listed == wanted:
                continue  # already in order: nothing moved (their ctimes stay)
            self._unlocked(join(parent, names[0]), dirty)
            fd = os.open(self.abspath(parent), fsops.DIR_FLAGS)
            try:
                for name in names:
                    os.rename(name, spare, src_dir_fd=fd, dst_dir_fd=fd)
                    os.rename(spare, name, src_dir_fd=fd, dst_dir_fd=fd)
                    moved.append(join(parent, name))
            finally:
                os.close(fd)
        return moved

    def _newest_first(self):
        """Whether this file system lists the newest entry of a directory first (tmpfs
        does on recent kernels; it listed the oldest first before), found once by
        creating two files in a directory of the tree's root."""
        if getattr(self, "_order_probe", None) is None:
            # not in a directory of the tree (its time stamp would change)
            probe = self.abspath(".intercode-order-%s" % os.urandom(6).hex())
            os.mkdir(probe, 0o700)
            try:
                for name in ("a", "b"):
                    os.close(os.open(os.path.join(probe, name),
                                     os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))
                self._order_probe = os.listdir(probe) == ["b", "a"]
            finally:
                for name in ("a", "b"):
                    try:
                        os.unlink(os.path.join(probe, name))
                    except OSError:
                        pass
                os.rmdir(probe)
        return self._order_probe

    def _children(self, parent):
        """The pristine entries directly in ``parent``."""
        if not hasattr(self, "_child_index") or self._child_index[0] is not self.pristine:
            index = {}
            for rel in self.pristine:
                if rel:
                    index.setdefault(rel.rpartition("/")[0], []).append(rel)
            self._child_index = (self.pristine, index)
        return self._child_index[1].get(parent, ())

    def _fix_mount_root(self, path, mode):
        """Give a mount's root directory its mode back and drop xattrs added to it."""
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)
        fsops.strip_xattrs(path)
        fsops.clear_inode_flags(path)

    def _same_inode(self, rel, st):
        """Whether ``rel`` is still the inode we wrote (its metadata may have changed)."""
        record = self.clean.get(rel)
        return record is not None and record[0] == st.st_ino

    def _trusted(self, rel, st):
        """Whether an entry is unchanged since the last restore, from its metadata alone:
        the inode recorded, with the ctime recorded, and either stamped before the time
        the record vouches from (see :func:`vouch_ns`; a change after it gets a ctime of
        its own) or, for a file or a link where the file system gives every change made
        after a look a ctime of its own (``fresh_ctimes``), vouched by the record's own
        look (:data:`LOOKED`).

        Never a directory by its look: an unlink, a ``rmdir`` or a hard link in a
        directory stamps it with the time of the inode it names (the coarse clock's when
        nothing looked at that inode), which also clears the mark the look left on the
        directory, so its own changes in the same tick (mode, flags, times, a rename in
        it) may keep the ctime recorded. Nothing stamps a file or a link with another
        inode's time."""
        record = self.clean.get(rel)
        return (record is not None and record[0] == st.st_ino and record[1] == st.st_ctime_ns
                and (st.st_ctime_ns < record[2] or record[2] == LOOKED))

    def _matches_pristine(self, rel, st):
        """Full comparison of an entry with its pristine state (xattrs included)."""
        kind, mode, mtime_ns, payload = self.pristine[rel]
        if kind_of(st.st_mode) != kind or stat.S_IMODE(st.st_mode) != mode:
            return False
        if st.st_mtime_ns != mtime_ns:
            return False
        path = self.abspath(rel)
        try:
            if kind == LINK:
                return os.readlink(path) == payload
            if fsops.has_agent_xattrs(path) or fsops.inode_flags(path, kind == DIR) != 0:
                return False
            if kind == FILE:
                grants = fsops.Grants()
                try:
                    if st.st_size != len(payload) or fsops.read_file(path, st, grants) != payload:
                        return False
                finally:
                    grants.revert()
                return self._pages_clear(rel, len(payload))  # (no hole, no bytes past the end)
        except OSError:
            return False
        return True

    def _unlocked(self, rel, dirty):
        """Make the parent of ``rel`` writable and remember to restore it afterwards."""
        parent = rel.rpartition("/")[0]
        dirty.add(parent)
        path = self.abspath(parent)
        mode = os.lstat(path).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(path, stat.S_IMODE(mode) | 0o700)

    def _remove(self, doomed, current, dirty):
        """Remove the ``doomed`` entries (whole trees for directories), by parent."""
        by_parent = {}
        for rel in doomed:
            parent, _, name = rel.rpartition("/")
            by_parent.setdefault(parent, []).append(name)
        for parent, names in by_parent.items():
            self._unlocked(join(parent, names[0]), dirty)
            fd = os.open(self.abspath(parent), fsops.DIR_FLAGS)
            try:
                for name in names:
                    fsops.remove_entry(fd, name, current[join(parent, name)])
            finally:
                os.close(fd)
        for rel in doomed:
            self.clean.pop(rel, None)
            self.views.forget(rel)

    def _create(self, rel, kind, mode, mtime_ns, payload, exists):
        path = self.abspath(rel)
        self.views.forget(rel)
        if kind == DIR:
            if not exists:
                os.mkdir(path, 0o700)
            os.chmod(path, mode | 0o700)
            if exists:  # (opened up first: flags need the directory open)
                fsops.strip_xattrs(path)
                fsops.clear_inode_flags(path)
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
        """Empty the scratch mounts (``/dev/shm``) and give their roots their mode back."""
        for rel in self.scratch_mounts:
            path = self.abspath(rel)
            mode = self.scratch_modes.get(rel)
            if mode is not None:
                self._fix_mount_root(path, mode | 0o700)
            try:
                fsops.empty_dir(path)
            except OSError:
                continue
            if mode is not None and mode & 0o700 != 0o700:
                os.chmod(path, mode)
            self._fix_root_times([path])

    # -- diff (what `git status --short` reported upstream) -----------------------------

    def status(self, ignore_names):
        """Return sorted ``[path, code]`` pairs as upstream's ``git status --short`` did.

        Tracked paths are the pristine files and symlinks; directories are not
        tracked; an untracked directory holding no tracked path is reported once as
        ``dir/``; names in ``ignore_names`` are ignored at any depth, and so is
        ``.git``, which git never lists (nested repositories are not modelled).
        Modes other than the owner's execute bit of files, and xattrs, do not count
        (git ignores them); a tracked file that cannot be read counts as modified.
        """
        ignore = frozenset(ignore_names).union((".git",))
        tracked, tracked_dirs = self._tracked(ignore)
        grants = fsops.Grants()
        try:
            current = self._scan(ignore, grants, descend=tracked_dirs.__contains__)
            changes = []
            for rel, entry in tracked.items():
                code = self._tracked_code(rel, entry, current.get(rel), grants)
                if code:
                    changes.append([rel, code])
            for rel, st in current.items():
                if rel in tracked:
                    continue
                kind = kind_of(st.st_mode)
                if kind in (FILE, LINK):
                    changes.append([rel, "??"])
                elif kind == DIR and rel not in tracked_dirs and self._shows_files(
                        rel, st, ignore, grants):
                    changes.append([rel + "/", "??"])
        finally:
            grants.revert()
        changes.sort()
        return changes

    def _tracked(self, ignore):
        """The tracked entries ``{rel: entry}`` of the pristine state and the directories
        above them, with ``ignore``'s names left out (computed once per pristine state and
        ``ignore``)."""
        cached = self._tracked_cache
        if cached is not None and cached[0] is self.pristine and cached[1] == ignore:
            return cached[2], cached[3]
        tracked = {}
        tracked_dirs = set()
        for rel, entry in self.pristine.items():
            if entry[0] == DIR or ignore.intersection(rel.split("/")):
                continue
            tracked[rel] = entry
            tracked_dirs.update(ancestors(rel))
        self._tracked_cache = (self.pristine, ignore, tracked, frozenset(tracked_dirs))
        return tracked, self._tracked_cache[3]

    def _shows_files(self, rel, st, ignore, grants):
        """Whether git would list the untracked directory ``rel``: it holds a file or link.

        Directories deeper than a path can name (``PATH_MAX``) are not seen, as by git.
        An empty directory of a tmpfs (its size says so) is not opened.
        """
        empty = self.empty_size
        stack = [(self.abspath(rel), st)]
        while stack:
            path, st = stack.pop()
            if st.st_size == empty:
                continue
            for name, kind, child_st in fsops.iter_dir(path, st, grants):
                if name in ignore:
                    continue
                if kind in (FILE, LINK):
                    return True
                if kind == DIR and self.ours(child_st.st_dev):
                    stack.append((path + "/" + name, child_st))
        return False

    def _tracked_code(self, rel, entry, st, grants):
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
        try:
            if now == LINK:
                return "M" if os.readlink(self.abspath(rel)) != entry[3] else None
            if (st.st_mode & 0o100) != (entry[1] & 0o100):
                return "M"
            if st.st_size != len(entry[3]):
                return "M"
            if fsops.read_file(self.abspath(rel), st, grants) != entry[3]:
                return "M"
        except OSError:
            return "M"
        return None

