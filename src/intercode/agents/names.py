"""The agents' names, for the command line (which must not import the agents to list them)."""

__all__ = ["AGENTS", "DEFAULT_TURNS", "STRATEGIES"]

# the LLM strategies (agents.llm.POLICIES has one class for each, in this order)
STRATEGIES = ("single-turn", "try-again", "react", "plan-solve", "tools")
# noop: submits at once (the do-nothing baseline; validate checks it scores below 1.0
# where a benchmark asks for that)
AGENTS = ("gold", "noop", "replay", "human", *STRATEGIES)
# the turn limit of an LLM strategy when none is given (the paper's; plan-solve's plan
# bounds itself)
DEFAULT_TURNS = {"single-turn": 1, "try-again": 10, "react": 10, "tools": 10}
