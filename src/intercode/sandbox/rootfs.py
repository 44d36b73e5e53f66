"""The sandbox's root file system: a pinned, minimal Debian, built once and cached.

A *profile* names a package list (``base``: the Bash, Python and SQL tools; ``ctf``: those
and the CTF tools; a benchmark may add packages, see
:attr:`intercode.benchmarks.Benchmark.sandbox_packages`). ``mmdebstrap`` builds the root
from it (``--variant=minbase``, Debian :data:`SUITE`) into the user cache
(``INTERCODE_CACHE``/rootfs), once: one directory per *identity*, the hash of the package
list asked for and of every installed package's version as the built root's dpkg status
records it, with a ``manifest.json`` next to the root. A root is never rebuilt behind the
user's back: it stays until ``intercode image build --rebuild``; so runs on one machine see
the same tools, and two machines with the same identity see the same packages.

Which root a sandbox mounts (:func:`default_root`): ``INTERCODE_ROOTFS`` unset or
``pinned``: the profile's pinned root (built on first use); ``host`` or ``/``: the host's
``/usr`` and ``/etc``; any other value: that directory (prepared by hand).

Concurrent runs build once (a lock file); a build goes to a temporary directory renamed
into place, so a crashed build leaves nothing that looks finished. Failures are one
:class:`~intercode.errors.SandboxUnavailableError` line: ``mmdebstrap`` missing (how to
install it), the Debian mirror unreachable, an unknown package.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intercode.errors import ConfigError, SandboxUnavailableError

__all__ = ["INSTALL_HINT", "PROFILES", "RootFs", "build", "built", "cache_root", "default_root",
           "describe", "find", "make_dirs", "packages", "root_label", "same_root"]

FORMAT = 2  # 2: the C.UTF-8 locale in an archive (see LOCALE_HOOK)
SUITE = "bookworm"
VARIANT = "minbase"
# scripts/debian-packages.txt without what only the host needs (bubblewrap, the venv)
BASE_PACKAGES = (
    "python3", "bash", "bash-static", "coreutils", "findutils", "procps", "psmisc", "bsdmainutils",
    "imagemagick", "dnsutils", "git", "tree", "net-tools", "iputils-ping", "curl", "cpio",
    "jq", "md5deep", "gzip", "tar", "mawk", "sed", "grep", "util-linux", "netbase",
)
# scripts/debian-ctf-packages.txt without slirp4netns (the host runs it, not the sandbox)
CTF_PACKAGES = (
    "python3-pycryptodome", "python3-pip", "sleuthkit", "netcat-openbsd", "unzip", "gdb",
    "poppler-utils", "wget", "gcc", "binutils", "libimage-exiftool-perl", "binwalk",
    "tshark", "default-jdk-headless", "xxd", "file", "bzip2", "xz-utils", "steghide",
    "foremost", "openssl", "python3-pil", "tesseract-ocr", "python3-cryptography",
)
PROFILES: dict[str, tuple[str, ...]] = {"base": BASE_PACKAGES,
                                        "ctf": BASE_PACKAGES + CTF_PACKAGES}
# the machine's roots (built as root); other users find them there too
SYSTEM_CACHE = Path("/var/cache/intercode/rootfs")
# what only the host needs: the sandbox itself, the venv, the root's builder, the network
HOST_ONLY = frozenset({"bubblewrap", "python3-venv", "mmdebstrap", "slirp4netns"})
# a Debian package name (the rule benchmarks.spec checks a benchmark's packages with)
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,99}$")
INSTALL_HINT = "install it with: sudo apt-get install mmdebstrap (Debian 11+, Ubuntu 22.04+)"


def packages(profile: str = "base", extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The sorted, de-duplicated package list of ``profile`` plus ``extra``
    (:class:`ConfigError` for an unknown profile or a malformed package name)."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown root file system profile {profile!r}; known: "
                          f"{', '.join(PROFILES)}")
    names = set(PROFILES[profile])
    for name in extra:
        if not isinstance(name, str) or not _PACKAGE.match(name):
            raise ConfigError(f"not a Debian package name: {name!r}")
        names.add(name)
    return tuple(sorted(names))


def request_key(names: Iterable[str]) -> str:
    """What identifies a request (before the build): format, suite, variant, packages."""
    text = json.dumps({"format": FORMAT, "suite": SUITE, "variant": VARIANT,
                       "packages": sorted(names)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def installed_versions(root: Path) -> dict[str, str]:
    """``package:arch -> version`` of every installed package of ``root`` (dpkg status)."""
    text = (root / "var" / "lib" / "dpkg" / "status").read_text(errors="replace")
    found = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith((" ", "\t")):
                fields[key] = value.strip()
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            found[f"{fields['Package']}:{fields.get('Architecture', '')}"] = \
                fields.get("Version", "")
    return found


def identity(names: Iterable[str], versions: dict[str, str]) -> str:
    """The identity of a built root: its request and every installed version."""
    text = json.dumps({"request": request_key(names), "versions": sorted(versions.items())},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RootFs:
    """A built root file system: ``path`` (the root), its identity and manifest."""

    path: Path
    identity: str
    manifest: dict[str, Any]

    @property
    def profile(self) -> str:
        return str(self.manifest.get("profile", ""))

    @property
    def short(self) -> str:
        """The first 12 characters of the identity (image tags, listings)."""
        return self.identity[:12]


def cache_root() -> Path:
    """Where built roots live: ``INTERCODE_ROOTFS_CACHE``, else as root
    ``/var/cache/intercode/rootfs``, else ``~/.cache/intercode/rootfs`` (``XDG_CACHE_HOME``).

    Not under ``INTERCODE_CACHE``: tests and CI point that at fresh temporary directories,
    which would rebuild a root of 400 MB each time; and as root the sandbox runs as
    ``nobody``, who must be able to reach the root (``/root`` and ``mktemp -d`` are 0700).
    """
    explicit = os.environ.get("INTERCODE_ROOTFS_CACHE")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return SYSTEM_CACHE
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "intercode" / "rootfs"


def make_dirs(path: Path) -> None:
    """``mkdir -p`` with mode 0755 (the sandbox's user must be able to reach the root)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        os.chmod(folder, 0o755)


def unreachable_by(root: Path, uid: int) -> Path | None:
    """The first directory on the way to ``root`` that the sandbox's host user ``uid``
    (``nobody`` when the host runs as root) cannot enter, or None."""
    path = Path("/")
    for part in root.resolve().parts[1:]:
        path = path / part
        try:
            st = path.stat()
        except OSError:
            return path
        if st.st_uid == uid:
            continue
        if not st.st_mode & 0o001:
            return path
    return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _load(folder: Path) -> RootFs | None:
    manifest = _read_json(folder / "manifest.json")
    root = folder / "root"
    if manifest is None or not (root / "usr").is_dir() or not (root / "etc").is_dir():
        return None
    ident = manifest.get("identity")
    if not isinstance(ident, str) or ident != folder.name:
        return None
    return RootFs(root, ident, manifest)


def search_path() -> list[Path]:
    """Where built roots are looked for: :func:`cache_root`, then (for a user other than
    root, unless ``INTERCODE_ROOTFS_CACHE`` is set) the machine's :data:`SYSTEM_CACHE`,
    so that a root built once with ``sudo intercode image build`` serves every user."""
    found = [cache_root()]
    if not os.environ.get("INTERCODE_ROOTFS_CACHE") and os.geteuid() != 0:
        found.append(SYSTEM_CACHE)
    return found


def find(profile: str = "base", extra: Iterable[str] = ()) -> RootFs | None:
    """The built root of this request, or None."""
    names = packages(profile, extra)
    for base in search_path():
        pointer = _read_json(base / "requests" / f"{request_key(names)}.json")
        if pointer is None or not isinstance(pointer.get("identity"), str):
            continue
        ident = pointer["identity"]
        if not re.fullmatch(r"[0-9a-f]{64}", ident):
            continue
        loaded = _load(base / ident)
        if loaded is not None:
            return loaded
    return None


def built() -> list[RootFs]:
    """Every built root in the caches of :func:`search_path`."""
    found = []
    for base in search_path():
        if base.is_dir():
            for folder in sorted(base.iterdir()):
                if re.fullmatch(r"[0-9a-f]{64}", folder.name):
                    loaded = _load(folder)
                    if loaded is not None:
                        found.append(loaded)
    return found


@contextmanager
def _locked(base: Path) -> Iterator[None]:
    make_dirs(base)
    fd = os.open(base / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# The sandboxes run with LANG=C.UTF-8: with the locale in /usr/lib/locale/locale-archive,
# every program that sets its locale maps one file instead of opening twelve (a bash
# starts in 0.65 ms of CPU instead of 0.78, an `ls` in 0.89 instead of 1.01). The locale's
# data is the same (Debian's compiled C.utf8, added by the root's own localedef).
LOCALE_HOOK = 'chroot "$1" localedef --add-to-archive /usr/lib/locale/C.utf8'


def mmdebstrap_command(names: Iterable[str], target: str, mode: str) -> list[str]:
    """The ``mmdebstrap`` command line building ``names`` into ``target``."""
    mirror = os.environ.get("INTERCODE_DEBIAN_MIRROR")
    cmd = ["mmdebstrap", f"--variant={VARIANT}", f"--mode={mode}",
           f"--include={','.join(names)}", f"--customize-hook={LOCALE_HOOK}", SUITE, target]
    if mirror:
        cmd.append(mirror)
    return cmd


def explain_failure(output: str) -> str:
    """One line saying why ``mmdebstrap`` failed, from its output."""
    unknown = re.findall(r"Unable to locate package (\S+)", output)
    unknown += re.findall(r"Package '?([^' ]+)'? has no installation candidate", output)
    if unknown:
        return f"unknown Debian package(s) in {SUITE}: {', '.join(sorted(set(unknown)))}"
    if re.search(r"Temporary failure resolving|Could not resolve|Network is unreachable|"
                 r"Failed to fetch|Could not connect|Connection timed out", output):
        return ("cannot reach the Debian mirror (no network?); building the sandbox root "
                "needs it once (set INTERCODE_DEBIAN_MIRROR to a reachable mirror, or "
                "INTERCODE_ROOTFS=host to use the host's tools)")
    if re.search(r"newuidmap|subuid|unshare|Operation not permitted", output):
        return ("mmdebstrap cannot build as this user (unprivileged builds need the "
                "'uidmap' package and a range in /etc/subuid and /etc/subgid); build as root "
                "once: sudo intercode image build")
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("E:", "mmdebstrap: error"))]
    return (errors or lines or ["no output"])[-1][:300]


