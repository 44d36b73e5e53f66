"""intercode's verifiers plugin, by the taskset id ``intercode_verifiers``.

verifiers 0.4 imports a taskset id as a top-level module (``-`` read as ``_``) and takes
the ``Taskset``, ``Harness`` and ``Env`` subclasses it exports; the classes live in
:mod:`intercode.integrations.verifiers.plugin`, and :func:`load_environment` is
:func:`intercode.integrations.verifiers.load_environment`. Importing this module
imports verifiers.

    vf-eval intercode_verifiers --env.taskset.benchmark bash --env.taskset.dataset bash-demo
"""

from intercode.integrations.verifiers import load_environment
from intercode.integrations.verifiers.plugin import (
    IntercodeEnv,
    IntercodeEnvConfig,
    IntercodeHarness,
    IntercodeHarnessConfig,
    IntercodeTaskset,
    IntercodeTasksetConfig,
)

__all__ = ["IntercodeEnv", "IntercodeEnvConfig", "IntercodeHarness", "IntercodeHarnessConfig",
           "IntercodeTaskset", "IntercodeTasksetConfig", "load_environment"]
