"""Rewards: pure functions of the agent's and the gold solution's results.

Each benchmark's environment imports the module of its own reward; nothing is re-exported here."""

__all__: list[str] = []