def _mode() -> str:
    return "root" if os.geteuid() == 0 else "unshare"


def _say(message: str) -> None:
    print(f"intercode: {message}", file=sys.stderr, flush=True)


def _run_build(names: tuple[str, ...], work: Path, log: Path) -> None:
    """Build ``names`` into ``work/root`` (``SandboxUnavailableError`` on failure, its
    output kept in ``log``)."""
    if shutil.which("mmdebstrap") is None:
        raise SandboxUnavailableError(f"building the sandbox root file system needs "
                                      f"mmdebstrap, which is not installed; {INSTALL_HINT} "
                                      "(or set INTERCODE_ROOTFS=host to use the host's tools)")
    root = work / "root"
    mode = _mode()
    with open(log, "w+b") as out:
        if mode == "root":
            proc = subprocess.run(mmdebstrap_command(names, str(root), mode),
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                  check=False)
            code = proc.returncode
        else:
            # unprivileged: a tar on stdout, unpacked as this user (device nodes left out:
            # the sandbox mounts its own /dev)
            root.mkdir()
            builder = subprocess.Popen(mmdebstrap_command(names, "-", mode),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=out)
            unpack = subprocess.run(["tar", "-x", "-C", str(root), "--exclude=./dev/*",
                                     "--no-same-owner"], stdin=builder.stdout, stdout=out,
                                    stderr=out, check=False)
            assert builder.stdout is not None
            builder.stdout.close()
            code = builder.wait() or unpack.returncode
        out.seek(0)
        output = out.read().decode(errors="replace")
    if code != 0:
        raise SandboxUnavailableError(f"building the sandbox root file system failed: "
                                      f"{explain_failure(output)} (log: {log})")


