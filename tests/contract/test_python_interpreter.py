"""The sandboxed Python interpreter: interactive semantics, containment, fresh resets."""

from __future__ import annotations

import json
import time

import pytest

from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.limits import Limits


@pytest.fixture(scope="module")
def py():
    box = create_sandbox("bwrap", Limits(timeout=2, kill_grace=0.5, processes=64,
                                         memory=512 << 20), shell="python")
    box.start()
    box.load(FileTree.of([]))
    yield box
    box.close()


def test_state_persists_and_expressions_are_shown(py):
    py.reset()
    assert py.run("x = 20\ndef double(v):\n    return 2 * v\n").output == ""
    assert py.run("double(x) + 2").output == "42\n"
    assert py.run("'text'").output == "'text'\n"
    assert py.run("None").output == ""
    assert py.run("import math\nmath.floor(2.5)").output == "2\n"
    r = py.run("for i in range(2):\n    print(i)\nclass C:\n    pass\nC.__name__")
    assert r.output == "0\n1\n'C'\n" and r.exit_code == 0


def test_stdout_and_stderr_interleave(py):
    r = py.run("import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')")
    assert r.output == "a\nb\nc\n"


def test_exceptions_are_tracebacks_and_the_session_goes_on(py):
    py.reset()
    py.run("y = 1")
    r = py.run("def f():\n    return 1 / 0\nf()")
    assert r.exit_code == 1
    assert r.output.startswith("Traceback (most recent call last):\n  File \"<stdin>\"")
    assert "ZeroDivisionError: division by zero" in r.output and "pyrepl" not in r.output
    r = py.run("def broken(:")
    assert r.exit_code == 1 and "SyntaxError" in r.output
    assert py.run("y").output == "1\n"


@pytest.mark.parametrize("action", ["while True: pass", "sum(i for i in range(10**12))"])
def test_runaway_loops_are_interrupted_and_state_survives(py, action):
    py.reset()
    py.run("keep = 'me'")
    started = time.monotonic()
    r = py.run(action)
    assert r.timed_out and "KeyboardInterrupt" in r.output
    assert time.monotonic() - started < 5
    assert py.run("keep").output == "'me'\n"


def test_a_loop_that_swallows_the_interrupt_gets_a_new_interpreter(py):
    r = py.run("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass")
    assert r.timed_out and r.shell_restarted and "new Python interpreter" in r.observation
    assert py.run("1 + 1").output == "2\n"


def test_huge_allocation_is_a_memory_error(py):
    r = py.run("x = bytearray(8 * 2**30)")
    assert "MemoryError" in r.output
    assert py.run("2 + 2").output == "4\n"


def test_fork_loop_is_contained(py):
    py.run("import os\nfor _ in range(500):\n    try:\n        if os.fork() == 0:\n"
           "            import time; time.sleep(60)\n    except OSError:\n        break")
    time.sleep(0.5)
    assert py.run("3 + 3").output == "6\n"
    py.reset()
    assert py.run("import os; len([p for p in os.listdir('/proc') if p.isdigit()])"
                  ).output.strip() in ("3", "4")  # pid 1, the zygote, this one, a spare


@pytest.mark.parametrize("action", ["import sys; sys.exit(4)", "raise SystemExit('bye')"])
def test_system_exit_is_contained(py, action):
    py.run("alive = True")
    r = py.run(action)
    assert "SystemExit" in r.output and not r.shell_restarted
    assert py.run("alive").output == "True\n"


def test_os_exit_restarts_the_interpreter(py):
    r = py.run("import os; os._exit(9)")
    assert r.shell_restarted and r.exit_code == 9
    assert "Python interpreter exited" in r.observation
    assert py.run("4 + 4").output == "8\n"


@pytest.mark.parametrize("action", ["import sys; sys.stdout.close()", "import os; os.close(1)",
                                    "import sys, io; sys.stdout = io.StringIO()"])
