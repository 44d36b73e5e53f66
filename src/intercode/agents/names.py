"""The agents' names, for the command line (which must not import the agents to list them)."""

# the LLM strategies (agents.llm.POLICIES has one class for each, in this order)
STRATEGIES = ("single-turn", "try-again", "react", "plan-solve", "tools")
AGENTS = ("gold", "replay", "human", *STRATEGIES)
