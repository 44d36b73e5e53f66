"""Rewards: pure functions of the agent's and the gold solution's results."""
