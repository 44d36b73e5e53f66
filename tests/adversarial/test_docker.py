"""Attacks on the Docker backend's own surface: the engine, the stream, the container.

The agent runs as a non-root user with no capabilities in a container without
network, in bubblewrap's root (a size-bounded tmpfs with the image's ``/usr`` and ``/etc``
read-only) that pid 1 built with a few capabilities and then dropped them all for good
(``inbox/newroot.py``); pid 1 (the supervisor and the relay of its stream) is out of its
reach; a host process killed with SIGKILL leaves no container behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from backends import need

from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.limits import Limits

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9),
                    Entry("work/a.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"alpha\n")])


@pytest.fixture(scope="module")
def box():
    need("docker")
    sb = create_sandbox("docker", limits=Limits(timeout=5))
    sb.start()
    sb.load(TREE)
    yield sb
    sb.close()


def engine():
    from intercode.sandbox.docker.engine import DockerEngine

    return DockerEngine()


def test_engine_socket_is_out_of_reach(box):
    r = box.run("for p in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock;"
                " do [ -e $p ] && echo found $p; done; python3 -c \"import socket; "
                "s=socket.socket(socket.AF_UNIX); s.connect('/var/run/docker.sock')\" "
                "2>&1 | tail -1")
    assert "found" not in r.output
    assert "Error" in r.output  # FileNotFoundError: nothing to connect to


def test_no_capabilities_no_new_privileges_no_root(box):
    r = box.run("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "
                "/proc/self/status; id -u")
    fields = dict(line.split(":\t") for line in r.output.splitlines()[:-1])
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"
    assert r.output.splitlines()[-1] == "1000"


def test_intercode_seccomp_filter_applies_inside(box):
    r = box.run("python3 -c \"import os\ntry:\n os.memfd_create('x'); print('made')\n"
                "except OSError as e: print('denied', e.errno)\"")
    assert r.output.startswith("denied"), r.output


# Runs inside: each privileged call the agent might try, and its outcome.
PRIVILEGED_CALLS = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"pivot_root": 155, "unshare": 272, "setns": 308, "clone": 56,
                 "clone3": 435, "fsopen": 430, "open_tree": 428},
      "aarch64": {"pivot_root": 41, "unshare": 97, "setns": 268, "clone": 220,
                  "clone3": 435, "fsopen": 430, "open_tree": 428}}[os.uname().machine]
def res(name, r):
    print(name, "ok" if r == 0 or (name.startswith("clone") and r > 0) else
          errno.errorcode.get(ctypes.get_errno(), "?"))
    if name.startswith("clone") and r == 0:
        os._exit(0)
def sc(name, *args):
    return libc.syscall(ctypes.c_long(NR[name]), *args)
res("mount_tmpfs", libc.mount(b"none", b"/tmp", b"tmpfs", ctypes.c_ulong(0), None))
res("remount_root", libc.mount(None, b"/", None, ctypes.c_ulong(32 | 4096), None))
res("remount_root_size", libc.mount(None, b"/", None, ctypes.c_ulong(32), b"size=8g"))
res("remount_usr_rw", libc.mount(None, b"/usr", None, ctypes.c_ulong(32 | 4096), None))
res("umount_proc_sys", libc.umount2(b"/proc/sys", 2))
res("umount_keys", libc.umount2(b"/proc/keys", 2))
res("umount_root", libc.umount2(b"/", 2))
res("chroot", libc.chroot(b"/tmp"))
res("pivot_root", sc("pivot_root", b"/tmp", b"/tmp"))
for flag, name in ((0x10000000, "user"), (0x20000, "mount"), (0x40000000, "net"),
                   (0x20000000, "pid")):
    res("unshare_" + name, sc("unshare", ctypes.c_long(flag)))
    res("clone_" + name, sc("clone", ctypes.c_long(flag | 17), None, None, None, None))
fd = os.open("/proc/1/ns/mnt", os.O_RDONLY) if os.access("/proc/1/ns/mnt", os.R_OK) else -1
res("setns_pid1", sc("setns", fd, 0) if fd >= 0 else -1)
res("clone3", sc("clone3", None, 0))
res("fsopen", sc("fsopen", b"tmpfs", 0))
res("open_tree", sc("open_tree", -100, b"/", 1))
res("setuid_0", libc.setuid(0))
"""


