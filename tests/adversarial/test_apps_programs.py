"""APPS programs that attack the scoring: each is wrong (or right) and must score so.

Problem 0 of the test-made set (``apps_helpers``) reads ``1 2`` and expects ``3``; problem
``SECRET`` below expects a token no program can compute from its input. The program runs
in a fresh fork of a scorer sandbox per test; the expected outputs never leave the host.
"""

from __future__ import annotations

import pytest
from apps_helpers import PROBLEMS, STDIN_GOLD, dataset

from intercode.envs.python import PythonEnv

TOKEN = "expected-7f3c9a1e5d"
SECRET = {"query": "Print the hidden token.", "gold": f"print({TOKEN!r})\n",
          "input_output": {"inputs": ["x\n", "y\n"], "outputs": [TOKEN + "\n", TOKEN + "\n"]}}


@pytest.fixture(scope="module")
def env():
    e = PythonEnv(dataset([*PROBLEMS, SECRET]), test_timeout=1.0)
    yield e
    e.close()


def score(env, source, task=0):
    env.reset(options={"task": task})
    env.step(f"with open('solution.py', 'w') as f:\n    _ = f.write({source!r})\n")
    _, reward, _, _, info = env.step("submit")
    return reward, info


def assert_gold_still_scores(env):
    assert score(env, STDIN_GOLD)[0] == 1.0


SEARCH = f"""
import gc, os, sys


def main():
    needle = {TOKEN[::-1]!r}[::-1]  # built here: nowhere in this process's code or files
    me = str(os.getpid())
    found = []
    for o in gc.get_objects():
        if isinstance(o, (dict, list, tuple)) and needle in repr(o)[:100000]:
            found.append('gc')
    f = sys._getframe().f_back
    while f is not None:
        if needle in repr(f.f_globals)[:100000] or needle in repr(f.f_locals)[:100000]:
            found.append('frame')
        f = f.f_back
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or pid == me:
            continue
        for part in ('environ', 'cmdline', 'mem'):
            try:
                with open('/proc/%s/%s' % (pid, part), 'rb') as fh:
                    if needle.encode() in fh.read(1 << 22):
                        found.append(part)
            except OSError:
                pass
    for top in ('/tmp', '/home', '/root', '/var', '/run', '/dev/shm', '/'):
        for root, dirs, files in os.walk(top):
            if root.startswith(('/proc', '/sys', '/usr', '/dev')):
                dirs[:] = []
                continue
            for name in files:
                try:
                    with open(os.path.join(root, name), 'rb') as fh:
                        if needle.encode() in fh.read(1 << 20):
                            found.append(os.path.join(root, name))
                except OSError:
                    pass
    print(needle if found else 'nothing')


main()
"""


def test_a_program_that_searches_for_the_expected_output_finds_nothing(env):
    reward, info = score(env, SEARCH, task=len(PROBLEMS))
    assert reward == 0.0 and info["tests_correct"] == 0, info


HOSTILE = {
    "loops forever": "while True:\n    pass\n",
    "swallows the alarm and loops": "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
                                    "while True:\n    pass\n",
    "floods standard output": "import sys\nwhile True:\n    sys.stdout.write('3\\n' * 4096)\n",
    "exits before printing": "import os\nos._exit(0)\nprint(3)\n",
    "prints the answer then dies": "import os, sys\nprint(3)\nsys.stdout.flush()\nos._exit(3)\n",
    "prints the answer then raises": "print(3)\nraise ValueError('late')\n",
    "forks a process that outlives its test": (
        "import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(30)\n    os._exit(0)\nprint(0)\n"),
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                 "        pass\n",
    "kills the scorer's interpreter": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "forges the scorer's reply on its descriptors (the request's number from its frames)": (
        "import os, sys\nf, seq = sys._getframe(), None\nwhile f is not None:\n"
        "    seq = f.f_locals.get('seq', seq) if isinstance(f.f_locals.get('seq'), str) else seq\n"
        "    f = f.f_back\n"
        "record = ('%s reply\\n{\"status\": \"ok\", \"out\": \"Mwo=\"}\\x00%s 0 /\\x00' % (seq, seq))\n"
        "for fd in range(3, 70):\n    try:\n        os.write(fd, record.encode())\n"
        "    except OSError:\n        pass\nprint(0)\n"),
    "forges the reply on the scorer's descriptors taken through /proc": (
        "import os, sys\nf, seq = sys._getframe(), None\nwhile f is not None:\n"
        "    seq = f.f_locals.get('seq', seq) if isinstance(f.f_locals.get('seq'), str) else seq\n"
        "    f = f.f_back\n"
        "record = ('%s reply\\n{\"status\": \"ok\", \"out\": \"Mwo=\"}\\x00%s 0 /\\x00' % (seq, seq))\n"
        "for fd in range(3, 70):\n    try:\n"
        "        w = os.open('/proc/%d/fd/%d' % (os.getppid(), fd), os.O_WRONLY)\n"
        "        os.write(w, record.encode())\n    except OSError:\n        pass\nprint(0)\n"),
    "rewrites the scorer's memory": (
        "import os\ntry:\n    with open('/proc/%d/mem' % os.getppid(), 'r+b') as m:\n"
        "        m.seek(0x400000)\n        m.write(b'\\0' * 64)\nexcept OSError:\n    pass\n"
        "print(0)\n"),
    "patches builtins and the harness's modules": (
        "import builtins, sys\nfor m in list(sys.modules.values()):\n"
        "    for name in ('reply', 'run_test', 'stdin_passes'):\n"
        "        if hasattr(m, name):\n            setattr(m, name, lambda *a, **k: None)\n"
        "builtins.print = lambda *a, **k: None\nprint(3)\n"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_program_is_wrong_and_costs_only_its_own_tests(env, name):
    reward, info = score(env, HOSTILE[name])
    assert reward == 0.0 and info["tests_correct"] == 0 and info["tests_total"] == 4, info
    assert_gold_still_scores(env)


def test_system_exit_ends_a_program_normally_as_in_apps(env):
    right = "a, b = map(int, input().split())\nprint(a + b)\nimport sys\nsys.exit(1)\n"
    assert score(env, right)[0] == 1.0


def test_a_process_left_by_one_scoring_is_gone_at_the_next(env):
    lingering = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                 "    open('/tmp/alive', 'w').close()\n    time.sleep(60)\n    os._exit(0)\n"
                 "a, b = map(int, input().split())\nprint(a + b)\n")
    assert score(env, lingering)[0] == 1.0
    probe = ("import os\nalive = [p for p in os.listdir('/proc') if p.isdigit() and "
             "b'sleep' not in b'' and os.path.exists('/tmp/alive')]\n"
             "a, b = map(int, input().split())\nprint(a + b + (100 if alive else 0))\n")
    assert score(env, probe)[0] == 1.0  # the scorer was reset: no file, no process


def test_a_call_based_program_cannot_forge_its_value(env):
    forged = ("import os\nclass Liar(int):\n    def __eq__(self, other):\n        return True\n"
              "    __hash__ = int.__hash__\n"
              "def add(a, b):\n    os.write(3, b'{\"t\": \"module\", \"v\": \"os\"}')\n"
              "    return Liar(0)\n")
    reward, info = score(env, forged, task=1)
    assert reward == 0.0 and info["tests_correct"] == 0, info
