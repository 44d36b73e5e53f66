"""Resource limits of a sandbox, each with a sane default."""

from __future__ import annotations

from dataclasses import dataclass

from intercode.errors import ConfigError

__all__ = ["GiB", "Limits", "MiB"]

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use. Sizes are in bytes, times in seconds.

    Attributes:
        timeout: wall-clock time of one action (InterCode's default is 10 s); at the
            deadline every process the action started, background ones included, is
            killed and the episode goes on.
        memory: resident memory of all processes together; past it the largest
            process is killed (checked ten times a second).
        address_space: virtual memory of each process (``RLIMIT_AS``).
        processes: processes alive at once in the sandbox (a fork bomb stops here;
            at 90 % of it, every process but the shell is killed).
        storage: size of the writable file system (the root tmpfs).
        shm: size of ``/dev/shm``.
        files: files, directories and links on the writable file systems together
            (tmpfs takes no inode limit from bubblewrap: the supervisor checks the
            count ten times a second and kills every process when it is past the
            limit and still growing).
        output: bytes of an action's output kept in the observation.
        output_hard: bytes of output after which a running action is stopped.
        file_size: largest file a process may write.
        open_files: descriptors per process.
        kill_grace: time the shell has to report after its action's processes were
            killed, before the shell itself is replaced.
    """

    timeout: float = 10.0
    memory: int = 2 * GiB
    address_space: int = 4 * GiB
    processes: int = 256
    storage: int = 512 * MiB
    shm: int = 64 * MiB
    files: int = 100_000
    output: int = 1 * MiB
    output_hard: int = 64 * MiB
    file_size: int = 512 * MiB
    open_files: int = 1024
    kill_grace: float = 1.0

    def __post_init__(self) -> None:
        for name in ("timeout", "kill_grace"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"limit {name} must be positive, got {getattr(self, name)}")
        for name in ("memory", "address_space", "processes", "storage", "shm", "files",
                     "output", "output_hard", "file_size", "open_files"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"limit {name} must be at least 1, got {getattr(self, name)}")
        if self.processes < 8:
            raise ConfigError("limit processes must be at least 8 (the shell needs a few)")
        if self.output_hard < self.output:
            raise ConfigError("limit output_hard must not be smaller than output")
