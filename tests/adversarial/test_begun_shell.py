"""Attacks on the shells a restore or a reset starts before the tree is restored.

Once every process of the agent's is killed, pid 1 starts the next Bash shell (which
waits for its directory on descriptor 61) and restores the tree meanwhile; a Python
restore has the held copy fork the new interpreter, which waits for the supervisor's
go. What the agent left in the tree, still there while these start, must not decide
what they run, and they must come up as if started after the restore.
"""

from __future__ import annotations

import pytest
from backends import backends, need

import intercode
from intercode import testing
from intercode.envs.bash import BashEnv
from intercode.sandbox.limits import Limits

# "/bin" is a link (to usr/bin) in the agent's writable root: pointed at a directory of
# the agent's, whose "bash-static" (and "bash") export a marker and exec the real shell
SWAP_BIN = (
    "mkdir -p /tmp/evil && printf '#!/usr/bin/bash-static\\nexport LEAKED=agent\\n"
    "exec /usr/bin/bash-static \"$@\"\\n' > /tmp/evil/bash-static && "
    "chmod +x /tmp/evil/bash-static && cp /tmp/evil/bash-static /tmp/evil/bash && "
    "rm /bin && ln -s /tmp/evil /bin && readlink /bin")
PROBE = "echo ${LEAKED-clean} $(readlink /bin) $BASH $0; readlink /proc/$$/exe; cat /proc/$$/comm"
CLEAN = "clean usr/bin /bin/bash /bin/bash\n/usr/bin/bash-static\nbash-static\n"


@pytest.mark.parametrize("backend", backends())
def test_a_swapped_bin_link_does_not_choose_the_restored_or_reset_shell(backend):
    """The shell begun before the tree's restore was found by its path, through the
    agent's ``/bin`` (a link in the writable root), still the agent's then: a restore (and
    a reset) ran the agent's program as the next shell, with a state (an exported
    variable, any process it left) from the branch the restore undoes. The program is
    now found by its real path when pid 1 starts, and begun before a restore only if no
    name on that path can change (``/usr/bin/bash-static``: ``/usr`` a read-only mount);
    the process is named as before (``ps``, ``pstree``)."""
    need(backend)
    env = BashEnv("nl2bash-fs1", backend=backend, limits=Limits(timeout=20))
    try:
        env.reset(options={"task": 0})
        assert env.step(PROBE)[0] == CLEAN
        snap = env.snapshot()
        assert env.step(SWAP_BIN)[0] == "/tmp/evil\n"
        env.restore(snap)
        assert env.step(PROBE)[0] == CLEAN
        box = env._sandbox("agent")
        assert box.run(SWAP_BIN).output == "/tmp/evil\n"
        box.reset()
        assert box.run(PROBE).output == CLEAN
        env.reset(options={"task": 1})
        assert env.step(PROBE)[0] == CLEAN
    finally:
        env.close()


def test_a_program_on_a_path_the_agent_could_change_is_not_begun_early(tmp_path):
    """Only a program whose path no one can change (first directory a mount point, every
    directory read-only) is begun before a restore: one in a writable directory, behind a
    link, or missing is not (its shell starts after the restore, as before)."""
    from intercode.sandbox.inbox.shell import fixed_program

    prog = tmp_path / "bash-static"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    (tmp_path / "link").symlink_to(prog)
    assert fixed_program(str(prog)) is None
    assert fixed_program(str(tmp_path / "link")) is None
    assert fixed_program(str(tmp_path / "missing")) is None


