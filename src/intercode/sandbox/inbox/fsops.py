"""File operations of the tree that an agent's tree cannot turn against the supervisor.

The supervisor runs as the agent's user, so every mode the agent set applies to it
too: these helpers open up what they must (``chmod u+rx``, like a root that reads
through permissions, as upstream's git and md5sum did) and put modes back after a
read-only look. They never follow a symlink they did not mean to, never open a
FIFO, socket or device (``O_NOFOLLOW | O_NONBLOCK``, then ``fstat`` of the same
inode, type checked), read at most a file's size, and remove trees of any depth
with two descriptors and no recursion.
"""

import errno
import fcntl
import os
import stat
import struct

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
NOATIME = getattr(os, "O_NOATIME", 0)  # EPERM unless the caller owns the file
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEED_READ = 0o500
NEED_WRITE = 0o700
BLOCK = 1 << 20
# xattrs an unprivileged owner can set (user.*, POSIX ACLs); the pristine tree has none
AGENT_XATTRS = ("user.", "system.posix_acl_")


def ancestors(rel):
    """Proper ancestors of a relative path, outermost first (``a/b/c`` -> ``a``, ``a/b``)."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def join(rel, name):
    """``rel/name`` (``name`` at the root)."""
    return rel + "/" + name if rel else name


class Grants:
    """Directory and file modes opened up for a look, restored by :meth:`revert`.

    ``bits`` is what a directory needs: read and search for a look, write too for a
    restore, which keeps (``keep``) the modes it opened and sets the pristine ones.
    """

    def __init__(self, keep=False, bits=NEED_READ):
        self.keep = keep
        self.bits = bits
        self.changed = []

    def need(self, path, st, bits):
        """Give the owner ``bits`` on ``path`` (whose ``lstat`` is ``st``) if it lacks them."""
        mode = stat.S_IMODE(st.st_mode)
        if mode & bits == bits or os.access(path, _access_mode(bits), follow_symlinks=False):
            return False  # a root (the host's tests) reads through modes anyway
        os.chmod(path, mode | bits)
        self.changed.append((path, mode))
        return True

    def revert(self):
        """Put back every mode changed, innermost first (unless ``keep``)."""
        if self.keep:
            return
        for path, mode in reversed(self.changed):
            try:
                os.chmod(path, mode)
            except OSError:
                pass
        self.changed = []


def _access_mode(bits):
    mode = os.R_OK if bits & 0o400 else 0
    mode |= os.W_OK if bits & 0o200 else 0
    return mode | (os.X_OK if bits & 0o100 else 0)


def open_dir(path, flags=DIR_FLAGS):
    """``os.open`` of a directory without moving its access time where the owner may ask
    that (a listing moves it: a later episode's ``find -atime`` would see it)."""
    try:
        return os.open(path, flags | NOATIME)
    except PermissionError:
        return os.open(path, flags)


def collect_unix_sockets():
    """Have the kernel collect the unix sockets only their own queues keep (a socket sent
    in flight to itself, with other descriptors): it looks when a socket is released, so
    release one. The files they hold (a tmpfs file's room, say) are freed then, not when
    the last process that knew them died; else they stay until some other socket goes."""
    import socket

    try:
        left, right = socket.socketpair(socket.AF_UNIX)
    except OSError:
        return
    left.close()
    right.close()


def list_dir(path, st, grants, bits=NEED_READ, follow=False):
    """``[(name, lstat)]`` of a directory, opened up with ``grants`` when needed.

    Returns ``None`` when ``path`` is not a directory any more (a symlink or a file
    put in its place) or cannot be listed (a name too long, a mount we do not own).
    ``follow`` lets ``path`` be a symlink to the directory ``st`` (the target's
    ``stat``), checked to be that same directory once open.
    """
    try:
        grants.need(path, st, bits)
        fd = open_dir(path, DIR_FLAGS & ~os.O_NOFOLLOW if follow else DIR_FLAGS)
    except OSError:
        return None
    try:
        if follow and not _same(os.fstat(fd), st):
            return None
        return scan_fd(fd)
    finally:
        os.close(fd)


def iter_dir(path, st, grants):
    """Yield ``(name, kind, lstat or None)`` of a directory, stat-ing only directories.

    ``kind`` is ``d``, ``f``, ``l`` or ``None`` (anything else); nothing is yielded
    for what :func:`list_dir` could not list.
    """
    try:
        grants.need(path, st, NEED_READ)
        fd = open_dir(path)
    except OSError:
        return
    try:
        if not _same(os.fstat(fd), st):
            return
        with os.scandir(fd) as it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        yield entry.name, "d", entry.stat(follow_symlinks=False)
                    elif entry.is_symlink():
                        yield entry.name, "l", None
                    else:
                        yield entry.name, "f" if entry.is_file() else None, None
                except OSError:
                    continue
    finally:
        os.close(fd)


def scan_fd(fd):
    """``[(name, lstat)]`` of an open directory; entries that vanish are left out."""
    found = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                found.append((entry.name, entry.stat(follow_symlinks=False)))
            except OSError:
                continue
    return found


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_ZEROS = bytes(PAGE)
_libc = []  # (see _mapper)


def is_dense(fd, size):
    """Whether the open regular file ``fd`` of ``size`` bytes has no hole before its end
    (as every file a restore writes: a hole is room a large page can fill after the
    end, see :func:`more_than`)."""
    if not size:
        return True
    try:
        return os.lseek(fd, 0, os.SEEK_HOLE) >= size
    except OSError:
        return False


def tail_is_clear(fd, size):
    """Whether the bytes after the end of the open regular file ``fd`` (of ``size``
    bytes), in the memory page that holds its end, are zeros.

    A shared writable mapping can write there (no fault past the end of a file comes
    before the end of its last page), out of reach of ``read``, and on tmpfs the bytes
    stay: a later mapping shows them, and growing the file (``truncate``) makes them its
    content. Only that page: a mapping's fault past it is a SIGBUS. Looked at through a
    private read-only mapping (no shared one: nothing here writes), so ``False`` also
    when it cannot be mapped: the caller then writes the file anew.
    """
    rest = size % PAGE
    if not rest:
        return True
    try:  # a hole there holds nothing, and a fault on it would need a new page: on a full
        # tmpfs that is a SIGBUS (nothing runs during a restore: it stays a hole)
        if os.lseek(fd, size - rest, os.SEEK_DATA) >= size:
            return True
    except OSError as exc:
        return exc.errno == errno.ENXIO  # no data from there on: clear; else unknown
    mapper = _mapper()
    if mapper is None:
        return False
    libc, string_at, failed, prot, flags = mapper
    addr = libc.mmap(None, PAGE, prot, flags, fd, size - rest)
    if addr is None or addr == failed:
        return False
    try:
        return string_at(addr + rest, PAGE - rest) == _ZEROS[rest:]
    finally:
        libc.munmap(addr, PAGE)


def map_private(fd, length, advice=None):
    """The address of a private read-only mapping of ``length`` bytes of the open file
    ``fd`` from its start (``advice``: a ``madvise`` for it, else unmapped again), or
    ``None``."""
    mapper = _mapper()
    if mapper is None:
        return None
    libc, _string_at, failed, prot, flags = mapper
    addr = libc.mmap(None, length, prot, flags, fd, 0)
    if addr is None or addr == failed:
        return None
    if advice is not None and libc.madvise(addr, length, advice) != 0:
        libc.munmap(addr, length)
        return None
    return addr


def mapped_bytes(addr, length):
    """A copy of ``length`` bytes at ``addr`` (a mapping of :func:`map_private`)."""
    return _libc[0][1](addr, length)


def unmap(addr, length):
    """Drop a mapping of :func:`map_private`."""
    _libc[0][0].munmap(addr, length)


def _mapper():
    """``(libc, string_at, MAP_FAILED, PROT_READ, MAP_PRIVATE)``, with ``mmap``,
    ``munmap`` and ``madvise`` typed (made once, at the first look), or ``None``."""
    if not _libc:
        try:
            import ctypes
            import mmap

            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_int, ctypes.c_long]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            mapper = (libc, ctypes.string_at, ctypes.c_void_p(-1).value, mmap.PROT_READ,
                      mmap.MAP_PRIVATE)
        except (OSError, AttributeError, ImportError):
            mapper = None
        _libc.append(mapper)
    return _libc[0]


