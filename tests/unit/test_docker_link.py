"""The host's side of a docker sandbox's socket: its settings and the leftovers' sweep."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from intercode.errors import ConfigError
from intercode.sandbox.docker import link as docker_link


def test_the_mode_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(docker_link.ENV, raising=False)
    assert docker_link.stream_mode() == "auto"
    monkeypatch.setenv(docker_link.ENV, " Socket ")
    assert docker_link.stream_mode() == "socket"
    monkeypatch.setenv(docker_link.ENV, "tcp")
    with pytest.raises(ConfigError, match=docker_link.ENV):
        docker_link.stream_mode()
    assert docker_link.wanted("socket") and not docker_link.wanted("attach")
    assert docker_link.wanted("auto") == sys.platform.startswith("linux")


def _dir_with_socket(tmp, pid: int) -> str:
    path = tmp / f"{docker_link.PREFIX}{pid}-abc"
    path.mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path / "sock"))
    return str(path)


def test_the_sweep_removes_only_dead_processes_directories(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = _dir_with_socket(tmp_path, dead.pid)
    alive = _dir_with_socket(tmp_path, os.getpid())
    other = tmp_path / f"{docker_link.PREFIX}{dead.pid}-file"
    other.mkdir()
    (other / "not-a-socket").write_text("x")  # not what a listener leaves: kept
    unrelated = tmp_path / "intercode-linker-1"
    unrelated.mkdir()
    assert docker_link.sweep(str(tmp_path)) == 1
    assert not os.path.exists(gone)
    assert os.path.exists(alive) and other.exists() and unrelated.exists()


def test_a_listener_removes_what_it_made():
    listener = docker_link.Listener(required=False)
    assert os.path.basename(listener.dir).startswith(f"{docker_link.PREFIX}{os.getpid()}-")
    assert os.path.exists(listener.path)
    listener.close()
    listener.close()  # idempotent
    assert not os.path.exists(listener.dir)
