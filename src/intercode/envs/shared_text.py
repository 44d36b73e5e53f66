"""Text observations in Gymnasium's shared memory (``AsyncVectorEnv``'s default).

Gymnasium keeps a ``Text`` observation there as ``max_length`` int32 indices into the
space's charset, one Python lookup per character: a space or a newline (outside the
charset) fails with ``KeyError``, and building the vector env decoded every environment's
whole slot (16 Mi characters each) in a Python loop, ~10 s per environment.

For :class:`~intercode.envs.spaces.AnyText` (registered where it is defined) these
handlers keep instead, per environment, the length and the UTF-8 bytes of its
observation in a slot of ``4 * max_length`` bytes: any string of the space fits (no code
point takes more than 4 bytes), and a string outside the space is an
:class:`~intercode.errors.ObservationSpaceError`, never cut. A write or a read is one
copy (and UTF-8's encoding or decoding). The buffer maps a fresh sparse file (as
``multiprocessing`` makes them), so only what observations use takes memory.

Reading returns :class:`SharedTexts`, a live view decoded on access: Gymnasium reads
the shared memory once, when the vector env is built, and returns a ``deepcopy`` of
that object after each ``reset`` and ``step`` (a tuple of ``str``; with ``copy=False``
the view itself).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from multiprocessing.heap import Arena
from types import ModuleType
from typing import Any, overload

from gymnasium.spaces import Text
from gymnasium.vector.utils.shared_memory import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from intercode.errors import ObservationSpaceError

__all__ = ["register_shared_memory"]

LENGTH = struct.Struct("<q")  # the byte length of a slot's text
BYTES_PER_CHAR = 4  # the most UTF-8 (with lone surrogates passed) takes per code point
ENCODING = ("utf-8", "surrogatepass")


class TextSlots:
    """``n`` slots of a text of up to ``max_length`` characters, in shared memory.

    Layout: ``n`` lengths (8 bytes each), then ``n`` slots of ``4 * max_length`` bytes.
    It pickles (by file descriptor) when ``multiprocessing`` starts a process with
    ``spawn`` or ``forkserver``; ``fork`` shares the mapping as it is.
    """

    def __init__(self, n: int, max_length: int) -> None:
        self.n = n
        self.max_length = max_length
        self.capacity = BYTES_PER_CHAR * max_length
        self.start = LENGTH.size * n
        self.arena = Arena(max(self.start + n * self.capacity, 1))  # zero-filled

    def write(self, index: int, text: object) -> None:
        """Store ``text`` in slot ``index`` (a string of at most ``max_length`` characters)."""
        if not isinstance(text, str):
            raise ObservationSpaceError(f"a text observation must be a str, not "
                                        f"{type(text).__name__}")
        if len(text) > self.max_length:
            raise ObservationSpaceError(
                f"an observation of {len(text)} characters is outside the observation space "
                f"(at most {self.max_length}): it does not fit the vector environment's shared "
                "memory and is not cut; the environment must keep its observations in its "
                "observation space")
        data = text.encode(*ENCODING)
        offset = self.start + self._slot(index) * self.capacity
        self.arena.buffer[offset:offset + len(data)] = data
        LENGTH.pack_into(self.arena.buffer, LENGTH.size * index, len(data))

    def read(self, index: int) -> str:
        """The text in slot ``index``."""
        (size,) = LENGTH.unpack_from(self.arena.buffer, LENGTH.size * self._slot(index))
        if not 0 <= size <= self.capacity:
            raise ObservationSpaceError(f"shared text slot {index} is corrupt (length {size})")
        offset = self.start + index * self.capacity
        return self.arena.buffer[offset:offset + size].decode(*ENCODING)

    def _slot(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(f"shared text slot {index} of {self.n}")
        return index


class SharedTexts(Sequence[str]):
    """The observations of a vector env as they are in shared memory now (a live view;
    ``copy.copy`` and ``copy.deepcopy`` give a tuple of ``str``)."""

    def __init__(self, slots: TextSlots) -> None:
        self.slots = slots

    def __len__(self) -> int:
        return self.slots.n

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self.slots.n
        return self.slots.read(index)

    def __iter__(self) -> Iterator[str]:
        return (self.slots.read(i) for i in range(self.slots.n))

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedTexts):
            other = tuple(other)
        return tuple(self) == other

    __hash__ = None  # type: ignore[assignment]  # a view that changes

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


def register_shared_memory(space_type: type[Text]) -> None:
    """Make Gymnasium's shared memory keep the texts of ``space_type`` (a ``Text`` space
    that holds any string) in :class:`TextSlots`."""
    create_shared_memory.register(space_type, _create)
    read_from_shared_memory.register(space_type, _read)
    write_to_shared_memory.register(space_type, _write)


# (``Any``: Gymnasium's annotations name only its own kinds of buffer)
def _create(space: Text, n: int = 1, ctx: ModuleType | None = None) -> Any:
    return TextSlots(n, space.max_length)


def _read(space: Text, shared_memory: TextSlots, n: int = 1) -> Any:
    return SharedTexts(shared_memory)


def _write(space: Text, index: int, value: str, shared_memory: TextSlots) -> None:
    shared_memory.write(index, value)