# a snapshot's shell state that runs code as soon as it is replayed (a DEBUG and an ERR
# trap, ``set -x`` with a PS4 that runs a command): had any of it run before the tree was
# restored, it could have seen the later branch's file (a race), and it would have run
# while the shell still had the descriptor it waits on for its directory (61): either is
# kept in a variable
EARLY_STATE = (
    "trap '[[ -e /tmp/later || -e /proc/self/fd/61 ]] && EARLY+=debug' DEBUG; "
    "trap '[[ -e /tmp/later || -e /proc/self/fd/61 ]] && EARLY+=err' ERR; "
    "PS4='+${EARLY_PS4:=$([[ -e /tmp/later || -e /proc/$$/fd/61 ]] && echo ps4)}'; set -x; "
    "cd \"$(printf '/tmp/odd\\nname \\377')\"")


def test_a_shell_state_that_runs_code_at_once_runs_it_on_the_restored_tree():
    """A restored shell's state (traps, ``set -x`` with a ``PS4`` that runs a command, a
    directory with a newline and a non-UTF-8 byte in its name) is replayed only after
    the tree is restored: none of it sees a file of the later branch; the shell is in
    that directory and holds no go descriptor (61)."""
    env = intercode.make("bash", dataset=testing.small_dataset("bash")).unwrapped
    try:
        env.reset(options={"task": 0})
        env.step("mkdir \"$(printf '/tmp/odd\\nname \\377')\"")
        env.step(EARLY_STATE)
        snap = env.snapshot()
        env.step("set +x; trap - DEBUG ERR; cd /; touch /tmp/later")
        env.restore(snap)
        env.step("set +x; trap - DEBUG ERR")
        out = env.step("echo \"[$EARLY$EARLY_PS4]\"; pwd | od -c | head -1; "
                       "ls /proc/$$/fd | sort -n | tr '\\n' ' '")[0]
        lines = out.splitlines()
        assert lines[0] == "[]", out  # no trap saw the later branch's file
        assert "\\n   n   a   m   e     377" in lines[1], out
        assert "61" not in lines[-1].split(), out  # the go descriptor is closed for good
    finally:
        env.close()


# (set-up in the snapshot, action after it, where the restored shell is): as a shell
# started after the restore in that directory (pid 1 could not enter it either: "/")
CWDS = {
    "root locked": ("cd /tmp", "chmod 000 /", "/tmp"),
    "unsearchable": ("mkdir -p /tmp/L && cd /tmp/L && chmod 000 /tmp/L", "true", "/"),
    "deleted": ("mkdir -p /tmp/D && cd /tmp/D && rmdir /tmp/D", "true", "/"),
    "through a link": ("mkdir -p /tmp/r && ln -sfn /tmp/r /tmp/s && cd /tmp/s", "rm /tmp/s",
                       "/tmp/r"),
    "ending in a newline": ("mkdir $'/tmp/t\\n ' && cd $'/tmp/t\\n '", "cd /", "$'/tmp/t\\n '"),
}


@pytest.mark.parametrize("case", sorted(CWDS))
def test_a_restored_shell_is_in_its_directory_as_if_started_there(case):
    """The begun shell goes to its directory once the tree is restored: a root the agent
    locked, a directory no one may search, one deleted, one reached through a link, one
    whose name ends in a newline and a space: where a shell started there after the
    restore is."""
    setup, later, where = CWDS[case]
    env = intercode.make("bash", dataset=testing.small_dataset("bash")).unwrapped
    try:
        env.reset(options={"task": 0})
        env.step(setup)
        snap = env.snapshot()
        env.step(later)
        env.restore(snap)
        out = env.step("printf '%q\\n' \"$PWD\"; [ \"$PWD\" -ef . ] && echo here; "
                       "stat -c %a /")[0]
        assert out == f"{where}\nhere\n755\n", out
    finally:
        env.close()


