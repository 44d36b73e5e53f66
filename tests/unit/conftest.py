"""Fixtures of the unit tests about data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from intercode import fetch
from intercode.datasets.registry import _load_registered


@pytest.fixture()
def fresh_caches() -> Iterator[None]:
    """No digest or dataset survives from another test."""
    fetch._verified.clear()
    _load_registered.cache_clear()
    yield
    fetch._verified.clear()
    _load_registered.cache_clear()
