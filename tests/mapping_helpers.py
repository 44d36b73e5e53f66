"""A file's pages mapped shared and writable, as an agent maps them to write a tmpfs file
without moving any of its times (the tree-restore attacks)."""

from __future__ import annotations

import ctypes
import mmap
import os

PAGE = mmap.PAGESIZE


def shared_pages(path: str, length: int = PAGE) -> ctypes.Array[ctypes.c_char]:
    """``length`` bytes of ``path`` mapped shared and writable, each page read once (so
    that writes through them set no time: tmpfs asks for no notice of a page's first
    write once a read mapped it)."""
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    fd = os.open(path, os.O_RDWR)
    try:
        addr = libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    pages = (ctypes.c_char * length).from_address(addr)
    for offset in range(0, length, PAGE):
        assert pages[offset] is not None
    return pages
