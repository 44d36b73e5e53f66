"""Dataset names, which environment each belongs to, and how to load it."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from intercode.datasets import ctf, mbpp, nl2bash, spider
from intercode.datasets.tasks import Dataset
from intercode.errors import ConfigError

LOADERS: dict[str, tuple[str, Callable[[str], Dataset]]] = {
    **{name: ("bash", nl2bash.load) for name in nl2bash.SOURCES},
    "nl2bash": ("bash", nl2bash.load),
    nl2bash.DEMO: ("bash", nl2bash.load),
    "spider-dev": ("sql", spider.load),
    **{name: ("python", mbpp.load) for name in mbpp.SPLITS},
    "intercode-ctf": ("ctf", ctf.load),
}


def dataset_names(env: str | None = None) -> list[str]:
    """Registered dataset names, optionally only those of one environment."""
    return sorted(n for n, (e, _) in LOADERS.items() if env is None or e == env)


@lru_cache(maxsize=32)
def load_dataset(name: str) -> Dataset:
    """Load a registered dataset (cached per process)."""
    try:
        _env, loader = LOADERS[name]
    except KeyError:
        known = ", ".join(dataset_names())
        raise ConfigError(f"unknown dataset {name!r}; known datasets: {known}") from None
    return loader(name)