def _remove_build(path: Path) -> None:
    """``rm -rf`` of a build's folder that never goes into a mount: a build as root that
    was killed leaves mmdebstrap's mounts in it (``/proc``, ``/sys``, ``/dev/pts``, and
    the host's ``/dev/shm`` bound there), and removing through them emptied the host's
    ``/dev/shm``. The mounts found (``/proc/self/mountinfo``, and any folder on another
    device) are unmounted where this process may; a folder that still holds one is left
    as it is, with a one-line warning. Anything but a folder (a link put in its place)
    is removed itself, never followed."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return
    except OSError:
        return
    mounts = _mounts_in(path)
    for mount in sorted(mounts, reverse=True):  # (the deepest first)
        subprocess.run(["umount", "--lazy", mount], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    left = _mounts_in(path) if mounts else []
    if left:
        _say(f"left {path} as it is: a crashed build's mount is still in it ({left[0]}); "
             "unmount it, then remove the folder")
        return
    shutil.rmtree(path, ignore_errors=True)


def _mounts_in(path: Path) -> list[str]:
    """The mount points at or below the folder ``path`` (not a link): those the mount
    table lists, and folders on another device than ``path`` (found without entering
    them)."""
    try:
        dev = os.lstat(path).st_dev
    except OSError:
        return []
    top = os.path.join(os.path.realpath(path.parent), path.name)  # (the mount table's)
    found = set()
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as info:
            for line in info:
                fields = line.split()
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)),
                               fields[4]) if len(fields) > 4 else ""
                if point == top or point.startswith(top + "/"):
                    found.add(point)
    except OSError:
        pass
    for here, dirs, _files in os.walk(top):
        inside = []
        for name in dirs:
            full = os.path.join(here, name)
            try:
                other = os.lstat(full).st_dev != dev
            except OSError:
                continue
            if other or full in found:
                found.add(full)
            else:
                inside.append(name)
        dirs[:] = inside
    return sorted(found)


def build(profile: str = "base", extra: Iterable[str] = (), *, rebuild: bool = False) -> RootFs:
    """The built root of this request, building it first if it is missing (or if
    ``rebuild``). Concurrent callers build it once."""
    names = packages(profile, extra)
    if not rebuild:
        found = find(profile, extra)
        if found is not None:
            return found
    base = cache_root()
    with _locked(base):
        if not rebuild:
            found = find(profile, extra)  # another process built it meanwhile
            if found is not None:
                return found
        for stale in base.glob("building-*"):  # a build that crashed (we hold the lock)
            _remove_build(stale)
        work = Path(tempfile.mkdtemp(prefix="building-", dir=base))
        os.chmod(work, 0o755)
        _say(f"building the sandbox's root file system ({profile}, {len(names)} Debian "
             f"packages, {SUITE}) with mmdebstrap; once, about 1-2 minutes...")
        started = time.monotonic()
        log = base / "last-build.log"
        try:
            _run_build(names, work, log)
            versions = installed_versions(work / "root")
            ident = identity(names, versions)
            manifest = {"format": FORMAT, "identity": ident, "profile": profile,
                        "suite": SUITE, "variant": VARIANT, "requested": list(names),
                        "extra": sorted(set(extra)), "versions": versions,
                        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "build_seconds": round(time.monotonic() - started, 1),
                        "mode": _mode()}
            (work / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
            final = base / ident
            if final.exists() and _load(final) is None:  # damaged: replaced
                trash = Path(tempfile.mkdtemp(prefix="building-damaged-", dir=base))
                os.rename(final, trash / "old")
                _remove_build(trash)
            if final.exists():  # the same packages at the same versions: keep the old one
                _remove_build(work)
            else:
                os.rename(work, final)
        except BaseException:
            _remove_build(work)
            raise
        pointer = base / "requests" / f"{request_key(names)}.json"
        pointer.parent.mkdir(exist_ok=True)
        tmp = pointer.with_suffix(".tmp")
        tmp.write_text(json.dumps({"identity": ident, "profile": profile}))
        os.replace(tmp, pointer)
        _say(f"root file system {ident[:12]} ready in {time.monotonic() - started:.0f} s: "
             f"{final / 'root'}")
    loaded = _load(final)
    if loaded is None:
        raise SandboxUnavailableError(f"the built root file system {final} is incomplete")
    return loaded


def default_root(profile: str = "base", extra: Iterable[str] = ()) -> Path:
    """The root file system a sandbox of ``profile`` mounts (see the module docstring):
    ``INTERCODE_ROOTFS`` (``pinned``, ``host``, a directory), by default the pinned root,
    built on first use."""
    choice = os.environ.get("INTERCODE_ROOTFS", "").strip()
    if choice in ("host", "/"):
        return Path("/")
    if choice and choice != "pinned":
        return Path(choice)
    root = build(profile, extra).path
    if os.geteuid() == 0:
        blocked = unreachable_by(root, 65534)
        if blocked is not None:
            raise SandboxUnavailableError(
                f"the sandbox root {root} is not reachable by the sandbox's user nobody: "
                f"{blocked} is not searchable by others (set INTERCODE_ROOTFS_CACHE to a "
                "directory whose parents are, e.g. /var/cache/intercode/rootfs)")
    return root


def same_root(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether two recorded roots are the same: a pinned root by its identity (its path
    differs from machine to machine), the others by kind and path."""
    if now.get("kind") == "pinned":
        return before.get("kind") == "pinned" and before.get("identity") == now.get("identity")
    if now.get("kind") == "image":  # made from the same pinned root, else the same image
        if before.get("kind") != "image":
            return False
        if now.get("identity") or before.get("identity"):
            return before.get("identity") == now.get("identity")
        return before.get("id") == now.get("id")
    return before.get("kind") == now.get("kind") and before.get("path") == now.get("path")


