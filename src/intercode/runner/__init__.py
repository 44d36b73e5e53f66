"""Running episodes: one episode to a record, many in parallel, logs and summaries.

Each name is imported on first use."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.runner.episode import run_episode
    from intercode.runner.run import RunConfig, execute, run_config

__all__ = ["RunConfig", "execute", "run_config", "run_episode"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.runner.episode": ("run_episode",),
    "intercode.runner.run": ("RunConfig", "execute", "run_config"),
})
