"""Dataset names, which environment each belongs to, and how to load it.

Every benchmark declares its datasets (:mod:`intercode.benchmarks`); a path to a
JSON Lines file of the user's own tasks is a dataset too, for an environment that
reads them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from intercode.datasets.tasks import Dataset
from intercode.errors import ConfigError

__all__ = ["dataset_env", "dataset_names", "is_dataset_file", "load_dataset"]


def dataset_names(env: str | None = None) -> list[str]:
    """Registered dataset names, optionally only those of one environment."""
    from intercode.benchmarks import benchmarks

    return sorted(name for b in benchmarks() if env is None or b.name == env
                  for name in b.datasets)


def dataset_env(name: str) -> str | None:
    """The environment a registered dataset (or a view of one) belongs to (``None``: not
    registered)."""
    from intercode.benchmarks import owner
    from intercode.datasets.views import is_view

    if is_view(name):
        name = name.split(":", 1)[0]
    benchmark = owner(name)
    return None if benchmark is None else benchmark.name


def is_dataset_file(name: str) -> bool:
    """Whether ``name`` names a task file rather than a registered dataset."""
    return name.endswith((".jsonl", ".json")) or "/" in name or Path(name).is_file()


def load_dataset(name: str, env: str | None = None) -> Dataset:
    """Load a registered dataset (cached per process), or the user's task file ``name``
    for the environment ``env`` (read each time)."""
    from intercode.benchmarks import get, owner
    from intercode.datasets.views import is_view, parse_view, view

    if owner(name) is not None:
        return _load_registered(name)
    if is_view(name):
        base, options = parse_view(name)
        return view(load_dataset(base, env), name, **options)  # type: ignore[arg-type]
    if is_dataset_file(name):
        if env is None:
            raise ConfigError(f"{name}: a task file needs its environment (e.g. BashEnv(dataset"
                              f"=path) or `intercode eval bash --dataset {name}`)")
        reader = get(env).user_dataset
        if reader is None:
            raise ConfigError(f"the {env} environment reads no task files (--dataset {name})")
        from intercode.benchmarks.spec import resolve

        return resolve(reader)(name, env)  # type: ignore[no-any-return]
    known = ", ".join(dataset_names())
    raise ConfigError(f"unknown dataset {name!r}; known datasets: {known}")


@lru_cache(maxsize=32)
def _load_registered(name: str) -> Dataset:
    from intercode.benchmarks import owner

    benchmark = owner(name)
    assert benchmark is not None
    return benchmark.loader(name)(name)
