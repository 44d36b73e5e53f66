"""``intercode doctor``: can this machine run the sandboxes, and what is missing?"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from intercode.errors import IntercodeError

if TYPE_CHECKING:
    from intercode.sandbox.layout import Layout

__all__ = ["run_doctor"]

# command inside the sandbox -> Debian/Ubuntu package that provides it
TOOLS: tuple[tuple[str, str], ...] = (
    ("bash", "bash"), ("ls", "coreutils"), ("find", "findutils"), ("xargs", "findutils"),
    ("python3", "python3"), ("pstree", "psmisc"), ("killall", "psmisc"),
    ("column", "bsdmainutils"), ("cal", "bsdmainutils"), ("convert", "imagemagick"),
    ("dig", "dnsutils"), ("git", "git"), ("tree", "tree"), ("ifconfig", "net-tools"),
    ("netstat", "net-tools"), ("ping", "iputils-ping"), ("curl", "curl"), ("cpio", "cpio"),
    ("jq", "jq"), ("md5deep", "md5deep"), ("gzip", "gzip"), ("tar", "tar"), ("awk", "mawk"),
    ("sed", "sed"), ("grep", "grep"), ("od", "coreutils"), ("rev", "util-linux"),
)
PACKAGES = sorted({pkg for _, pkg in TOOLS})

# what the CTF tasks need beyond TOOLS: the upstream CTF image's extras and the tools the
# tasks' write-ups use (label, shell test inside the sandbox, Debian/Ubuntu package)
CTF_COMMANDS: tuple[tuple[str, str], ...] = (
    ("gcc", "gcc"), ("gdb", "gdb"), ("nc", "netcat-openbsd"), ("unzip", "unzip"),
    ("wget", "wget"), ("pdftotext", "poppler-utils"), ("fls", "sleuthkit"),
    ("strings", "binutils"), ("objdump", "binutils"), ("exiftool", "libimage-exiftool-perl"),
    ("binwalk", "binwalk"), ("tshark", "tshark"), ("java", "default-jdk-headless"),
    ("javac", "default-jdk-headless"), ("xxd", "xxd"), ("file", "file"), ("bzip2", "bzip2"),
    ("xz", "xz-utils"), ("steghide", "steghide"), ("foremost", "foremost"),
    ("openssl", "openssl"), ("tesseract", "tesseract-ocr"), ("pip3", "python3-pip"),
)
CTF_TOOLS: tuple[tuple[str, str, str], ...] = (
    *((cmd, f"command -v {cmd}", pkg) for cmd, pkg in CTF_COMMANDS),
    ("python3 pycryptodome", "python3 -c 'import Cryptodome' 2>/dev/null "
     "|| python3 -c 'import Crypto.Cipher' 2>/dev/null", "python3-pycryptodome"),
    ("python3 PIL", "python3 -c 'import PIL' 2>/dev/null", "python3-pil"),
    ("python3 cryptography", "python3 -c 'import cryptography' 2>/dev/null",
     "python3-cryptography"),
)
CTF_PACKAGES = sorted({pkg for _, _, pkg in CTF_TOOLS})
# on the host, for the CTF environment's isolated network (--network)
NETWORK_PACKAGE = "slirp4netns"


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    warning: bool = False


def check_host() -> list[Check]:
    """Python, bubblewrap, user namespaces."""
    checks = [Check("python", sys.version_info >= (3, 11), sys.version.split()[0]),
              Check("platform", sys.platform == "linux", platform.platform())]
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        checks.append(Check("bubblewrap", False, "not installed: sudo apt-get install bubblewrap"))
        return checks
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout
    checks.append(Check("bubblewrap", True, f"{bwrap} ({version.strip()})"))
    for path in ("/proc/sys/kernel/unprivileged_userns_clone",
                 "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                 "/proc/sys/user/max_user_namespaces"):
        if os.path.exists(path):
            with open(path) as fh:
                checks.append(Check(os.path.basename(path), True, fh.read().strip()))
    return checks


def check_rootfs() -> list[Check]:
    """Which root file system the sandboxes mount, and whether it can be built."""
    from intercode.sandbox import rootfs

    choice = os.environ.get("INTERCODE_ROOTFS", "").strip()
    if choice in ("host", "/"):
        return [Check("root file system", True, "the host's (INTERCODE_ROOTFS=host): results "
                      "depend on what this machine has installed")]
    if choice and choice != "pinned":
        return [Check("root file system", os.path.isdir(os.path.join(choice, "usr")),
                      f"{choice} (INTERCODE_ROOTFS)")]
    checks = []
    for profile in rootfs.PROFILES:
        found = rootfs.find(profile)
        if found is not None:
            checks.append(Check(f"root file system {profile}", True,
                                f"pinned {found.short}, {found.path}"))
        else:
            checks.append(Check(f"root file system {profile}", True,
                                "not built yet: built on first use (base ~35 s, ctf ~2 min; "
                                f"or now: intercode image build --profile {profile})",
                                warning=True))
    if shutil.which("mmdebstrap") is None and not all(c.ok and not c.warning for c in checks):
        checks.append(Check("mmdebstrap", False, f"not installed; {rootfs.INSTALL_HINT} "
                            "(or use INTERCODE_ROOTFS=host)"))
    return checks


def _ctf_layout() -> Layout | None:
    """The CTF sandbox's layout, if its root is ready (not built just for the doctor)."""
    from intercode.sandbox import rootfs
    from intercode.sandbox.layout import Layout

    choice = os.environ.get("INTERCODE_ROOTFS", "").strip()
    if choice and choice != "pinned":
        return Layout()
    found = rootfs.find("ctf")
    return None if found is None else Layout(rootfs=found.path)


