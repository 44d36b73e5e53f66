"""Policies that choose actions: gold, replay, human, and the LLM strategies (agents.llm).

Each name is imported on first use (the command line needs only :mod:`.names`)."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.agents.base import Policy
    from intercode.agents.gold import GoldPolicy
    from intercode.agents.replay import ReplayPolicy, load_trajectories

__all__ = ["GoldPolicy", "Policy", "ReplayPolicy", "load_trajectories"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.agents.base": ("Policy",),
    "intercode.agents.gold": ("GoldPolicy",),
    "intercode.agents.replay": ("ReplayPolicy", "load_trajectories"),
})