def test_closing_stdout_does_not_break_the_session(py, action):
    py.run(action)
    assert py.run("print('visible')").output == "visible\n"


def test_reading_stdin_gets_end_of_file(py):
    r = py.run("input('? ')")
    assert "EOFError" in r.output
    r = py.run("import sys; sys.stdin.read()")
    assert r.output == "''\n"


def test_reset_gives_a_fresh_interpreter(py):
    py.run("import json\nleft_over = 1\nimport builtins; builtins.patched = True")
    py.reset()
    assert "NameError" in py.run("left_over").output
    assert "NameError" in py.run("patched").output
    assert py.run("'json' in dir()").output == "False\n"


def test_isolation(py):
    r = py.run("import os, socket\nprint(os.getuid(), os.path.exists('/root/.pyenv'))\n"
               "s = socket.socket()\ns.settimeout(1)\ntry:\n    s.connect(('1.1.1.1', 80))\n"
               "except OSError as e:\n    print('no network')")
    assert r.output == "1000 False\nno network\n"


def test_an_eval_request_runs_in_a_fork(py):
    py.reset()
    py.run("def sq(v):\n    print('side effect')\n    return v * v\nstate = []")
    request = {"steps": ["target = sq", "state.append(1)"], "timeout": 1,
               "tests": ["assert target(3) == 9", "assert target(3) == 10",
                         "while True: pass", "undefined_name"]}
    r = py.run(json.dumps(request), kind="eval")
    assert r.output == ""  # the reply comes apart from the output
    outcomes = json.loads(r.reply)
    assert outcomes[0] == {"output": "side effect", "error": ""}
    assert outcomes[1] == {"error": "Error: "}
    assert outcomes[2]["error"].startswith("Error: the test took more than")
    assert outcomes[3] == {"error": "Error: name 'undefined_name' is not defined"}
    assert py.run("state, 'target' in dir()").output == "([], False)\n"


def test_a_reply_comes_apart_from_the_output_and_is_bounded(py):
    # the agent replaces the eval handler (its code runs in this interpreter): what it
    # replies is only a claim, and one bigger than the output limit is dropped
    py.reset()
    hijack = ("import sys\ng = sys._getframe(1).f_globals\n"
              "def fake(ns, req):\n    print('[1, 2]')\n    g['pyscore'].reply(req['text'])\n"
              "    return 0\ng['REQUESTS']['eval'] = fake\n")
    assert py.run(hijack).exit_code == 0
    r = py.run(json.dumps({"text": '{"claim": true}'}), kind="eval")
    assert (r.output, r.reply, r.exit_code) == ("[1, 2]\n", '{"claim": true}', 0)
    big = py.run(json.dumps({"text": "x" * (py.limits.output + 1)}), kind="eval")
    assert big.reply is None and big.exit_code == 0
    assert py.run("1 + 1").output == "2\n" and py.run("1 + 1").reply is None


FRESH_STATE = (
    "import os, signal, subprocess, sys\n"
    "odd = sorted(s.name for s in signal.valid_signals()\n"
    "             if signal.getsignal(s) is not signal.SIG_DFL)\n"
    "print(odd, signal.getsignal(signal.SIGINT) is signal.default_int_handler,\n"
    "      signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN)\n"
    "print(sorted(os.environ))\n"
    "seen = subprocess.run(['env'], capture_output=True, text=True).stdout.splitlines()\n"
    "print(sorted(seen) == sorted('%s=%s' % kv for kv in os.environ.items()))\n"
    "print(sys.argv, [m for m in sys.modules if 'icbox' in m])\n"
    "try:\n"
    "    import icbox\n"
    "except ImportError:\n"
    "    print('no supervisor module')\n"
)
FRESH = ("['SIGINT', 'SIGPIPE', 'SIGXFSZ'] True True\n"
         "['HOME', 'HOSTNAME', 'LANG', 'LOGNAME', 'PATH', 'SHELL', 'TZ', 'USER']\n"
         "True\n[''] []\nno supervisor module\n")


