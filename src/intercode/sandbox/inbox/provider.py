"""What Inspect's sandbox provider asks of a sandbox, done by pid 1 so that nothing of the
agent's can stand in for it.

The agent owns the writable root, and with it the links ``/bin``, ``/lib``, ``/lib64``
and ``/sbin``: through them it could choose the program a command names, the dynamic
loader of every program (``/lib64/ld-linux-x86-64.so.2``) and its libraries. So before
each call, once no process of the agent's runs, :func:`pin` puts back the links the root
had when pid 1 started (and the search bit of "/"), and :func:`find_program` looks a
name up only in directories on read-only mounts (``shell.fixed_program``).

Files are read and written here rather than by a program in the sandbox: walked one
name at a time from "/" with no-follow opens, links followed by this code (at most
:data:`MAX_LINKS`), never into ``/proc`` (there this process is pid 1, whose entries and
descriptors the agent cannot reach), only regular files, opened without blocking and
checked to be the file looked at, with the agent's own permissions (this process is
the agent's user and opens up no mode).
"""

import errno
import os
import stat

from . import fsops, proto, shell

MAX_LINKS = 40  # as the kernel's path walk
WALK_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Refused(PermissionError):
    """A file the provider does not read or write (not a regular file, in ``/proc``)."""


def system_links():
    """``{name: target}`` of the links in "/" (when pid 1 starts, before any agent code)."""
    found = {}
    for name in os.listdir("/"):
        if os.path.islink("/" + name):
            found[name] = os.readlink("/" + name)
    return found


def pin(links):
    """Give "/" its search bit and put back each of ``links`` the agent changed (a
    directory or file in its place is removed); the names put back."""
    shell.root_searchable()
    fixed = []
    root = None
    try:
        for name, target in sorted(links.items()):
            try:
                st = os.lstat("/" + name)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISLNK(st.st_mode) and os.readlink("/" + name) == target:
                continue
            if root is None:
                mode = stat.S_IMODE(os.stat("/").st_mode)
                if mode & 0o300 != 0o300:
                    os.chmod("/", mode | 0o300)
                root = os.open("/", fsops.DIR_FLAGS)
            if st is not None:
                fsops.remove_entry(root, name, st)
            os.symlink(target, name, dir_fd=root)
            fixed.append(name)
    finally:
        if root is not None:
            os.close(root)
    return fixed


def find_program(name, path):
    """The first ``<dir>/<name>`` of the search path ``path`` that is a program nothing
    of the agent's can change, else ``None`` (a directory the agent can write is skipped,
    as are relative ones)."""
    if not name or "/" in name:
        return None
    for where in path.split(":"):
        if where.startswith("/"):
            candidate = where.rstrip("/") + "/" + name
            if shell.fixed_program(candidate) is not None:
                return candidate
    return None


def _parts(path):
    return [p for p in path.split("/") if p and p != "."]


def locate(path, create=False):
    """``(directory descriptor, name, lstat or None)`` of the last name of the absolute
    ``path``, every link on it followed (the last one too); the caller closes the
    descriptor. ``create``: missing directories on the way are made (``mkdir -p``)."""
    proc = os.lstat("/proc").st_dev
    todo = _parts(path)[::-1]
    if not todo:
        todo = ["."]
    links = 0
    fd = os.open("/", WALK_FLAGS)
    try:
        while True:
            name = todo.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not todo:
                    return fd, name, None
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=fd)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if st.st_dev == proc:
                raise Refused(errno.EACCES, "the provider does not reach into /proc", path)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                target = os.readlink(name, dir_fd=fd)
                todo.extend(_parts(target)[::-1])
                if target.startswith("/"):
                    os.close(fd)
                    fd = -1
                    fd = os.open("/", WALK_FLAGS)
                if not todo:
                    todo = ["."]
                continue
            if not todo:
                return fd, name, st
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
            inner = os.open(name, WALK_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise


def _kind(st, path):
    if st is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(errno.EACCES, "not a regular file", path)


def _opened(fd, st, path):
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (st is not None and (now.st_dev, now.st_ino)
                                         != (st.st_dev, st.st_ino)):
        raise Refused(errno.EACCES, "not a regular file", path)


def read_file(path, limit):
    """``(size, contents)`` of the regular file ``path``, the contents in pieces never
    joined (one copy in this process's memory); ``None`` when its size is over ``limit``
    (nothing is read then)."""
    where, name, st = locate(path)
    try:
        _kind(st, path)
        fd = os.open(name, os.O_RDONLY | FILE_FLAGS, dir_fd=where)
    finally:
        os.close(where)
    try:
        _opened(fd, st, path)
        if st.st_size > limit:
            return st.st_size, None
        pieces = proto.Parts()
        fsops.read_fd(fd, st.st_size, pieces.append)
        return st.st_size, pieces
    finally:
        os.close(fd)


def write_file(path, data):
    """Make the regular file ``path`` hold ``data`` (created with its directories)."""
    where, name, st = locate(path, create=True)
    try:
        if st is not None:
            _kind(st, path)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | FILE_FLAGS, 0o666, dir_fd=where)
    finally:
        os.close(where)
    try:
        _opened(fd, st, path)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


NOT_FOUND = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG)
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def problem(exc):
    """The reply for a file call that failed with ``exc``: its kind (``not_found``,
    ``is_dir``, ``denied``, else ``failed``) and the system's words."""
    if exc.errno in NOT_FOUND:
        kind = "not_found"
    elif exc.errno == errno.EISDIR:
        kind = "is_dir"
    elif exc.errno in DENIED:
        kind = "denied"
    else:
        kind = "failed"
    return {"error": kind, "message": exc.strerror or str(exc)}
