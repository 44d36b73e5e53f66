"""What a sandbox looks like from inside: mounts, skeleton, identity, environment.

The root file system's ``/usr`` and ``/etc`` (by default the pinned, minimal root of
:mod:`intercode.sandbox.rootfs`; the host's with ``INTERCODE_ROOTFS=host``) are mounted
read-only; everything else is a private, size-limited tmpfs: the task tree,
``/tmp``, the home directory. Host home directories, ``/usr/local``, ``/var`` and
the project checkout are not visible. ``/etc/passwd``, ``group``, ``hosts`` and
``hostname`` are replaced by generated files so every machine shows the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from intercode.errors import ConfigError, SandboxUnavailableError
from intercode.sandbox.limits import Limits
from intercode.sandbox.network import resolv_conf
from intercode.sandbox.rootfs import default_root

__all__ = [
    "EPOCH_NS",
    "MASKED_PROC_DIRS",
    "MASKED_PROC_FILES",
    "PATH",
    "SCRATCH_MOUNTS",
    "SKELETON_DIRS",
    "TOP_LEVEL",
    "Layout",
]

# 2023-06-01T00:00:00Z: the time stamp of everything a setup script created (see fsbuild).
EPOCH_NS = 1_685_577_600 * 1_000_000_000

SKELETON_DIRS: tuple[tuple[str, int], ...] = (
    ("boot", 0o755), ("home", 0o755), ("home/agent", 0o755), ("media", 0o755),
    ("mnt", 0o755), ("opt", 0o755), ("root", 0o700), ("run", 0o755), ("srv", 0o755),
    ("tmp", 0o1777), ("var", 0o755), ("var/log", 0o755), ("var/tmp", 0o1777),
)
TOP_LEVEL = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
SCRATCH_MOUNTS = ("dev/shm",)
# What a Docker container masks in /proc (moby's default `MaskedPaths`): host kernel state
# a sandbox has no use for (kernel memory, the kernel's keys, timers and scheduler of every
# host process, hardware). Files get /dev/null bound over them (empty; writes go nowhere),
# directories an empty read-only tmpfs. Only those the kernel has are masked (a bind needs
# a target).
# Docker's read-only paths (/proc/sys, sysrq-trigger, irq, bus) are bwrap's own: it covers
# them read-only when writable; /sys (with /sys/firmware) is not mounted at all.
MASKED_PROC_FILES = ("interrupts", "kcore", "keys", "latency_stats", "sched_debug",
                     "timer_list", "timer_stats")
MASKED_PROC_DIRS = ("acpi", "asound", "scsi")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Layout:
    """Identity and mounts of a sandbox.

    ``rootfs`` is where ``/usr``, ``/etc`` and the top-level library links come from:
    by default the pinned root of the ``base`` profile (built on first use, see
    :func:`intercode.sandbox.rootfs.default_root`); ``INTERCODE_ROOTFS=host`` (or ``/``)
    the host's, ``INTERCODE_ROOTFS=<dir>`` a root prepared by hand (``mmdebstrap``,
    ``debootstrap``, ``docker export``).
    """

    rootfs: Path = field(default_factory=lambda: default_root("base"))
    hostname: str = "intercode"
    user: str = "agent"
    uid: int = 1000
    gid: int = 1000
    hide_usr_local: bool = True
    network: bool | str = False  # see intercode.sandbox.network
    extra_env: tuple[tuple[str, str], ...] = field(default=())
    image: str | None = None  # the docker backend's image (see intercode.sandbox.docker.sandbox)
    image_profile: str = "base"  # which built image the docker backend uses without one
    image_packages: tuple[str, ...] = ()  # and the Debian packages that image adds
    # more paths of the root file system (or the image) shown read-only at the same place,
    # e.g. ``opt/miniconda3`` of a SWE-bench image: outside the tree, so never scanned,
    # restored or written
    ro_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for path in self.ro_paths:
            parts = path.split("/")
            if (not isinstance(path, str) or not path or path.startswith("/")
                    or any(p in ("", ".", "..") for p in parts) or parts[0] in (
                        "usr", "etc", "proc", "dev", "tmp", *TOP_LEVEL)):
                raise ConfigError(f"a read-only path of the layout must be relative, below "
                                  f"/ and outside /usr, /etc, /proc, /dev, /tmp: {path!r}")
    @property
    def home(self) -> str:
        """The user's home directory inside the sandbox."""
        return f"/home/{self.user}"

    def shell_env(self) -> dict[str, str]:
        """Environment of the shell and of every command."""
        env = {
            "PATH": PATH,
            "HOME": self.home,
            "USER": self.user,
            "LOGNAME": self.user,
            "SHELL": "/bin/bash",
            "HOSTNAME": self.hostname,
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        }
        env.update(dict(self.extra_env))
        return env

    def etc_files(self) -> dict[str, bytes]:
        """Generated files mounted over the root file system's ``/etc``."""
        u, g = self.user, self.uid
        files = {
            "passwd": (
                "root:x:0:0:root:/root:/bin/bash\n"
                f"{u}:x:{g}:{self.gid}:{u}:{self.home}:/bin/bash\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            ),
            "group": f"root:x:0:\n{u}:x:{self.gid}:\nnogroup:x:65534:\n",
            "hosts": (
                "127.0.0.1\tlocalhost\n"
                f"127.0.1.1\t{self.hostname}\n"
                "::1\tlocalhost ip6-localhost ip6-loopback\n"
            ),
            "hostname": f"{self.hostname}\n",
        }
        resolv = resolv_conf(self.network)
        if resolv is not None:
            files["resolv.conf"] = resolv
        return {name: text.encode() for name, text in files.items()}

    def mount_args(self, limits: Limits, etc_fds: dict[str, int]) -> list[str]:
        """bubblewrap arguments that build the file system."""
        root = self.rootfs
        for needed in ("usr", "etc"):
            if not (root / needed).is_dir():
                raise SandboxUnavailableError(f"the root file system {root} has no /{needed}")
        args = ["--size", str(limits.storage), "--tmpfs", "/",
                "--ro-bind", str(root / "usr"), "/usr"]
        if self.hide_usr_local and (root / "usr" / "local").is_dir():
            args += ["--tmpfs", "/usr/local", "--remount-ro", "/usr/local"]
        for name in TOP_LEVEL:
            path = root / name
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), f"/{name}"]
            elif path.is_dir():
                args += ["--ro-bind", str(path), f"/{name}"]
        args += ["--ro-bind", str(root / "etc"), "/etc"]
        for shown in self.ro_paths:
            source = root / shown
            # a link anywhere on the way (the root is an image's export) could lead out
            if (not source.is_dir() or source.resolve() != root.resolve() / shown):
                raise SandboxUnavailableError(f"the root file system {root} has no directory "
                                              f"/{shown} to show (or it is reached through a "
                                              "symbolic link)")
            args += ["--ro-bind", str(source), f"/{shown}"]
        for name, fd in sorted(etc_fds.items()):
            args += ["--ro-bind-data", str(fd), f"/etc/{name}"]
        args += ["--proc", "/proc", *masked_proc_args(), "--dev", "/dev",
                 "--size", str(limits.shm), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        return args

    def overridable_etc(self) -> dict[str, bytes]:
        """The generated /etc files whose target is a regular file in the root fs."""
        found = {}
        for name, data in self.etc_files().items():
            target = self.rootfs / "etc" / name
            if target.is_file() and not target.is_symlink():
                found[name] = data
        return found


def masked_proc_args(proc: Path = Path("/proc")) -> list[str]:
    """bubblewrap arguments masking :data:`MASKED_PROC_FILES` and :data:`MASKED_PROC_DIRS`
    (those present in the host's ``proc``: the sandbox's is another view of the same
    kernel)."""
    args = []
    for name in MASKED_PROC_FILES:
        if (proc / name).is_file():
            # --dev-bind: a read-only remount would add nodev, and /dev/null could not be
            # opened; writes to it go nowhere
            args += ["--dev-bind", "/dev/null", f"/proc/{name}"]
    for name in MASKED_PROC_DIRS:
        if (proc / name).is_dir():
            args += ["--size", "4096", "--tmpfs", f"/proc/{name}", "--remount-ro",
                     f"/proc/{name}"]
    return args
