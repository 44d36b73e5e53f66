"""The Docker sandbox backend: the same supervisor, in a container, over one stream.

One container per sandbox, started once. Its main process (pid 1) is the supervisor
of ``inbox/main.py``, booted from source as on bubblewrap; the supervisor's pipes are
multiplexed over one stream (``inbox/relay.py`` inside,
:mod:`~intercode.sandbox.docker.stream` outside): on a Linux host a unix socket between
this process and pid 1, bound into the container (:mod:`~intercode.sandbox.docker.link`),
else the container's stdio, attached once through the engine's API (which works across
Docker Desktop's VM). So a step and a reset cost round trips on that stream, never a
``docker exec``. The attach stream is kept either way: it carries the configuration and
the container's stderr, and its end ends the sandbox.

Isolation is Docker's plus bubblewrap's root: no network (or a network of its own,
see :mod:`~intercode.sandbox.docker.network`), ``no-new-privileges``, memory, process
and CPU limits, Docker's default seccomp profile plus intercode's filter (installed by
pid 1 on itself), and Docker's masked ``/proc`` paths. The image's root is read-only;
pid 1 starts as root with the few capabilities it needs to lay out bubblewrap's root on
a size-bounded tmpfs (writable ``/``, the image's ``/usr`` and ``/etc`` read-only) and
move into it, then drops every capability and becomes the agent's user before it reads
any agent input (``inbox/newroot.py``). Containers carry labels naming the process that
made them; close removes them, the engine removes them when that process dies (the
stream closes, the supervisor exits, ``AutoRemove``), and the first sandbox of a run
removes those left by processes that no longer exist.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from intercode.errors import ConfigError, SandboxError, SandboxUnavailableError
from intercode.fsutil import write_atomic
from intercode.sandbox import seccomp
from intercode.sandbox.docker import link as docker_link
from intercode.sandbox.docker.engine import DockerEngine, message
from intercode.sandbox.docker.network import container_settings
from intercode.sandbox.docker.stream import Stream, StreamChannel, StreamShellIO
from intercode.sandbox.inbox import proto
from intercode.sandbox.layout import (
    EPOCH_NS,
    MASKED_PROC_DIRS,
    MASKED_PROC_FILES,
    SCRATCH_MOUNTS,
    TOP_LEVEL,
    Layout,
)
from intercode.sandbox.limits import Limits, MiB
from intercode.sandbox.network import network_mode
from intercode.sandbox.supervisor import (
    RELAY,
    RELAY_MODULES,
    SupervisedSandbox,
    boot_code,
    inbox_sources,
)

__all__ = ["DockerSandbox", "default_image"]

log = logging.getLogger(__name__)
_unguarded_warned: set[str] = set()  # reasons already logged by this process

LABEL = "org.intercode.sandbox"
OWNER_LABEL = "org.intercode.owner"  # host name, pid and start time of the process
DOCKER_BOOT = boot_code(RELAY)
PYTHON = "/usr/bin/python3"
# where Docker mounts the tmpfs that pid 1 makes the root (see inbox/newroot.py)
NEW_ROOT = "/.intercode-root"
# what pid 1 needs for that, and drops before any agent input: mount, the agent's uid and
# gid, the bounding set and securebits, the new root's owner, chroot into it
SETUP_CAPS = ["CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN",
              "CAP_SYS_CHROOT"]
MASKED_PATHS = sorted({
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
    *(f"/proc/{n}" for n in (*MASKED_PROC_FILES, *MASKED_PROC_DIRS))})
# the container's room beyond the agent's cgroup (pid 1's): its own needs, and the tree
# snapshots it keeps (at most supervisor.SNAPSHOT_COPIES full copies of the agent's files: see
# _snapshot_budget) with room for a copy in transit (an export's or import's frame, which
# the relay thread holds too); a supervisor past it was the OOM killer's pick
SUPERVISOR_MEMORY = 256 * MiB
TRANSIT_COPIES = 2
# the agent's cgroup's room beyond its limit and the tmpfs: the supervisor's watchdog
# enforces the limit first (ten times a second, with its note), the kernel only past this
AGENT_SLACK = 256 * MiB
START_TIMEOUT = 60.0
REMOVAL_WAIT_S = 30.0  # at most, for a removal the engine had begun (see _remove)
_swept = False


def _sources() -> list[list[str]]:
    """The supervisor's modules and the relay, as the boot code reads them (read once)."""
    return inbox_sources(RELAY_MODULES)


