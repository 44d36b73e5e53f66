"""What the sandbox's ``/proc`` shows: what a Docker container masks is masked.

A sandbox has its own pid namespace, so ``/proc`` lists only its own processes; but the
global entries describe the host's kernel. Those Docker masks (``MaskedPaths``) are masked
here too: reading them gives nothing, writing changes nothing, and they cannot be
unmounted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from intercode.sandbox.layout import MASKED_PROC_DIRS, MASKED_PROC_FILES

PRESENT_FILES = [n for n in MASKED_PROC_FILES if Path("/proc", n).is_file()]
PRESENT_DIRS = [n for n in MASKED_PROC_DIRS if Path("/proc", n).is_dir()]


def test_this_kernel_has_entries_to_mask():
    # keys and interrupts exist on any usual kernel: the tests below are not vacuous
    assert {"interrupts", "keys"} <= set(PRESENT_FILES)


@pytest.mark.parametrize("name", PRESENT_FILES)
def test_masked_proc_files_read_empty_and_stay_masked(sandbox, name):
    # a write goes to /dev/null (as in Docker); the mask cannot be unmounted
    out = sandbox.run(f"wc -c < /proc/{name}; echo rc=$?; echo x > /proc/{name}; "
                      f"umount /proc/{name}; echo umount=$?; wc -c < /proc/{name}").output
    lines = out.splitlines()
    assert lines[:2] == ["0", "rc=0"] and lines[-1] == "0", out
    assert "umount=0" not in out, out


@pytest.mark.parametrize("name", PRESENT_DIRS)
def test_masked_proc_dirs_are_empty_and_read_only(sandbox, name):
    out = sandbox.run(f"ls -A /proc/{name} | wc -l; touch /proc/{name}/x; echo wrote=$?")
    assert out.output.splitlines()[0] == "0", out.output
    assert "wrote=0" not in out.output


def test_kernel_keys_of_the_host_user_are_not_listed(sandbox):
    # unmasked, /proc/keys listed the keyrings of the host user the sandbox maps to
    out = sandbox.run("cat /proc/keys; grep -c keyring /proc/keys").output
    assert "_uid" not in out and out.strip() == "0", out


@pytest.mark.parametrize("path", ["/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
                                  "/proc/sysrq-trigger"])
def test_kernel_settings_cannot_be_written(sandbox, path):
    out = sandbox.run(f"echo 1 > {path}; echo rc=$?").output
    assert "rc=0" not in out, out


def test_no_sys_and_no_supervisor_memory(sandbox):
    # /sys (with /sys/firmware) is not mounted (docker: an empty read-only tmpfs covers
    # it); pid 1, the supervisor, is not dumpable: its memory map, environment and
    # pagemap are unreadable
    out = sandbox.run("ls -A /sys 2>/dev/null; echo sys-listed; for f in pagemap maps environ "
                      "mem; do head -c 8 /proc/1/$f > /dev/null && echo read $f; done; "
                      "true").output
    assert out.startswith("sys-listed") and "read " not in out, out
