"""What a benchmark declares, once: its environment, datasets, language and prompts.

Everything that used to name an environment (Gymnasium registration, the factory, the
command line, the agents' parsing and prompts, ``play``, the gold policies, ``validate``)
reads these fields instead; a third-party benchmark is one :class:`Benchmark` object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

from intercode.errors import ConfigError

if TYPE_CHECKING:
    from intercode.datasets.tasks import Dataset, Task
    from intercode.envs.base import IntercodeEnv
    from intercode.envs.core.base import EnvCore

__all__ = ["Benchmark", "Parsing", "Prompting", "resolve"]

# the sandbox root profiles (intercode.sandbox.rootfs.PROFILES; checked here without
# importing the sandbox package, which `intercode --help` must not pay for)
SANDBOX_PROFILES = ("base", "ctf")
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,99}$")
# the settings a benchmark may take from the command line besides the common ones
OPTIONS = ("sql_backend", "mysql_url", "sql_max_rows", "sql_max_result_rows", "sql_metric",
           "network", "test_timeout", "gold_cache", "repo_mirror", "answer_check")


@dataclass(frozen=True)
class Parsing:
    """How a model's reply becomes an action.

    ``statement`` is ``code`` (the fenced block, else the reply, verbatim) or ``sql``
    (the first SQL statement of it). ``submit_argument``: ``submit <x>`` hands in ``x``
    (a flag, a function name). ``prefixes`` are prompt marks stripped from an unfenced
    reply (``$ ``). ``tags`` are code-block tags of this language.
    """

    statement: str = "code"
    submit_argument: bool = False
    prefixes: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.statement not in ("code", "sql"):
            raise ConfigError(f"Parsing.statement must be 'code' or 'sql', not {self.statement!r}")


@dataclass(frozen=True)
class Prompting:
    """How the paper's strategies talk about this benchmark.

    ``language`` names the code (and tags its blocks); ``setting`` is what the code
    runs on. The optional texts add to or replace the generic wording:
    ``try_again_note`` (extra lines of the Try Again system message),
    ``try_again_system`` (a whole system message instead, e.g. CTF's),
    ``try_again_query`` (the first message, ``{query}`` filled in),
    ``shows_reward`` (Try Again shows the reward after each action),
    ``react_goal`` / ``react_submit`` (the ReAct job and its submit action),
    ``execute_note`` (Plan & Solve execution), ``failed_definition`` (shown instead of
    the output when a definition is scored below 1, as upstream's Python prompt did),
    ``react_examples`` / ``plan_examples`` (worked examples, the paper's structure).
    Native tool calling (``--agent tools``) reads ``submit_answer`` (what the ``answer``
    of the submit tool is, e.g. "the flag"; used when ``Parsing.submit_argument``) and
    ``tools_note`` (extra lines of its system message; ``try_again_note`` if unset).
    """

    language: str
    setting: str
    try_again_note: str = ""
    try_again_system: str | None = None
    try_again_query: str | None = None
    shows_reward: bool = True
    react_goal: str | None = None
    react_submit: str | None = None
    execute_note: str = ""
    failed_definition: str | None = None
    react_examples: str = ""
    plan_examples: str = ""
    submit_answer: str | None = None
    tools_note: str | None = None


def _gold_code(task: Task) -> str:
    return task.gold


def _plain_submit(task: Task) -> str:
    return "submit"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: an environment class and everything around it.

    ``env`` is the class or its import path (``"package.module:Class"``, loaded on first
    use); ``core`` (optional, the same kinds) is that class's workings without Gymnasium,
    which a run's workers build instead so that they start without importing it (see
    :mod:`intercode.envs.core`; ``None``: the workers build ``env``); ``datasets`` maps
    each dataset name to its loader (``name -> Dataset``, or ``"module:function"``).
    ``gold_action`` is the action that hands in a task's gold
    (the code itself; CTF: ``submit <flag>``), ``gold_submit`` the action after it
    (``submit``; Python: ``submit <function>``). ``options`` lists the settings of
    :data:`OPTIONS` this environment takes. ``play_dataset`` is the dataset ``play``
    opens by default. ``user_dataset`` reads a JSON Lines file of the user's own tasks
    (``(path, env name) -> Dataset``), if the benchmark supports that. For the contract
    checks (:mod:`intercode.testing`): ``test_dataset`` is a small dataset (default: the
    default one) and ``echo`` an action that prints ``{text}`` and succeeds.
    ``sandbox`` is the sandbox backend the environment runs on, checked before a run
    writes anything (``None``: it needs none). ``sandbox_profile`` (``base`` or ``ctf``)
    and ``sandbox_packages`` (more Debian packages, e.g. ``("nodejs",)``) make the pinned
    root file system its sandboxes mount (:mod:`intercode.sandbox.rootfs`). ``max_turns``
    is the turn limit its Gymnasium id carries (the paper's 10 by default; ``None``: none).
    """

    name: str
    env: type[IntercodeEnv] | str
    datasets: Mapping[str, Callable[[str], Dataset] | str]
    default_dataset: str
    parsing: Parsing
    prompting: Prompting
    description: str = ""
    dialogue_limit: int | None = None
    human_prompt: str = "$"
    multiline_input: bool = False
    gold_action: Callable[[Task], str] = _gold_code
    gold_submit: Callable[[Task], str] = _plain_submit
    options: frozenset[str] = frozenset()
    core: type[EnvCore] | str | None = None
    play_dataset: str | None = None
    user_dataset: Callable[[str, str], Dataset] | str | None = None
    test_dataset: str | None = None
    echo: str = "echo {text}"
    sandbox: str | None = "bwrap"
    sandbox_profile: str = "base"
    sandbox_packages: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int | None = 10

    def __post_init__(self) -> None:
        if self.max_turns is not None and (isinstance(self.max_turns, bool)
                                           or not isinstance(self.max_turns, int)
                                           or self.max_turns < 1):
            raise ConfigError(f"benchmark {self.name}: max_turns must be a positive integer "
                              f"or None, not {self.max_turns!r}")
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"a benchmark name must be letters, digits, - and _: {self.name!r}")
        if self.default_dataset not in self.datasets:
            raise ConfigError(f"benchmark {self.name}: default dataset "
                              f"{self.default_dataset!r} is not one of its datasets")
        for name in (self.play_dataset, self.test_dataset):
            if name is not None and name not in self.datasets:
                raise ConfigError(f"benchmark {self.name}: {name!r} is not one of its datasets")
        if "{text}" not in self.echo:
            raise ConfigError(f"benchmark {self.name}: echo must contain {{text}}")
        object.__setattr__(self, "sandbox_packages", tuple(self.sandbox_packages))
        if self.sandbox_profile not in SANDBOX_PROFILES:
            raise ConfigError(f"benchmark {self.name}: unknown root file system profile "
                              f"{self.sandbox_profile!r}; known: {', '.join(SANDBOX_PROFILES)}")
        for package in self.sandbox_packages:
            if not isinstance(package, str) or not DEBIAN_PACKAGE.match(package):
                raise ConfigError(f"benchmark {self.name}: not a Debian package name: "
                                  f"{package!r}")
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise ConfigError(f"benchmark {self.name}: unknown options {sorted(unknown)}; "
                              f"known: {', '.join(OPTIONS)}")

    @property
    def gym_id(self) -> str:
        """The Gymnasium id (``bash`` -> ``intercode/bash-v0``)."""
        return f"intercode/{self.name}-v0"

    @property
    def entry_point(self) -> str:
        """The environment class as Gymnasium wants it (``module:Class``)."""
        if isinstance(self.env, str):
            return self.env
        return f"{self.env.__module__}:{self.env.__qualname__}"

    def env_class(self) -> type[IntercodeEnv]:
        """The environment class (imported on first use)."""
        return resolve(self.env)  # type: ignore[no-any-return]

    @property
    def worker_env(self) -> type[EnvCore] | str:
        """What a run's workers build: :attr:`core` if given, else :attr:`env`."""
        return self.core if self.core is not None else self.env

    def core_class(self) -> type[EnvCore]:
        """The class a run's workers build (:attr:`worker_env`, imported on first use)."""
        return resolve(self.worker_env)  # type: ignore[no-any-return]

    def loader(self, dataset: str) -> Callable[[str], Dataset]:
        """The loader of one of this benchmark's datasets."""
        return resolve(self.datasets[dataset])  # type: ignore[no-any-return]


def resolve(target: Any) -> Any:
    """``target`` itself, or the object a ``"module:attribute"`` string names."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    try:
        obj: Any = import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {target!r}: {exc}") from None
    return obj