def _same(a, b):
    return a.st_dev == b.st_dev and a.st_ino == b.st_ino


# -- reading ------------------------------------------------------------------------------


def open_regular(path, st, follow, grants):
    """Open the regular file ``st`` describes at ``path`` for reading, or raise OSError.

    ``follow`` (md5sum's view) lets the last component be a symlink; ``st`` is then
    the target's ``stat``. Anything but that same regular file raises EINVAL.
    """
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file")
    flags = READ_FLAGS if follow else READ_FLAGS | os.O_NOFOLLOW
    try:  # without moving the access time (find -atime), where the owner may ask that
        fd = os.open(path, flags | NOATIME)
    except PermissionError:
        try:
            fd = os.open(path, flags)
        except PermissionError:
            grants.need(path, st, 0o400)
            fd = os.open(path, flags)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or not _same(now, st):
            raise OSError(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd, limit, sink=None):
    """Read up to ``limit`` bytes; feed them to ``sink`` or return them."""
    parts = []
    while limit > 0:
        chunk = os.read(fd, min(limit, BLOCK))
        if not chunk:
            break
        limit -= len(chunk)
        if sink is None:
            parts.append(chunk)
        else:
            sink(chunk)
    return b"".join(parts)


def read_file(path, st, grants, limit=None):
    """Content of the regular file ``path`` (never following a link), at most its size."""
    fd = open_regular(path, st, False, grants)
    try:
        return read_fd(fd, st.st_size if limit is None else min(limit, st.st_size))
    finally:
        os.close(fd)


