"""Private read-only mappings of a tree's kept files, kept from one restore to the next.

A restore must read every file it keeps, and look at the rest of its last page (see
``Tree._same_bytes``): a write through a shared mapping moves no time on tmpfs. Done
with system calls (open, read, a mapping of the last page, close) that costs about 15 µs
a file at every reset. Through a mapping kept since the file's last look, it costs a copy
of its pages and no system call.

A mapping is made only of a file that is the inode a restore trusts (its record's inode
and ctime), with the size of its pristine bytes and no hole (``SEEK_HOLE``): then none of
its pages needs a new page when it is faulted in, so a full tmpfs cannot make the look a
SIGBUS. It is looked through only while the file is still trusted. Whatever makes a hole
or changes the size (``truncate``, ``fallocate``, ``madvise(MADV_REMOVE)``) moves the
ctime, so a trusted file is still the hole-free inode of that size, and the mapping
shows its bytes as they are now (a private mapping that never wrote shares the file's
pages). A mapping is not handed to a forked child (``MADV_DONTFORK``), and is dropped
at the end of the first restore that does not look through it (the file changed, was
removed, or the tree was replaced).

Until then it keeps the inode: a file the agent removes in an episode keeps its room in
the tree's tmpfs (all of it, if the agent grew it first) until the next reset, which
drops the mappings of files gone or changed before it writes anything (:meth:`Views.keep`).
The mappings hold at most :data:`MAX_FILE` bytes a file, :data:`MAX_FILES` files, and in
all :data:`MAX_BYTES` and a sixteenth of the tree's tmpfs and of the supervisor's
address space limit (see :func:`budget`): the rest are read.
"""

import os
import resource

from . import fsops

__all__ = ["MAX_BYTES", "MAX_FILE", "MAX_FILES", "SHARE", "Views", "budget"]

MAX_FILE = 1 << 20  # a larger file is read (its mapping would pin more when removed)
MAX_BYTES = 64 << 20  # all mappings' pages at most
MAX_FILES = 8192  # and mappings at most (each is a kernel memory area)
MADV_DONTFORK = 10
SHARE = 16  # the part of the tmpfs and of the address space limit they may take at most


def budget(root):
    """The bytes the mappings of the tree at ``root`` may hold (see the module's text)."""
    room = MAX_BYTES
    try:
        fs = os.statvfs(root)
        if fs.f_blocks:
            room = min(room, fs.f_blocks * fs.f_frsize // SHARE)
    except OSError:
        return 0
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        room = min(room, limit // SHARE)
    return room


class Views:
    """The mappings of the tree at ``root``: ``{rel: (ino, size, addr, length)}``.
    ``max_bytes``: their bound, else :func:`budget` at the first mapping (the supervisor
    sets its limits after it makes the tree)."""

    def __init__(self, root, max_file=MAX_FILE, max_bytes=None, max_files=MAX_FILES):
        self.root = root
        self.max_file = max_file
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._views = {}
        self._seen = set()  # looked through, or made, since the last settle
        self._bytes = 0
        self._zeros = {}

    def __len__(self):
        return len(self._views)

    def same(self, rel, st, payload):
        """Whether the trusted file ``rel`` (``st``: its look in this restore) holds
        ``payload`` and zeros after it in its last page, through its mapping; ``None``
        where it has none and none can be made (the caller reads it)."""
        view = self._views.get(rel)
        if view is None:
            return None
        if view[0] != st.st_ino or view[1] != st.st_size:
            self.forget(rel)  # another inode now (a new one can be made)
            return None
        self._seen.add(rel)
        size, length = view[1], view[3]
        if size != len(payload):
            return False
        data = fsops.mapped_bytes(view[2], length)
        if length == size:
            return data == payload
        zeros = self._zeros.get(length - size)
        if zeros is None:
            zeros = self._zeros[length - size] = bytes(length - size)
        return data.startswith(payload) and data.endswith(zeros)

    def make(self, rel, fd, st, payload):
        """Map the open file ``fd`` (the trusted ``rel``, ``st`` its look in this restore)
        for the next restores' looks, if it holds as many bytes as ``payload``, is that
        inode, has no hole and fits the bounds. Returns whether it did."""
        size = len(payload)
        if (not size or size > self.max_file or len(self._views) >= self.max_files
                or rel in self._views):
            return False
        length = -(-size // fsops.PAGE) * fsops.PAGE
        if self.max_bytes is None:
            self.max_bytes = budget(self.root)
        if self._bytes + length > self.max_bytes:
            return False
        try:
            now = os.fstat(fd)
            if (now.st_ino != st.st_ino or now.st_dev != st.st_dev or now.st_size != size
                    or not fsops.is_dense(fd, size)):  # (the caller preads)
                return False
        except OSError:
            return False
        addr = fsops.map_private(fd, length, MADV_DONTFORK)
        if addr is None:
            return False
        self._views[rel] = (st.st_ino, size, addr, length)
        self._bytes += length
        self._seen.add(rel)
        return True

    def keep(self, current, trusted):
        """At a restore's start: drop every mapping of a file that is gone, another inode
        or size, or no longer trusted (``trusted(rel, st)``), so that no mapping keeps
        the room of a file the restore removes or rewrites (``current``: the restore's
        scan, ``{rel: st}``)."""
        for rel, view in list(self._views.items()):
            st = current.get(rel)
            if (st is None or st.st_ino != view[0] or st.st_size != view[1]
                    or not trusted(rel, st)):
                self.forget(rel)

    def forget(self, rel):
        """Drop the mapping of ``rel`` (written anew, or about to be)."""
        view = self._views.pop(rel, None)
        self._seen.discard(rel)
        if view is not None:
            self._unmap(view)

    def settle(self):
        """At a restore's end: drop every mapping it did not look through or make."""
        seen = self._seen
        if len(seen) != len(self._views):
            for rel in [rel for rel in self._views if rel not in seen]:
                self._unmap(self._views.pop(rel))
        self._seen = set()

    def clear(self):
        """Drop every mapping."""
        for view in self._views.values():
            self._unmap(view)
        self._views = {}
        self._seen = set()

    def _unmap(self, view):
        self._bytes -= view[3]
        fsops.unmap(view[2], view[3])
