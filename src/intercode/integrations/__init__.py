"""Bridges to the tools people already use: Inspect AI (:mod:`.inspectai`), Ray
(:mod:`.raycluster`) and the MCP and OpenEnv servers (:mod:`.serve`).

Each subpackage imports its third-party library only when used; the core install runs
without them.
"""

__all__: list[str] = []  # each integration is its own package