# Python: the agent's code patches what the held copy and the new interpreter call
# before the go (they share its modules). Run before the snapshot; after it, the later
# "solve" (``f`` returning "new", in a file the restore removes) is written and pushed.
PATCH_SIGWAIT = r'''
import signal, builtins
_real = signal.sigwaitinfo
def _fake(sigs, _real=_real):
    sigs = set(sigs)
    while True:
        info = _real(sigs | {signal.SIGUSR2} if signal.SIGUSR1 in sigs else sigs)
        if signal.SIGUSR1 in sigs and info.si_signo == signal.SIGUSR2:
            exec(open('/tmp/sol.py').read(), builtins._G)  # the later state, pushed
            open('/tmp/pushed', 'w').close()
            continue
        if signal.SIGUSR2 in sigs and signal.SIGUSR1 not in sigs:  # before the go
            builtins._G['EARLY'] = sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))[:1]
        return info
builtins._G = globals()
signal.sigwaitinfo = _fake
'''
# an at-fork hook that starts a thread in the copy (os.fork runs the hooks: the
# interpreter runs a second thread at the hold), which pushes the later state
# after the snapshot: the later solve, a SIGUSR2 to the held copies, then a wait (bounded)
# for the copy to say it took it
PUSH = (
    "import os, signal, time\nme = os.getpid()\n"
    "open('/tmp/sol.py', 'w').write(\"def f():\\n    return 'new'\\n\")\n"
    "for n in os.listdir('/proc'):\n"
    "    if n.isdigit() and int(n) != me and "
    "open('/proc/%s/stat' % n).read().rsplit(')', 1)[1].split()[1] == str(me):\n"
    "        os.kill(int(n), signal.SIGUSR2)\n"
    "for _ in range(300):\n"
    "    if os.path.exists('/tmp/pushed'):\n"
    "        break\n"
    "    time.sleep(0.01)\n")


def test_a_patched_interpreter_runs_nothing_in_its_held_copy():
    """The held copy called ``signal.sigwaitinfo``, the agent's to patch (the module is
    shared): the patch ran in the copy (it took a later solve and the restore gave it)
    and in the new interpreter before its go (while the tree was still being restored).
    The copy now calls only functions taken when its module was imported. (An at-fork
    hook that starts a thread in the copy is a residual risk: docs/security.md.)"""
    env = intercode.make("python", dataset=testing.small_dataset("python")).unwrapped
    try:
        env.reset(options={"task": 0})
        env.step("def f():\n    return 'old'\n")
        env.step(PATCH_SIGWAIT)
        snap = env.snapshot()
        env.step(PUSH)
        env.restore(snap)
        assert env.step("print(f(), globals().get('EARLY'))")[0] == "old None\n"
        assert env.step("1 + 1")[0] == "2\n"
    finally:
        env.close()


# the agent stops its held copy, and once it is stopped sends it a SIGUSR1 of its own,
# which stays pending
STOP_AND_SIGNAL_HELD = r'''
import os, signal, time
me = os.getpid()
held = [int(n) for n in os.listdir('/proc') if n.isdigit() and int(n) != me
        and open('/proc/%s/stat' % n).read().rsplit(')', 1)[1].split()[1] == str(me)]
for p in held:
    os.kill(p, signal.SIGSTOP)
    while open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[0] != 'T':
        time.sleep(0.01)
    os.kill(p, signal.SIGUSR1)
print(len(held))
'''


def test_a_resume_signal_left_pending_in_a_held_copy_does_not_fail_the_restore():
    """A SIGUSR1 of the agent's, left pending in its stopped held copy, swallowed the
    supervisor's (a pending signal is not queued twice): the copy, continued, took the
    agent's, ignored it and waited on; the restore waited five seconds and failed as an
    infrastructure error. The supervisor now waits for the copy to take the pending one
    before it sends its own."""
    env = intercode.make("python", dataset=testing.small_dataset("python")).unwrapped
    try:
        env.reset(options={"task": 0})
        env.step("x = 'snapshot'")
        snap = env.snapshot()
        env.step("x = 'later'")
        assert env.step(STOP_AND_SIGNAL_HELD)[0] == "1\n"
        env.restore(snap)
        assert env.step("print(x)")[0] == "snapshot\n"
    finally:
        env.close()