def test_every_fresh_interpreter_has_the_same_process_state(py):
    """Handlers, environment (Python's and the C library's), argv and no module of the
    supervisor, in each new interpreter, whatever the last one changed."""
    for _ in range(3):
        py.reset()
        assert py.run(FRESH_STATE).output == FRESH
        py.run("import os, signal, sys\nos.environ['LEAK'] = '1'\nos.environ.pop('PATH')\n"
               "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
               "signal.signal(signal.SIGINT, signal.SIG_IGN)\nsys.argv.append('x')")


JUDGED = [  # (template, reported units): outcomes, exceptions, output, a late test
    ("assert __ic_unit__(0) == 8", [{"v": 8, "out": "", "err": ""}]),
    ("assert __ic_unit__(0) == 8", [{"v": 7, "out": "printed\n", "err": "warned\n"}]),
    ("assert sorted(__ic_unit__(0)) == [1, 2]",
     [{"v": {"t": "set", "v": [2, 1]}, "out": "", "err": ""}]),
    ("assert {k: v for k, v in __ic_unit__(0).items()} == {(1, 2): b'x'}",
     [{"v": {"t": "dict", "v": [[{"t": "tuple", "v": [1, 2]}, {"t": "bytes", "v": "78"}]]},
       "out": "", "err": ""}]),
    ("assert __ic_unit__(0) == 2 ** 70 and __ic_unit__(1) == 1j",
     [{"v": {"t": "int", "v": "400000000000000000"}, "out": "", "err": ""},
      {"v": {"t": "complex", "v": [0, 1]}, "out": "", "err": ""}]),
    ("assert __ic_unit__(0) == 1", [{"raise": ["ValueError", "bad input"]}]),
    ("assert __ic_unit__(0) == 1", ["not a reply"]),
    ("assert all(x < __ic_unit__(0) for x in range(10 ** 12))",
     [{"v": 10 ** 13, "out": "", "err": ""}]),
    ("assert [a for a, b in __ic_unit__(0)] == [1]",
     [{"v": [[1, 2]], "out": "", "err": ""}]),
]


def test_the_judge_decides_the_same_in_itself_as_in_a_fork(py):
    """The same templates and values give the same outcomes without a fork (``here``)
    as in one, and the in-place path forks nothing and leaves no alarm behind."""
    py.reset()
    request = {"tests": [{"template": t, "units": u} for t, u in JUDGED], "timeout": 0.5}
    forked = py.run(json.dumps(request), timeout=30, kind="judge").reply
    next_pid = ("import subprocess, signal\n"
                "print(subprocess.Popen(['true']).pid,"
                " signal.getsignal(signal.SIGALRM) is signal.SIG_DFL,"
                " signal.getitimer(signal.ITIMER_REAL))")
    first = py.run(next_pid).output.split()
    here = py.run(json.dumps({**request, "here": True}), timeout=30, kind="judge").reply
    second = py.run(next_pid).output.split()
    assert here == forked
    outcomes = json.loads(here)
    assert outcomes[0] == {"output": "", "error": ""}
    assert outcomes[1]["error"].startswith("Error") and "took more" in outcomes[7]["error"]
    assert int(second[0]) == int(first[0]) + 1  # only the `true` started in between
    assert second[1:] == first[1:] == ["True", "(0.0,", "0.0)"], (first, second)
    # a value whose tag is no string (unhashable): judged in a fork, not an error of ours
    odd = {"tests": [{"template": "assert __ic_unit__(0) == [1]",
                      "units": [{"v": {"t": [], "v": 1}, "out": "", "err": ""}]}],
           "timeout": 0.5, "here": True}
    result = py.run(json.dumps(odd), timeout=30, kind="judge")
    assert not result.shell_restarted and "not understood" in json.loads(result.reply)[0]["error"]
