"""Bridges to the tools people already use: Inspect AI (:mod:`.inspectai`), Ray
(:mod:`.raycluster`), the MCP and OpenEnv servers (:mod:`.serve`) and TRL's GRPO
trainer (:mod:`.trl`).

Each subpackage imports its third-party library only when used; the core install runs
without them.
"""

__all__: list[str] = []  # each integration is its own package
