"""Fixtures of the unit tests about data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from intercode.datasets import fetch, load_dataset


@pytest.fixture()
def fresh_caches() -> Iterator[None]:
    """No digest or dataset survives from another test."""
    fetch._verified.clear()
    load_dataset.cache_clear()
    yield
    fetch._verified.clear()
    load_dataset.cache_clear()
