"""Attacks on the Docker backend's own surface: the engine, the stream, the container.

The agent runs as a non-root user with no capabilities in a container without
network, on a read-only root; pid 1 (the supervisor and the relay of its stream) is
out of its reach; a host process killed with SIGKILL leaves no container behind.
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
    from intercode.sandbox.docker_engine import Engine

    return Engine()


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


def test_root_file_system_is_read_only(box):
    r = box.run("for p in /usr/x /etc/x /x /bin/x; do touch $p 2>/dev/null && echo wrote $p; "
                "done; echo done")
    assert r.output == "done\n"


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
    from intercode.sandbox.docker import LABEL, OWNER_LABEL, default_image, owner, sweep

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


def test_files_of_the_root_cannot_be_changed(box):
    """A file directly in / is a read-only bind of a host copy: the agent cannot reach the
    host file through it."""
    with create_sandbox("docker") as sb:
        sb.load(FileTree.of([*TREE.entries,
                             Entry("top.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"top\n")]))
        r = sb.run("cat /top.txt; echo x >> /top.txt || echo refused; rm -f /top.txt; "
                   "cat /top.txt")
        assert r.output.splitlines()[0] == "top" and "refused" in r.output
        assert r.output.splitlines()[-1] == "top"
        assert sb.diff() == []


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