def _proc_start(pid: int) -> str | None:
    """Start time of process ``pid`` (clock ticks since boot), or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return None


def owner() -> str:
    """This process as a label value: host, pid and start time."""
    return f"{socket.gethostname()}:{os.getpid()}:{_proc_start(os.getpid()) or '?'}"


def sweep(engine: DockerEngine) -> int:
    """Remove the sandbox containers left by processes of this host that no longer exist
    (a run killed with SIGKILL whose containers the engine has not removed yet)."""
    listed = engine.ok("GET", "/containers/json",
                       query={"all": "1", "filters": f'{{"label": ["{LABEL}"]}}'})
    removed = 0
    host = socket.gethostname()
    for item in listed or []:
        value = (item.get("Labels") or {}).get(OWNER_LABEL, "")
        name, _, rest = value.partition(":")
        pid, _, started = rest.partition(":")
        if name != host or not pid.isdigit():
            continue
        if _proc_start(int(pid)) == started:
            continue  # its process still runs
        status, _ = engine.call("DELETE", f"/containers/{item['Id']}", query={"force": "1"})
        removed += status in (200, 204)
    return removed


def default_image(profile: str = "base", packages: Sequence[str] = ()) -> str:
    """The image to use when none is named: ``$INTERCODE_DOCKER_IMAGE_<PROFILE>`` (e.g.
    ``_CTF``), else ``$INTERCODE_DOCKER_IMAGE``, else the one ``intercode image build``
    makes of ``profile`` and the extra Debian ``packages`` (built if missing)."""
    named = (os.environ.get(f"INTERCODE_DOCKER_IMAGE_{profile.upper()}")
             or os.environ.get("INTERCODE_DOCKER_IMAGE"))
    if named:
        return named
    from intercode.sandbox.docker import images
    return str(images.docker_image(profile, packages))


def describe_image(profile: str = "base", packages: Sequence[str] = ()) -> dict[str, Any]:
    """What a run records of the image its sandboxes run (:func:`default_image`, built if
    missing): its name, the engine's id and, for an image ``intercode image build`` made,
    the identity of the pinned root it holds."""
    from intercode.sandbox.docker.images import LABEL

    image = default_image(profile, packages)
    status, body = DockerEngine().call("GET", f"/images/{image}/json")
    if status != 200 or not isinstance(body, dict):
        raise SandboxUnavailableError(f"the Docker image {image!r} does not exist here: build "
                                      "it (`intercode image build --docker`) or name another")
    labels = (body.get("Config") or {}).get("Labels") or {}
    return {"kind": "image", "name": image, "id": body.get("Id"),
            "identity": labels.get(f"{LABEL}.rootfs.identity")}


class DockerSandbox(SupervisedSandbox):
    """A sandbox in a Docker container (see the module docstring)."""

    name = "docker"

    @classmethod
    def preflight(cls) -> None:
        """An engine must answer on its socket, and a named image (``$INTERCODE_DOCKER_IMAGE``)
        must exist (a built one is made when the first sandbox needs it)."""
        engine = DockerEngine()
        engine.ping()
        named = os.environ.get("INTERCODE_DOCKER_IMAGE")
        if named and engine.call("GET", f"/images/{named}/json")[0] == 404:
            raise SandboxUnavailableError(
                f"the Docker image {named!r} (INTERCODE_DOCKER_IMAGE / --image) does not exist "
                "here: build it (`intercode image build`) or name another (see docs/docker.md)")

    @classmethod
    def describe_root(cls, profile: str, packages: Sequence[str]) -> dict[str, Any]:
        """The image a sandbox of ``profile`` runs (built if missing), as a run records it
        (see :func:`describe_image`)."""
        return describe_image(profile, packages)

    def __init__(self, limits: Limits | None = None, layout: Layout | None = None,
                 python: str = PYTHON, shell: str | Sequence[str] = "bash",
                 shell_data: bytes = b"", image: str | None = None,
                 cpus: float | None = None, profile: str = "base") -> None:
        """``image``: the image to run (else :func:`default_image`); ``cpus``: CPU time
        (``$INTERCODE_DOCKER_CPUS``, default 1); ``profile``: which built image to use
        when none is named (``base`` or ``ctf``)."""
        super().__init__(limits=limits, layout=layout, python=python, shell=shell,
                         shell_data=shell_data)
        network_mode(self.layout.network)  # a bad setting fails here
        self.image = image or self.layout.image
        self.image_id: str | None = None  # set at start (see start)
        self.profile = profile if profile != "base" else self.layout.image_profile
        self.packages = tuple(self.layout.image_packages)
        try:
            self.cpus = float(cpus if cpus is not None
                              else os.environ.get("INTERCODE_DOCKER_CPUS") or 1.0)
        except ValueError as exc:
            raise ConfigError(f"INTERCODE_DOCKER_CPUS must be a number: {exc}") from None
        if self.cpus <= 0:
            raise ConfigError("the docker sandbox's CPUs must be positive")
        self._engine: DockerEngine | None = None
        self._stream: Stream | None = None
        self._container: str | None = None
        self._link: docker_link.Listener | None = None  # until the stream takes it over
        self.stream_mode = docker_link.stream_mode()  # a bad setting fails here

    # -- lifecycle -----------------------------------------------------------------------

    start_timeout = START_TIMEOUT

    def _spawned(self) -> bool:
        return self._stream is not None

    def _ended(self) -> bool:
        return self._stream is None or self._stream.ended

    def _after_ready(self) -> None:
        """Nothing: the engine connects the container's network (see docker_network)."""

    def _ready_notes(self, ready: dict[str, Any]) -> None:
        why = ready.get("unguarded")
        if why and str(why) not in _unguarded_warned:
            _unguarded_warned.add(str(why))
            log.warning("docker sandbox: the agent's processes share the container's memory "
                        "cgroup with the supervisor (%s), so the OOM killer can end the "
                        "supervisor: such an episode is an error, not the agent's outcome "
                        "(docs/docker.md)", str(why)[:300])

    def _spawn(self) -> None:
        global _swept
        engine = self._engine = DockerEngine()
        if not _swept:
            _swept = True
            sweep(engine)
        image = self.image = self.image or default_image(self.profile, self.packages)
        name = f"intercode-{os.getpid()}-{os.urandom(4).hex()}"
        link = self._link = self._listen()
        body = self._create_body(image)
        if link is not None:
            body["HostConfig"]["Mounts"].append(link.mount())
        status, reply = engine.call("POST", "/containers/create", body, query={"name": name})
        if link is not None and not link.required and status not in (201, 404):
            # the engine cannot bind the directory (a host in a container of its own,
            # whose paths the engine does not see): the attach stream only
            log.debug("docker sandbox: no socket (%s): %s", status, message(reply))
            self._close_link()
            link = None
            body["HostConfig"]["Mounts"].pop()
            status, reply = engine.call("POST", "/containers/create", body,
                                        query={"name": name})
        if status == 404:
            raise SandboxUnavailableError(
                f"the Docker image {image!r} does not exist here: build it with "
                "`intercode image build` or name another with --image (see docs/docker.md)")
        if status != 201:
            raise SandboxError(f"Docker engine: cannot create the sandbox container "
                               f"({status}): {message(reply)}")
        self._container = str(reply["Id"])
        # the image the container was made from, by content (a tag can move): what the
        # gold cache keys on (envs/gold_cache.py)
        status, info = engine.call("GET", f"/containers/{self._container}/json")
        self.image_id = str(info["Image"]) if status == 200 and isinstance(info, dict) \
            and info.get("Image") else None
        sock, first = engine.attach(self._container)
        stream = self._stream = Stream(sock, first, link)
        self._link = None  # the stream's now (it closes it)
        engine.ok("POST", f"/containers/{self._container}/start")
        # the boot code reads the sources and the configuration straight from stdin
        cfg = self._config({})
        if link is not None:
            cfg["link"] = link.spec()
        stream.send_raw(proto.encode(_sources()) + proto.encode(cfg, self.shell_data))
        self._channel = StreamChannel(stream)
        self._io = StreamShellIO(stream, self._channel, self.limits, self._restart,
                                 interrupt_signal="SIGINT" if self.shell in ("python", "sqlite")
                                 else None, freeze=self.shell != "sqlite")

    def _listen(self) -> docker_link.Listener | None:
        """The host's socket for this sandbox, if the mode wants one (see docker_link)."""
        if not docker_link.wanted(self.stream_mode):
            return None
        required = self.stream_mode == "socket"
        try:
            return docker_link.Listener(required)
        except OSError as exc:
            if required:
                raise SandboxUnavailableError(
                    f"cannot listen on a socket for the docker sandbox "
                    f"({docker_link.ENV}=socket): {exc}") from exc
            log.debug("docker sandbox: no socket: %s", exc)
            return None

    def _close_link(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            link.close()

    def _await_ready(self) -> None:
        """Wait for pid 1 to take the host's socket or stay on the attach stream (see
        docker_link), then for its readiness."""
        stream = self._stream
        if stream is not None and stream.link is not None:
            stream.await_link(time.monotonic() + self.start_timeout)
            if self.stream_mode == "socket" and not stream.linked and not stream.ended \
                    and not stream.stdout_seen:
                raise SandboxUnavailableError(
                    f"the docker sandbox's pid 1 did not connect to the host's socket within "
                    f"{self.start_timeout:.0f} s ({docker_link.ENV}=socket)")
            if self._channel is not None:
                self._channel.read_fd = stream.fd
        super()._await_ready()

    @property
    def linked(self) -> bool:
        """Whether this sandbox's frames take the host's socket (not the attach stream)."""
        return self._stream is not None and self._stream.linked

    def _create_body(self, image: str) -> dict[str, Any]:
        lim, lay = self.limits, self.layout
        # the agent's root: owned by root while pid 1 lays it out, then by the agent
        tmpfs = {NEW_ROOT: f"rw,exec,nosuid,nodev,size={lim.storage},mode=755"}
        env = [f"{k}={v}" for k, v in lay.shell_env().items()]
        net = container_settings(self._engine or DockerEngine(), lay.network)
        return {
            "Image": image,
            "Cmd": [self.python, "-I", "-S", "-c", DOCKER_BOOT, "0"],
            "Entrypoint": [],
            "User": "0:0",  # only until pid 1 has built the root (see inbox/newroot.py)
            "Hostname": lay.hostname,
            "Env": env,
            "WorkingDir": "/",
            "OpenStdin": True, "StdinOnce": True, "AttachStdin": True,
            "AttachStdout": True, "AttachStderr": True, "Tty": False,
            "NetworkDisabled": net["NetworkDisabled"],
            "Labels": {LABEL: "1", OWNER_LABEL: owner()},
            "HostConfig": {
                "NetworkMode": net["NetworkMode"],
                "CapDrop": ["ALL"],
                "CapAdd": SETUP_CAPS,
                "SecurityOpt": ["no-new-privileges"],
                "ReadonlyRootfs": True,
                "Tmpfs": tmpfs,
                "ShmSize": lim.shm,
                # tmpfs pages count in the container's memory: the agent's cgroup (its
                # limit, which the supervisor enforces first, its root and /dev/shm, and a
                # slack), and the supervisor's own
                "Memory": self._agent_memory() + self._supervisor_memory(),
                "MemorySwap": self._agent_memory() + self._supervisor_memory(),
                "PidsLimit": lim.processes + 16,
                "NanoCpus": int(self.cpus * 1e9),
                "AutoRemove": True,
                # no log driver: the engine would copy everything the stream carries (the
                # agent's output) into a host file without bound, and it costs each frame
                # a JSON encoding and a write (attaching does not need a log)
                "LogConfig": {"Type": "none", "Config": {}},
                "Init": False,
                "IpcMode": "private",
                "Privileged": False,
                # Docker's default list (an older engine's misses /proc/interrupts), and
                # bubblewrap's (layout.MASKED_PROC_*); pid 1 binds this /proc into the root
                "MaskedPaths": MASKED_PATHS,
                "Mounts": [{"Type": "bind", "Source": str(path), "Target": f"/etc/{name}",
                            "ReadOnly": True} for name, path in self._etc_files()],
            },
        }

    def _agent_memory(self) -> int:
        """The agent's memory cgroup (inbox/oomguard.py): its limit, its root's tmpfs and
        ``/dev/shm`` (tmpfs pages count), and :data:`AGENT_SLACK`."""
        lim = self.limits
        return lim.memory + lim.storage + lim.shm + AGENT_SLACK

    def _supervisor_memory(self) -> int:
        """The supervisor's room in the container (see :data:`SUPERVISOR_MEMORY`)."""
        lim = self.limits
        return (SUPERVISOR_MEMORY + self._snapshot_budget()
                + TRANSIT_COPIES * (lim.storage + lim.shm))

    def _etc_files(self) -> list[tuple[str, Path]]:
        """The generated ``passwd`` and ``group`` (the agent's name), as host files.

        Docker's own ``hosts``, ``hostname`` and ``resolv.conf`` stay. The files are
        bound read-only from the user's cache (a folder Docker Desktop shares)."""
        from intercode.fsutil import cache_dir

        files = {k: v for k, v in self.layout.etc_files().items() if k in ("passwd", "group")}
        key = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
        folder = cache_dir() / "docker-etc" / key
        found = []
        for name, data in sorted(files.items()):
            path = folder / name
            if not path.is_file() or path.read_bytes() != data:
                folder.mkdir(parents=True, exist_ok=True)
                write_atomic(path, data)
                path.chmod(0o644)
            found.append((name, path))
        return found

    def _config(self, inside: dict[str, int]) -> dict[str, Any]:
        cfg = super()._config(inside)
        # RLIMIT_NPROC counts the processes of a uid in its user namespace: every container
        # shares the host's, so uid 1000's count is that of all the docker sandboxes (and
        # the host's uid 1000): one sandbox's processes would make another's forks fail.
        # The container's pids cgroup (PidsLimit) bounds each sandbox on its own instead.
        cfg["rlimits"]["processes"] = None
        # (no "confine": pid 1 builds its root and drops its privileges, see newroot)
        # the agent's processes get a memory cgroup of their own, the container's less
        # the supervisor's room, so that the OOM killer never picks pid 1 (inbox/oomguard)
        cfg["root"] = {"root": NEW_ROOT, "uid": self.layout.uid, "gid": self.layout.gid,
                       "top_level": list(TOP_LEVEL), "ro_paths": list(self.layout.ro_paths),
                       "agent_memory": self._agent_memory(), "pty_max": cfg.pop("pty_max")}
        cfg["seccomp"] = seccomp.program(namespaces=True).hex()
        cfg["epoch_ns"] = EPOCH_NS
        cfg["scratch"] = list(SCRATCH_MOUNTS)
        return cfg

    def _startup_failure(self) -> str:
        if self._stream is not None:
            self._stream.drain_stderr()
        err = bytes(self._stream.stderr).decode("utf-8", "replace").strip() \
            if self._stream is not None else ""
        return (f"the docker sandbox (image {self.image}) did not start: "
                f"{err[-2000:] or 'no output'} (the image needs {self.python} and bash; "
                "see docs/docker.md)")

    @staticmethod
    def _remove(engine: DockerEngine, container: str) -> None:
        """Remove the container, and wait (at most :data:`REMOVAL_WAIT_S`) for a removal
        the engine had begun: the close's own end of stdin makes the supervisor exit, and
        the engine then removes the container itself (``AutoRemove``); a removal asked
        meanwhile gets 409 while the container is still listed. A removal of the engine's
        that failed (the wait's ``Error``) is asked once more. Failures are logged."""
        def delete() -> tuple[int, Any]:
            return engine.call("DELETE", f"/containers/{container}", query={"force": "1"})

        try:
            status, reply = delete()
            if status == 409:
                status, reply = engine.call(
                    "POST", f"/containers/{container}/wait", query={"condition": "removed"},
                    timeout=REMOVAL_WAIT_S)
                if status == 200 and isinstance(reply, dict) and reply.get("Error"):
                    status, reply = delete()
            if status not in (200, 204, 404):
                log.error("cannot remove the sandbox container %s: %s", container,
                          message(reply))
        except SandboxError as exc:
            log.error("cannot remove the sandbox container %s: %s", container, exc)

    def close(self) -> None:
        """Remove the container and close the stream (idempotent)."""
        stream, self._stream = self._stream, None
        container, self._container = self._container, None
        io = self._io
        self._close_link()
        if stream is not None:
            if stream.link is not None:
                stream.link.close()
            for sock in {stream.sock, stream.attach}:
                try:
                    sock.shutdown(socket.SHUT_WR)  # stdin closes: the supervisor exits
                except OSError:
                    pass
        try:
            if container is not None and self._engine is not None:
                self._remove(self._engine, container)
        finally:  # (a signal's exception during the removal's wait too)
            if isinstance(io, StreamShellIO):
                io.close()
            if stream is not None:
                stream.sock.close()
                stream.attach.close()
            self._forget_run()