def md5_file(path, st, follow, grants):
    """MD5 hex digest of a regular file's first ``st.st_size`` bytes."""
    import hashlib  # not at boot: the interpreters forked after it stay without libcrypto

    digest = hashlib.md5()
    fd = open_regular(path, st, follow, grants)
    try:
        read_fd(fd, st.st_size, digest.update)
    finally:
        os.close(fd)
    return digest.hexdigest()


# -- removing and cleaning ------------------------------------------------------------------


def strip_xattrs(path):
    """Remove the xattrs and ACLs an owner could have added; return how many."""
    try:
        names = [n for n in os.listxattr(path, follow_symlinks=False)
                 if n.startswith(AGENT_XATTRS)]
    except OSError:
        return 0
    for name in names:
        try:
            os.removexattr(path, name, follow_symlinks=False)
        except OSError:
            pass
    return len(names)


# inode flags an owner may set without a capability (``chattr +A``, ``+d``; tmpfs keeps
# these), and those it may not (append-only, immutable), in FS_IOC_GETFLAGS's bits
OWNER_FLAGS = 0x80 | 0x40  # FS_NOATIME_FL, FS_NODUMP_FL
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602


def inode_flags(path, is_dir):
    """The flags of :data:`OWNER_FLAGS` set on ``path`` (not followed if a link): 0 where
    the file system keeps none, ``None`` where it cannot be opened to ask."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (os.O_DIRECTORY if is_dir else 0))
    except OSError:
        return None
    try:
        return _flags(fd) & OWNER_FLAGS
    except OSError:
        return 0  # (ENOTTY, EOPNOTSUPP: none kept)
    finally:
        os.close(fd)


def clear_inode_flags(path):
    """Clear the :data:`OWNER_FLAGS` of the directory ``path``, if it has any."""
    try:
        fd = open_dir(path)
    except OSError:
        return
    try:
        value = _flags(fd)
        if value & OWNER_FLAGS:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("=i", value & ~OWNER_FLAGS) + bytes(4))
    except OSError:
        pass
    finally:
        os.close(fd)


def _flags(fd):
    """The inode flags of the open ``fd`` (``FS_IOC_GETFLAGS``; OSError where none)."""
    return struct.unpack("=i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))[:4])[0]


def more_than(st, size):
    """Whether the regular file of ``st`` holds more than ``size`` bytes written from its
    start do on tmpfs: another size, or more pages than they fill (pages allocated after
    its end, or the large page ``madvise(MADV_COLLAPSE)`` makes of a small file, whose
    bytes after the file's last page a shared mapping can write and read back)."""
    return st.st_size != size or st.st_blocks * 512 > -(-size // PAGE) * PAGE


FRESH_TRIES = 6


def fresh_ctimes(directory):
    """Whether the file system of ``directory`` gives an inode a ctime of its own at every
    change made after a look at it (``stat``), even within one tick of the coarse clock
    it stamps from: Linux's multigrain timestamps (tmpfs, ext4, xfs, btrfs from 6.13),
    where a look marks the ctime and the next change is stamped from the precise clock.

    Tried on a file and a directory made for it in ``directory`` and removed: a look, a
    change of the mode (and, for the file, a write), a look, :data:`FRESH_TRIES` times
    each; ``True`` only if every change moved the ctime (a coarse clock keeps it for a
    whole tick, so nearly every try of a file system without them fails). ``False``
    when the place cannot be made or used."""
    place = os.path.join(directory, ".intercode-ctime-%s" % os.urandom(6).hex())
    try:
        os.mkdir(place, 0o700)
    except OSError:
        return False
    name = os.path.join(place, "f")
    fd = -1
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        for i in range(FRESH_TRIES * 3):
            before = os.lstat(place).st_ctime_ns, os.fstat(fd).st_ctime_ns
            if i % 3 == 0:
                os.fchmod(fd, 0o600 | (i % 2) << 6)
            elif i % 3 == 1:
                os.pwrite(fd, b"%d" % i, 0)
            else:
                os.chmod(place, 0o700 ^ (i % 2) << 3)
            if (os.lstat(place).st_ctime_ns, os.fstat(fd).st_ctime_ns) == before:
                return False
        return True
    except OSError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(name)
        except OSError:
            pass
        try:
            os.chmod(place, 0o700)
            os.rmdir(place)
        except OSError:
            pass


def has_agent_xattrs(path):
    """Whether ``path`` carries an xattr or ACL the pristine tree does not have."""
    try:
        return any(n.startswith(AGENT_XATTRS) for n in os.listxattr(path, follow_symlinks=False))
    except OSError:
        return False


def remove_entry(parent_fd, name, st):
    """Remove ``name`` in the open directory ``parent_fd``, a whole tree if it is one."""
    if stat.S_ISDIR(st.st_mode):
        remove_tree(parent_fd, name, st.st_dev)
    else:
        os.unlink(name, dir_fd=parent_fd)


def remove_tree(parent_fd, name, dev):
    """``rm -rf`` of the directory ``name`` whatever its modes, depth or name lengths.

    Every directory two levels down is renamed into the top one before its parent is
    removed, so at most two directories are open at once and no path grows.
    """
    top = _open_owned_dir(parent_fd, name)
    try:
        counter = [0]
        while True:
            subdirs = []
            for child, is_dir in _children(top, dev):
                if is_dir:
                    subdirs.append(child)
                else:
                    os.unlink(child, dir_fd=top)
            if not subdirs:
                break
            for child in subdirs:
                _hoist(top, child, dev, counter)
    finally:
        os.close(top)
    os.rmdir(name, dir_fd=parent_fd)


def _hoist(top, name, dev, counter):
    """Move the subdirectories of ``top/name`` into ``top``, unlink its files, remove it."""
    fd = _open_owned_dir(top, name)
    try:
        for child, is_dir in _children(fd, dev):
            if not is_dir:
                os.unlink(child, dir_fd=fd)
                continue
            os.chmod(child, 0o700, dir_fd=fd)  # moving a directory needs write on it
            while True:
                counter[0] += 1
                try:
                    os.rename(child, ".ic-rm-%d" % counter[0], src_dir_fd=fd, dst_dir_fd=top)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
                                         errno.EISDIR):
                        raise
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=top)


def _children(fd, dev):
    """``(name, is a directory of device dev)`` of an open directory (d_type, few stats)."""
    found = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and entry.stat(follow_symlinks=False).st_dev != dev:
                    raise OSError(errno.EBUSY, "a mount point", entry.name)
            except FileNotFoundError:
                continue
            found.append((entry.name, is_dir))
    return found


def _open_owned_dir(parent_fd, name):
    """Open a directory of ours for removal, after giving the owner ``rwx`` on it."""
    os.chmod(name, 0o700, dir_fd=parent_fd)
    return os.open(name, DIR_FLAGS, dir_fd=parent_fd)


def empty_dir(path):
    """Remove everything inside the directory ``path`` (a scratch mount)."""
    fd = open_dir(path)
    try:
        dev = os.fstat(fd).st_dev
        for name, st in scan_fd(fd):
            if stat.S_ISDIR(st.st_mode) and st.st_dev != dev:
                continue
            remove_entry(fd, name, st)
    finally:
        os.close(fd)