def test_the_image_is_read_only_and_the_root_is_the_agents(box):
    r = box.run("for p in /usr/x /etc/x /bin/x /lib/x /dev/x /proc/x; do touch $p 2>/dev/null"
                " && echo wrote $p; done; touch /x && mkdir /y && echo root-ok; "
                "stat -c '%u %a' /; rm -r /x /y; echo done")
    assert r.output == "root-ok\n1000 755\ndone\n", r.output


def test_no_process_has_a_capability_not_even_pid_1(box):
    """pid 1 started as root with CAP_SYS_ADMIN and others to build the root: every set of
    every process, its own included, is empty now, with uid 1000 everywhere."""
    box.run("sleep 30 &")
    r = box.run("for f in /proc/[0-9]*/status; do grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|Uid|"
                "Gid|NoNewPrivs):' $f | tr -s '\t' ' ' | tr '\n' ';'; echo; done")
    lines = [ln for ln in r.output.splitlines() if ln]
    assert len(lines) >= 3, r.output  # pid 1, the shell, sleep, ...
    for line in lines:
        fields = dict(f.strip().split(": ", 1) for f in line.split(";") if f.strip())
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(fields[cap], 16) == 0, line
        assert fields["Uid"].split() == ["1000"] * 4 and fields["Gid"].split() == ["1000"] * 4
        assert fields["NoNewPrivs"] == "1", line
    box.run("kill %1 2>/dev/null; wait")


def test_no_mount_namespace_chroot_or_pivot_root(box):
    """Docker's profile allows these calls for a container started with CAP_SYS_ADMIN:
    without a capability the kernel refuses them, and intercode's filter denies them (a
    user namespace would otherwise give the agent capabilities of its own)."""
    r = box.run(f"python3 -c '{PRIVILEGED_CALLS}'", timeout=30)
    results = dict(line.split() for line in r.output.splitlines())
    assert len(results) == 22, r.output
    allowed = {k: v for k, v in results.items() if v not in ("EPERM", "ENOSYS", "EACCES")}
    assert allowed == {}, r.output
    assert results["clone3"] == "ENOSYS" and results["unshare_user"] == "EPERM"
    assert box.run("echo alive").output == "alive\n"


def test_the_old_root_is_out_of_reach(box):
    """The image's root (and Docker's own mounts) are gone from the agent's view: only
    bubblewrap's mounts, nothing above ``/``, no ``.dockerenv``, no descriptor outside."""
    r = box.run("cd /..; pwd; ls -a / | tr '\n' ' '; echo; "
                "awk '{print $5}' /proc/self/mountinfo | sort | tr '\n' ' '; echo; "
                "readlink /proc/self/root /proc/self/cwd; ls -l /proc/self/fd/ 2>/dev/null | "
                "grep -c intercode-root; ls /proc/1/root 2>&1 | head -1")
    lines = r.output.splitlines()
    assert lines[0] == "/"
    assert ".dockerenv" not in lines[1] and ".intercode-root" not in lines[1]
    points = lines[2].split()
    assert points[0] == "/" and "/sys" not in points and "/.intercode-root" not in points
    assert {p.split("/")[1] for p in points[1:]} <= {"usr", "etc", "proc", "dev", "bin", "lib",
                                                   "lib32", "lib64", "libx32", "sbin"}, points
    assert lines[3:5] == ["/", "/"] and lines[5] == "0"
    assert "Permission denied" in lines[6]