def root_label(root: Any) -> str:
    """A recorded root in words, for messages (``none`` for a run without one, ``unknown``
    for what is not a record)."""
    if root is None:
        return "none"
    if not isinstance(root, dict):
        return "unknown"
    if root.get("kind") == "pinned":
        return f"the pinned root {str(root.get('identity'))[:12]}"
    if root.get("kind") == "image":
        made = f", the pinned root {str(root['identity'])[:12]}" if root.get("identity") else ""
        return f"the image {root.get('name')} ({str(root.get('id'))[:19]}{made})"
    return "the host's root" if root.get("kind") == "host" else f"the root {root.get('path')}"


def describe(root: Path) -> dict[str, Any]:
    """What ``config.json`` records of the root a run mounts: the kind (``pinned``,
    ``host``, ``directory``), its path and, for a pinned root, its identity and profile."""
    folder = root.parent
    if root == Path("/"):
        return {"kind": "host", "path": "/"}
    loaded = _load(folder) if root.name == "root" else None
    if loaded is not None and loaded.path == root:
        return {"kind": "pinned", "path": str(root), "identity": loaded.identity,
                "profile": loaded.profile, "extra": loaded.manifest.get("extra", []),
                "suite": loaded.manifest.get("suite")}
    return {"kind": "directory", "path": str(root)}