def check_sandbox() -> tuple[list[Check], list[str], list[str]]:
    """Start a sandbox, look for every tool.

    Returns the checks, the missing packages, and the missing packages that only the
    CTF environment needs (reported, but not a failure: the other environments run).
    The default root is built if missing (the first run needs it anyway); the CTF tools
    are looked for in the CTF root only if it is built.
    """
    from intercode.sandbox import create_sandbox
    from intercode.sandbox.filetree import FileTree

    ctf_found: set[int] | None = None
    try:
        with create_sandbox("bwrap") as box:
            box.load(FileTree.of([]))
            probe = box.run("id -un; python3 -c 'import sys; print(sys.version.split()[0])'")
            script = "; ".join(f"command -v {cmd} >/dev/null && echo {cmd}" for cmd, _ in TOOLS)
            found = set(box.run(script).output.split())
        ctf_layout = _ctf_layout()
        if ctf_layout is not None:
            with create_sandbox("bwrap", layout=ctf_layout) as box:
                box.load(FileTree.of([]))
                ctf_script = "; ".join(f"{test} >/dev/null && echo {i}"
                                       for i, (_, test, _) in enumerate(CTF_TOOLS))
                ctf_found = {int(w) for w in box.run(ctf_script).output.split()
                             if w.isdigit()}
    except IntercodeError as exc:
        hint = ("if user namespaces are restricted (Ubuntu 24.04: "
                "kernel.apparmor_restrict_unprivileged_userns=1), allow them for bwrap "
                "(under a profile that denies capabilities to bwrap's children, as "
                "Ubuntu's bwrap-userns-restrict, sandboxes run without their own share "
                "of pseudo-terminals) or run "
                "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`")
        return [Check("sandbox", False, f"{exc}; {hint}")], [], []
    lines = probe.output.split()
    checks = [Check("sandbox", True, f"starts; runs as {lines[0] if lines else '?'}, "
                                     f"python3 {lines[1] if len(lines) > 1 else '?'}")]
    missing = []
    for cmd, pkg in TOOLS:
        if cmd not in found:
            missing.append(pkg)
            checks.append(Check(f"tool {cmd}", False, f"missing (package {pkg})"))
    if not missing:
        checks.append(Check("tools", True, f"all {len(TOOLS)} tools of the upstream image"))
    ctf_missing: list[str] = []
    if ctf_found is None:
        return checks, sorted(set(missing)), ctf_missing
    for i, (label, _, pkg) in enumerate(CTF_TOOLS):
        if i not in ctf_found:
            ctf_missing.append(pkg)
            checks.append(Check(f"ctf tool {label}", True, f"missing (package {pkg}); only "
                                "the CTF environment needs it", warning=True))
    if not ctf_missing:
        checks.append(Check("ctf tools", True, f"all {len(CTF_TOOLS)} tools the CTF tasks use"))
    return checks, sorted(set(missing)), sorted(set(ctf_missing))