def test_docker_masked_proc_paths_hold_in_the_new_root(box):
    r = box.run("for f in /proc/interrupts /proc/keys /proc/timer_list; do "
                "[ -e $f ] && echo $f $(wc -c < $f); done; ls /proc/acpi | wc -l; "
                "(echo 1 > /proc/sys/kernel/ns_last_pid) 2>/dev/null && echo wrote-sys; "
                "grep -c ' /proc/sys ro,' /proc/self/mountinfo")
    lines = r.output.splitlines()
    assert all(ln.endswith(" 0") for ln in lines[:-2]) and len(lines) >= 3, r.output
    assert lines[-2] == "0" and lines[-1] == "1", r.output


def test_filling_the_root_is_the_agents_outcome():
    """Writing more than the storage limit into ``/`` itself fails with ENOSPC inside (the
    root is a bounded tmpfs, not the container's unbounded writable layer); the sandbox
    goes on, and a reset empties it."""
    need("docker")
    with create_sandbox("docker", limits=Limits(timeout=10, storage=16 << 20)) as sb:
        sb.load(TREE)
        r = sb.run("head -c 64M /dev/zero > /big; echo rc=$?; df -k / | tail -1")
        assert "No space left on device" in r.output and "rc=1" in r.output, r.output
        assert r.exit_code is not None
        total = int(r.output.splitlines()[-1].split()[1])
        assert total <= 16 * 1024, r.output
        sb.reset()
        assert sb.run("ls /big 2>&1; echo alive").output.endswith("alive\n")
        assert [c.path for c in sb.diff()] == []


def test_no_network_at_all(box):
    r = box.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "
                "python3 -c \"import socket; s=socket.socket(); s.settimeout(2); "
                "s.connect(('172.17.0.1', 2375))\" 2>&1 | tail -1")
    lines = r.output.splitlines()
    assert lines[0] == "lo" and len(lines) == 2, r.output
    assert "unreachable" in lines[1].lower() or "Error" in lines[1]


def test_pid_1_and_its_stream_are_out_of_reach(box):
    r = box.run("kill -9 1; kill -STOP 1; ls /proc/1/fd 2>&1 | head -1; "
                "cat /proc/1/environ >/dev/null 2>&1 || echo no-environ; echo end")
    assert "Permission denied" in r.output and "no-environ" in r.output
    assert box.run("echo alive").output == "alive\n"


def test_sandboxes_and_other_containers_are_invisible(box):
    marker = uuid.uuid4().hex[:12]
    with create_sandbox("docker") as other:
        other.load(TREE)
        other.run(f"(exec -a {marker} sleep 300) & disown")
        r = box.run(f"ps -eo args | grep -c {marker}; ls /proc | grep -c '^[0-9]'")
        assert r.output.split()[0] == "1"  # the grep itself
        assert int(r.output.split()[1]) < 20


