"""intercode for TRL's ``GRPOTrainer``, in one import (the ``trl`` extra)::

    from intercode.trl import environment_class, training_dataset

    GRPOTrainer(..., train_dataset=training_dataset("bash", "nl2bash:clean:train"),
                environment_factory=environment_class("bash", "nl2bash:clean:train",
                                                      reward="success"))

The names are those of :mod:`intercode.integrations.trl`, where they are documented;
docs/training.md says how to use them. Nothing here imports TRL or PyTorch.
"""

from __future__ import annotations

from intercode.integrations.trl import (
    IntercodeTrlEnv,
    environment_class,
    training_dataset,
    training_rows,
)

__all__ = ["IntercodeTrlEnv", "environment_class", "training_dataset", "training_rows"]
