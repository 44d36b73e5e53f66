"""One exception tree for everything intercode raises.

A bad *action* never raises: it becomes an observation (exit code, error text).
These exceptions mean the infrastructure failed; the runner records them as
``status: "error"`` and never as a reward.
"""

from __future__ import annotations

__all__ = ["AgentFault", "ConfigError", "DataUnavailable", "DatasetError", "EnvStateError",
           "FatalRunError", "GoldError", "IntercodeError", "ModelError", "ModelRejected",
           "ObservationSpaceError", "RewardError", "RunAborted", "SandboxError",
           "SandboxSpentError", "SandboxUnavailableError", "SnapshotError", "SnapshotUnsupported",
           "TaskUnavailable"]


class IntercodeError(Exception):
    """Base class of every intercode error."""


class ConfigError(IntercodeError, ValueError):
    """An argument or setting is invalid (unknown dataset, bad task range, ...)."""


class SandboxError(IntercodeError, RuntimeError):
    """The sandbox could not be started, or stopped answering."""


class SandboxSpentError(SandboxError):
    """The sandbox can no longer start a clean shell (the agent killed the Python
    interpreter's zygote, see ``inbox/zygote.py``): replace it with a new one."""


class SandboxUnavailableError(SandboxError):
    """The sandbox backend cannot run on this machine (missing tool, no user namespaces)."""


class DatasetError(IntercodeError, RuntimeError):
    """Data is missing, corrupt or malformed."""


class DataUnavailable(DatasetError):
    """A pinned data file is neither in the mirror nor in the cache, and cannot be
    downloaded from here (never raised for a file that is there but corrupt)."""


class RewardError(IntercodeError, RuntimeError):
    """A reward could not be computed (never reported as a reward of 0)."""


class GoldError(RewardError):
    """The task's gold solution itself fails (a statement its engine refuses), on an
    environment that is sound: the task cannot be scored, and the next one can."""


class EnvStateError(IntercodeError, RuntimeError):
    """The environment was used out of order (step before reset, step after the end)."""


class SnapshotError(IntercodeError, RuntimeError):
    """A snapshot cannot be restored here (another environment, an earlier episode, a
    released or forged handle)."""


class SnapshotUnsupported(SnapshotError, NotImplementedError):
    """The environment cannot snapshot its state (a plugin that implements no snapshot)."""


class ObservationSpaceError(IntercodeError, ValueError):
    """An observation is outside its environment's observation space (a vector
    environment's shared memory holds only observations of the space, and cuts none)."""


class AgentFault(IntercodeError):
    """The agent's own actions left its sandbox unusable or unscorable (processes that
    survive every kill, a tree the scorer cannot read, ...).

    Not an infrastructure fault: the runner records the episode as ``status: "ok"``
    with reward 0 and the reason in ``agent_fault``, never retries it, and starts the
    next episode in a fresh environment.
    """


class TaskUnavailable(IntercodeError, LookupError):
    """The task cannot run here (it needs the network, or its files are missing).

    The runner records such an episode as ``status: "skipped"`` with the reason.
    """


class ModelError(IntercodeError, RuntimeError):
    """A model call failed after its retries (server errors, time-outs, malformed answers).

    The episode is recorded as ``status: "error"``; ``--resume`` runs it again.
    """


class ModelRejected(ModelError):
    """The model server refused the request itself (400/422: most often a prompt past the
    model's context, which the model's own long replies can cause).

    Before the episode's first answer it is an error like any :class:`ModelError` (a
    misconfiguration); after it, the episode ends there as the agent's outcome (scored on
    the state reached, the reason in ``stop_reason``), so that a policy cannot turn a
    failing episode into an error that drops out of the rates and is run again.
    """


class FatalRunError(IntercodeError, RuntimeError):
    """The run cannot go on at all (bad credentials, unknown model): it stops at once,
    records nothing for the episodes in flight, and can be resumed once fixed."""


class RunAborted(IntercodeError, RuntimeError):
    """A worker could not build its environment, or the run hit a :class:`FatalRunError`:
    nothing more can run. (Also importable from ``intercode.runner.executors``.)"""
