"""intercode for the ``verifiers`` RL library (0.4; the ``verifiers`` extra:
``pip install 'intercode[verifiers]'``, in an environment of its own: see
docs/training.md).

:func:`load_environment` makes a verifiers environment of one benchmark, dataset (or
view) and reward mode: each rollout plays one task with the tools ``execute(code)`` and
``submit`` on a warm intercode environment of its own, and scores intercode's reward.
verifiers' command line and trainers (prime-rl) load it by its taskset id
``intercode_verifiers`` (the top-level module :mod:`intercode_verifiers`). Nothing here
imports verifiers until :func:`load_environment` runs (:mod:`.plugin` holds the
classes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from intercode.errors import ConfigError

if TYPE_CHECKING:
    import verifiers.v1 as vf

__all__ = ["INSTALL_HINT", "TASKSET_ID", "load_environment", "require"]

INSTALL_HINT = "pip install 'intercode[verifiers]' (in an environment of its own)"
TASKSET_ID = "intercode_verifiers"  # the module verifiers imports for the taskset id


def require(what: str = "this") -> None:
    """Raise a one-line :class:`ConfigError` unless verifiers 0.4 is importable."""
    try:
        import verifiers.v1  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what} needs verifiers 0.4: {INSTALL_HINT}") from None


def load_environment(benchmark: str = "bash", dataset: str | None = None, *,
                     reward: str = "paper", max_turns: int | None = None,
                     observation_chars: int | None = None, **env_kwargs: Any) -> vf.Env[Any]:
    """A verifiers environment of ``benchmark``'s ``dataset`` (a name or view, e.g.
    ``"nl2bash:clean:train"``; the benchmark's default dataset if ``None``).

    ``reward``: the reward mode (``paper``, ``success``, ``baseline``); ``max_turns``:
    the tool calls an episode takes at most (the benchmark's own by default);
    ``observation_chars``: what a tool result shows of an output; ``env_kwargs``: more
    arguments of :func:`intercode.make` (JSON values: they travel in verifiers' config).
    A wrong name or argument is a one-line :class:`~intercode.errors.ConfigError`.
    """
    require("intercode.integrations.verifiers.load_environment")
    import verifiers.v1 as vf
    from pydantic import ValidationError

    taskset: dict[str, Any] = {"id": TASKSET_ID, "benchmark": benchmark, "dataset": dataset,
                               "reward": reward, "max_turns": max_turns,
                               "env_kwargs": env_kwargs}
    if observation_chars is not None:
        taskset["observation_chars"] = observation_chars
    try:
        config = vf.resolve_env_config({"taskset": taskset})
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}"
                           for e in exc.errors())
        raise ConfigError(f"intercode's verifiers environment: {errors}") from None
    return vf.load_environment(config)