def check_network() -> list[Check]:
    """The isolated network of ``--network``: slirp4netns attaches ``tap0`` to a sandbox."""
    from intercode.sandbox import create_sandbox
    from intercode.sandbox.bwrap.netns import find_slirp4netns
    from intercode.sandbox.filetree import FileTree
    from intercode.sandbox.layout import Layout

    try:
        path = find_slirp4netns()
        with create_sandbox("bwrap", layout=Layout(network=True)) as box:
            box.load(FileTree.of([]))
            route = box.run("grep -c '^tap0' /proc/net/route").output.strip()
    except IntercodeError as exc:
        return [Check("network (--network)", True, f"{exc}; only --network needs it",
                      warning=True)]
    if route in ("", "0"):
        return [Check("network (--network)", True, "slirp4netns ran but tap0 has no route; "
                      "only --network needs it", warning=True)]
    return [Check("network (--network)", True, f"isolated, via {path}")]


def check_data() -> list[Check]:
    """Where data comes from."""
    from intercode.fsutil import cache_dir

    mirror = os.environ.get("INTERCODE_DATA_MIRROR")
    if mirror:
        return [Check("data", os.path.isdir(mirror), f"mirror {mirror}")]
    return [Check("data", True, f"downloaded on first use into {cache_dir()}")]


def check_docker() -> tuple[list[Check], bool]:
    """Whether the docker backend works here: an engine, an image, a sandbox that starts.

    Never a failure (bubblewrap is the default): a warning says what is missing."""
    from intercode.sandbox import create_sandbox
    from intercode.sandbox.docker.engine import DockerEngine
    from intercode.sandbox.filetree import FileTree

    try:
        version = DockerEngine().ping()
    except IntercodeError as exc:
        return [Check("docker sandbox", True, f"not usable: {exc}", warning=True)], False
    try:
        with create_sandbox("docker") as box:
            box.load(FileTree.of([]))
            who = box.run("id -un").output.strip()
            image = getattr(box, "image", "?")
    except IntercodeError as exc:
        return [Check("docker sandbox", True, f"engine API {version}, but: {exc}",
                      warning=True)], False
    return [Check("docker sandbox", True, f"starts (engine API {version}, image {image}); "
                  f"runs as {who or '?'}")], True


def run_doctor() -> int:
    """Print the report; 0 if everything needed is there (for one sandbox backend at
    least: bubblewrap, or else Docker)."""
    checks = check_host() + check_rootfs()
    missing: list[str] = []
    ctf_missing: list[str] = []
    bwrap_ok = all(c.ok for c in checks)
    if bwrap_ok:
        sandbox_checks, missing, ctf_missing = check_sandbox()
        checks += sandbox_checks
        bwrap_ok = all(c.ok for c in sandbox_checks)
        checks += check_network()
    docker_checks, docker_ok = check_docker()
    base_ok = all(c.ok for c in checks[:2])  # python, platform
    if not bwrap_ok and docker_ok and base_ok:  # bubblewrap's failures do not stop a run
        checks = [c if c.ok else Check(c.name, True, c.detail + " (docker works)", True)
                  for c in checks]
    checks += docker_checks
    checks += check_data()
    for c in checks:
        mark = "NO " if not c.ok else "-- " if c.warning else "ok "
        print(f"{mark} {c.name:34s} {c.detail}")
    works = [name for name, ok in (("bwrap", bwrap_ok), ("docker", docker_ok)) if ok]
    print(f"\nsandbox backends that work here: {', '.join(works) or 'none'}"
          + (" (--sandbox docker)" if works == ["docker"] else ""))
    host = os.environ.get("INTERCODE_ROOTFS", "").strip() in ("host", "/")
    if (missing or ctf_missing) and not host:
        print("\nthe root file system lacks tools: rebuild it (intercode image build "
              "--rebuild [--profile ctf]) or name another (--rootfs)")
        return 1 if missing else 0
    if missing:
        print(f"\ninstall the missing tools: sudo apt-get install -y {' '.join(missing)}")
    if ctf_missing:
        print("\nfor the CTF environment: sudo apt-get install -y --no-install-recommends "
              f"{' '.join(ctf_missing)}   (or: scripts/setup ctf)")
    return 0 if all(c.ok for c in checks) else 1
