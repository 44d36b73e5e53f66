"""The registry of benchmarks: the built-in four, then every installed plugin.

A plugin is a package with an entry point in the group ``intercode.benchmarks`` whose
object is a :class:`~intercode.benchmarks.spec.Benchmark` (or a list of them, or a
function returning either). Plugins are loaded on the first lookup; one that fails to
load is reported once (a warning) and left out, so a broken plugin never breaks the
built-in benchmarks.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from intercode.benchmarks.spec import Benchmark
from intercode.errors import ConfigError

__all__ = ["benchmarks", "get", "known", "names", "owner", "register", "register_gym_ids",
           "unregister"]

GROUP = "intercode.benchmarks"
log = logging.getLogger(__name__)

_REGISTRY: dict[str, Benchmark] = {}
_DATASETS: dict[str, str] = {}  # dataset name -> benchmark name
_loaded = False
_builtins_loaded = False


def register(benchmark: Benchmark, *, replace: bool = False) -> Benchmark:
    """Add a benchmark (and its datasets); a name taken by another is refused."""
    old = _REGISTRY.get(benchmark.name)
    if old is not None and old is not benchmark and not replace:
        raise ConfigError(f"a benchmark named {benchmark.name!r} is already registered")
    for name in benchmark.datasets:
        owner = _DATASETS.get(name)
        if owner is not None and owner != benchmark.name and not replace:
            raise ConfigError(f"benchmark {benchmark.name}: dataset {name!r} already belongs "
                              f"to {owner}")
    if old is not None:
        for name in old.datasets:
            _DATASETS.pop(name, None)
    _REGISTRY[benchmark.name] = benchmark
    for name in benchmark.datasets:
        _DATASETS[name] = benchmark.name
    _register_gym(benchmark)
    return benchmark


def unregister(name: str) -> None:
    """Remove a benchmark (tests and plugin authors' fixtures)."""
    benchmark = _REGISTRY.pop(name, None)
    if benchmark is None:
        return
    for dataset in benchmark.datasets:
        _DATASETS.pop(dataset, None)
    if "gymnasium" in sys.modules:
        import gymnasium as gym

        gym.registry.pop(benchmark.gym_id, None)


class EnvCreator:
    """Gymnasium's entry point of a benchmark: its class, imported on first use, with the
    benchmark's default dataset unless the class has a default of its own.

    It pickles by name (the benchmark is looked up where it is called), so a spec
    (``gymnasium.spec(id)``, ``env.spec``) can be shipped to another process.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnvCreator) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("EnvCreator", self.name))

    def __repr__(self) -> str:
        return f"EnvCreator({self.name!r})"

    def __call__(self, **kwargs: Any) -> Any:
        benchmark = get(self.name)
        cls = benchmark.env_class()
        reward = kwargs.pop("reward", None)  # the reward mode (every environment has it)
        if "dataset" not in kwargs:
            import inspect  # only when a plugin registers a class (start-up time)

            param = inspect.signature(cls.__init__).parameters.get("dataset")
            default = None if param is None else param.default
            if not (isinstance(default, str) and default in benchmark.datasets):
                kwargs["dataset"] = benchmark.default_dataset
        env = cls(**kwargs)
        if reward is not None:
            env.set_reward_mode(reward)
        return env


def _register_gym(benchmark: Benchmark) -> None:
    """Its Gymnasium id, if Gymnasium is loaded (else :func:`register_gym_ids` does it when
    Gymnasium is imported: the command line need not load Gymnasium and numpy)."""
    if "gymnasium" not in sys.modules:
        return
    import gymnasium as gym

    if benchmark.gym_id in gym.registry:
        gym.registry.pop(benchmark.gym_id)
    gym.register(id=benchmark.gym_id, entry_point=EnvCreator(benchmark.name),
                 nondeterministic=False, disable_env_checker=True,
                 max_episode_steps=benchmark.max_turns)


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from intercode.benchmarks import builtin

    for benchmark in builtin.BENCHMARKS:
        if benchmark.name not in _REGISTRY:
            register(benchmark)


def _ensure_loaded() -> None:
    """The built-ins, then every plugin (on the first lookup that needs them, never while
    ``intercode`` itself is being imported: a plugin module may import intercode)."""
    global _loaded
    _ensure_builtins()
    if _loaded:
        return
    _loaded = True
    from intercode.plugins import entry_points_of

    for ep in entry_points_of(GROUP):
        try:
            for benchmark in _unpack(ep.load()):
                register(benchmark)
        except Exception as exc:  # a broken plugin must not break the others
            warnings.warn(f"intercode: the benchmark plugin {ep.name!r} ({ep.value}) was not "
                          f"loaded: {type(exc).__name__}: {exc}", stacklevel=3)


def register_gym_ids() -> None:
    """Gymnasium ids of the built-ins and of every installed plugin, without importing
    the plugins (``intercode/<entry point name>-v0``; the plugin loads on first use)."""
    import gymnasium as gym

    _ensure_builtins()
    for benchmark in list(_REGISTRY.values()):  # those registered before Gymnasium loaded
        if benchmark.gym_id not in gym.registry:
            _register_gym(benchmark)
    from intercode.plugins import entry_points_of

    for ep in entry_points_of(GROUP):
        gym_id = f"intercode/{ep.name}-v0"
        if gym_id not in gym.registry:
            gym.register(id=gym_id, entry_point=EnvCreator(ep.name), nondeterministic=False,
                         disable_env_checker=True)


def _unpack(obj: object) -> Iterable[Benchmark]:
    if callable(obj) and not isinstance(obj, Benchmark):
        obj = obj()
    items = [obj] if isinstance(obj, Benchmark) else list(obj)  # type: ignore[call-overload]
    for item in items:
        if not isinstance(item, Benchmark):
            raise TypeError(f"expected a Benchmark, got {type(item).__name__}")
    return items


def get(name: str) -> Benchmark:
    """The benchmark called ``name`` (a one-line error naming the known ones)."""
    _ensure_builtins()
    if name not in _REGISTRY:
        _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown environment {name!r}; known: {', '.join(names())}") from None


def known(name: str) -> bool:
    """Whether a benchmark is called ``name`` (the plugins are read only for a name that
    is not built in)."""
    _ensure_builtins()
    if name not in _REGISTRY:
        _ensure_loaded()
    return name in _REGISTRY


def names() -> list[str]:
    """Every registered benchmark, built-in ones first."""
    _ensure_loaded()
    return list(_REGISTRY)


def benchmarks() -> list[Benchmark]:
    """Every registered benchmark."""
    _ensure_loaded()
    return list(_REGISTRY.values())


def owner(dataset: str) -> Benchmark | None:
    """The benchmark a registered dataset belongs to."""
    _ensure_builtins()
    if dataset not in _DATASETS:
        _ensure_loaded()
    name = _DATASETS.get(dataset)
    return None if name is None else _REGISTRY[name]
