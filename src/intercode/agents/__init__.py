"""Policies that choose actions: gold, replay, human, and the LLM strategies (agents.llm)."""

from intercode.agents.base import Policy
from intercode.agents.gold import GoldPolicy
from intercode.agents.replay import ReplayPolicy, load_trajectories

__all__ = ["GoldPolicy", "Policy", "ReplayPolicy", "load_trajectories"]