def test_a_killed_host_process_leaves_no_container():
    need("docker")
    script = textwrap.dedent("""
        import sys, time
        from intercode.sandbox import create_sandbox
        box = create_sandbox("docker")
        box.start()
        print(box._container, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=os.environ)
    assert proc.stdout is not None
    container = proc.stdout.readline().strip()
    assert container
    assert engine().call("GET", f"/containers/{container}/json")[0] == 200
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60  # the engine notices the closed stream; not a speed test
    while engine().call("GET", f"/containers/{container}/json")[0] != 404:
        assert time.monotonic() < deadline, "the container outlived its killed process"
        time.sleep(0.2)


def test_containers_of_dead_runs_are_swept():
    need("docker")
    from intercode.sandbox.docker.sandbox import LABEL, OWNER_LABEL, default_image, owner, sweep

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = owner().split(":")[0]
    eng = engine()
    made = eng.ok("POST", "/containers/create", {
        "Image": default_image(), "Cmd": ["true"],
        "Labels": {LABEL: "1", OWNER_LABEL: f"{host}:{dead.pid}:1"}})
    alive = eng.ok("POST", "/containers/create", {
        "Image": default_image(), "Cmd": ["true"], "Labels": {LABEL: "1", OWNER_LABEL: owner()}})
    try:
        sweep(eng)
        assert eng.call("GET", f"/containers/{made['Id']}/json")[0] == 404
        assert eng.call("GET", f"/containers/{alive['Id']}/json")[0] == 200  # ours: kept
    finally:
        for cid in (made["Id"], alive["Id"]):
            eng.call("DELETE", f"/containers/{cid}", query={"force": "1"})


def test_files_of_the_root_are_the_agents_and_come_back_on_reset(box):
    """A file of the task tree directly in ``/`` is a file of the agent's tmpfs root, as on
    bubblewrap (no host copy is bound any more): changed, it shows in the diff; a reset
    restores it."""
    with create_sandbox("docker") as sb:
        sb.load(FileTree.of([*TREE.entries,
                             Entry("top.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"top\n")]))
        r = sb.run("cat /top.txt; echo x >> /top.txt && echo appended; cat /top.txt; "
                   "grep -c top.txt /proc/self/mountinfo")
        assert r.output.splitlines() == ["top", "appended", "top", "x", "0"], r.output
        assert [(c.path, c.code) for c in sb.diff()] == [("top.txt", "M")]
        sb.reset()
        assert sb.run("cat /top.txt").output == "top\n" and sb.diff() == []


def test_a_failed_root_set_up_ends_the_start_with_its_reason():
    """Pid 1 never serves with the privileges of the set-up: a step that fails (here the
    root's mount point is missing) ends the start with the reason, and the container."""
    need("docker")
    from intercode.errors import SandboxError
    from intercode.sandbox.docker import DockerSandbox

    class Broken(DockerSandbox):
        def _config(self, inside):
            cfg = super()._config(inside)
            cfg["root"]["root"] = "/no-such-root"
            return cfg

    box = Broken()
    with pytest.raises(SandboxError, match=r"no-such-root|No such file"):
        box.start()
    assert box._container is None and not box.alive


def test_one_sandboxs_processes_do_not_limit_anothers():
    """Every container runs uid 1000 in the host's user namespace, where RLIMIT_NPROC counts
    the processes of all of them together: with it, a sandbox near its process limit made
    every other sandbox's forks fail (their actions timed out). Each is bounded by its own
    pids cgroup instead."""
    need("docker")
    limits = Limits(timeout=20, processes=64)
    with create_sandbox("docker", limits=limits) as a, \
            create_sandbox("docker", limits=limits) as b:
        a.load(TREE)
        b.load(TREE)
        r = a.run("for i in $(seq 45); do sleep 100 >/dev/null 2>&1 & done; echo spawned")
        assert r.output == "spawned\n", r.observation
        r = b.run("for i in $(seq 40); do sleep 100 >/dev/null 2>&1 & done; echo spawned; "
                  "ps -e | wc -l")
        assert r.output.split()[0] == "spawned" and int(r.output.split()[1]) > 40, r.observation
        # its own bound still holds: the pids cgroup (or the watchdog) stops it
        b.run("for i in $(seq 100); do sleep 100 >/dev/null 2>&1 & done; echo spawned")
        # (at its bound, a fork fails until the watchdog, which samples ten times a
        # second while an action runs, has killed the excess: a few tries)
        for _ in range(20):
            out = b.run("echo count=$(ps -e --no-headers | wc -l)").output
            if out.rpartition("count=")[2].strip().isdigit():
                break
        count = int(out.rpartition("count=")[2])
        assert count <= limits.processes + 16, out



def test_the_agents_output_is_not_logged_on_the_host(box):
    """The engine's default log driver copies everything a container writes to its
    stdout into a host file with no size bound: all the agent's output (the stream
    carries it), a flood included, would fill the host's disk."""
    r = box.run("head -c 3000000 /dev/zero | tr '\\0' x; echo")
    assert r.output_bytes > 3_000_000
    info = engine().ok("GET", f"/containers/{box._container}/json")
    assert info["HostConfig"]["LogConfig"]["Type"] == "none"
    log_path = info.get("LogPath") or ""
    assert not log_path or not os.path.exists(log_path) or os.path.getsize(log_path) == 0
