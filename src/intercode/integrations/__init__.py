"""Bridges to the tools people already use: Inspect AI (:mod:`.inspectai`), Ray
(:mod:`.raycluster`), the MCP and OpenEnv servers (:mod:`.serve`), TRL's GRPO
trainer (:mod:`.trl`) and the verifiers library of prime-rl (:mod:`.verifiers`).

Each subpackage imports its third-party library only when used; the core install runs
without them.
"""

__all__: list[str] = []  # each integration is its own package
