"""intercode for TRL's ``GRPOTrainer`` (the ``trl`` extra: ``pip install 'intercode[trl]'``).

:func:`environment_class` makes the class to pass as ``environment_factory``: a warm
intercode environment whose tools are ``execute(code)`` and ``submit``, scored with the
chosen reward mode. :func:`training_dataset` (or :func:`training_rows`) makes the
training set: one row per task. Nothing here imports TRL or PyTorch; see
docs/training.md and examples/trl_grpo.py.
"""

from __future__ import annotations

from intercode.integrations.trl.dataset import training_dataset, training_rows
from intercode.integrations.trl.environment import IntercodeTrlEnv, environment_class

__all__ = ["IntercodeTrlEnv", "environment_class", "training_dataset", "training_rows"]
