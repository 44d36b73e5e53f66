"""Closes the environments the Inspect tests left idle in the pool."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True, scope="session")
def _close_pool() -> Any:
    yield
    from intercode.integrations.inspectai.episode import POOL

    POOL.close()

