"""Serving environments over protocols (MCP, OpenEnv): sessions on a pool of sandboxes."""
