"""What Inspect loads through the ``inspect_ai`` entry point: the tasks (and the
``intercode`` sandbox provider)."""

from intercode.integrations.inspectai.sandbox import IntercodeSandboxEnvironment
from intercode.integrations.inspectai.tasks import bash, ctf, python, sql, swe

__all__ = ["IntercodeSandboxEnvironment", "bash", "ctf", "python", "sql", "swe"]
