"""Python/MBPP: the agent's code never decides its own score nor sees expected values.

MBPP 1 (index 0) asks for ``min_cost``; its tests expect 8, 12 and 16, so a function
returning 0 is wrong on every test: whatever else the agent does, ``tests_correct``
must stay 0. The attacks on the interpreter, the comparison, Try Again, the hidden
asserts, a faked module and a hanging call each scored above 0 (most 1.0) while tests ran
in a fork of the agent's interpreter; the other tests guard the split design (values are
bounded, replies are only claims, the judge loads no code on the agent's word).
"""

from __future__ import annotations

import pytest
from backends import backends, need

from intercode.envs.python import PythonEnv

WRONG = "    return 0\n"
GOLD_486 = ("0.13656454808718185", "0.2255859375", "0.227030335488")


@pytest.fixture(scope="module")
def env():
    e = PythonEnv("mbpp", test_timeout=1.0)
    yield e
    e.close()


def score(env, *actions, task=0, name="min_cost"):
    env.reset(options={"task": task})
    for action in actions:
        env.step(action)
    _, reward, _, _, info = env.step(f"submit {name}")
    return reward, info


def assert_wrong(reward, info):
    assert reward == 0.0 and info["tests_correct"] == 0 and not info["all_pass"], info


def assert_alive(env):
    env.reset(options={"task": 0})
    assert env.step("1 + 1")[0] == "2\n"


ACTION_ATTACKS = {
    "builtins.exec is a no-op": "import builtins\nbuiltins.exec = lambda *a, **k: None\n",
    "builtins.compile compiles nothing":
        "import builtins\n_c = builtins.compile\n"
        "builtins.compile = lambda s, f, m, *a, **k: _c(\n"
        "    ('None' if m == 'eval' else 'pass') if f == '<test>' else s, f, m, *a, **k)\n",
    "the harness's outcome is patched through the caller's globals":
        "import sys\ng = sys._getframe(1).f_globals\nok = lambda *a, **k: {'output': '', 'error': ''}\n"
        "g['_outcome'] = ok\nfor m in list(sys.modules.values()) + [g.get('pyscore')]:\n"
        "    if m is not None and hasattr(m, 'outcome'):\n        m.outcome = ok\n",
    "the harness's json reports passes":
        "import sys, types\nfake = types.SimpleNamespace(loads=__import__('json').loads,\n"
        "    dumps=lambda *a, **k: '[' + ','.join(['{\"output\": \"\", \"error\": \"\"}'] * len(req['tests'])) + ']')\n"
        "g = sys._getframe(1).f_globals\ng['json'] = fake\n"
        "if 'pyscore' in g:\n    g['pyscore'].json = fake\n    g['pyscore'].pyvalue.json = fake\n",
}


@pytest.mark.parametrize("attack", sorted(ACTION_ATTACKS))
def test_patching_the_interpreter_does_not_pass_a_wrong_function(env, attack):
    reward, info = score(env, ACTION_ATTACKS[attack], "def min_cost(*a):\n" + WRONG)
    assert_wrong(reward, info)


FUNCTION_ATTACKS = {
    "always-equal object": "    class E:\n        __eq__ = lambda s, o: True\n"
                           "        __ne__ = lambda s, o: False\n    return E()\n",
    "always-equal int subclass": "    class Z(int):\n        __eq__ = lambda s, o: True\n"
                                 "        __hash__ = int.__hash__\n    return Z(0)\n",
    "always-equal list subclass": "    class L(list):\n        __eq__ = lambda s, o: True\n"
                                  "    return L()\n",
    "patches exec from inside the call":
        "    import builtins\n    builtins.exec = lambda *a, **k: None\n"
        "    class E:\n        __eq__ = lambda s, o: True\n    return E()\n",
    "swaps sys.modules and AssertionError":
        "    import sys, builtins\n    builtins.AssertionError = type('A', (Exception,), {})\n"
        "    sys.modules['json'] = None\n    return 0\n",
    "rewrites the int type's dict":
        "    import gc\n    gc.get_referents(int.__dict__)[0]['__eq__'] = lambda a, b: True\n"
        "    return 0\n",
    "patches every caller's globals":
        "    import sys\n    f = sys._getframe(1)\n    ok = lambda *a, **k: {'output': '', 'error': ''}\n"
        "    while f is not None:\n        for k in ('_outcome', 'outcome'):\n"
        "            if k in f.f_globals:\n                f.f_globals[k] = ok\n"
        "        f = f.f_back\n"
        "    class E:\n        __eq__ = lambda s, o: True\n    return E()\n",
}


@pytest.mark.parametrize("attack", sorted(FUNCTION_ATTACKS))
def test_a_function_that_games_the_comparison_is_wrong(env, attack):
    reward, info = score(env, "def min_cost(*a):\n" + FUNCTION_ATTACKS[attack])
    assert_wrong(reward, info)
    assert_alive(env)


def test_try_again_is_scored_the_same_way(env):
    env.reset(options={"task": 0})
    env.step("import builtins\nbuiltins.exec = lambda *a, **k: None")
    env.step("def min_cost(*a):\n    class E:\n        __eq__ = lambda s, o: True\n    return E()")
    ev = env.evaluate()
    assert ev.reward == 0.0 and not ev.info["all_pass"]


SPY = '''
import sys, gc
LOG = "spy.log"
def _note(text):
    with open(LOG, "a") as fh:
        fh.write(text[:200000] + "\\n")
def _hook(event, args):
    if event in ("compile", "exec"):
        _note(repr(args))
sys.addaudithook(_hook)
def binomial_probability(n, k, p):
    f = sys._getframe()
    while f is not None:
        _note(repr(f.f_locals))
        f = f.f_back
    for obj in gc.get_objects():
        if (type(obj) is dict and ("tests" in obj or "steps" in obj)) or (
                type(obj) in (list, tuple) and obj and type(obj[0]) is str):
            _note(repr(obj))
    return 0.0
'''


def test_the_agents_process_never_sees_expected_values(env):
    """An audit hook, the frames and gc.get_objects() of the scoring fork, logged to a file
    during Try Again and submit, hold the tests' inputs but none of their answers."""
    env.reset(options={"task": 485})  # MBPP 486: binomial_probability, float answers
    env.step(SPY)
    assert env.evaluate().reward == 0.0
    checks = ", ".join(f"{a!r} + {b!r} in data" for a, b in
                       [(g[:6], g[6:]) for g in GOLD_486] + [("10, 5, ", "1.0 / 3")])
    obs, _, _, _, _ = env.step(f"data = open(LOG).read()\nprint([{checks}])")
    assert obs.strip() == "[False, False, False, True]", obs[:500]
    reward = env.step("submit binomial_probability")[1]
    assert reward == 0.0


def test_a_module_the_test_uses_cannot_be_faked(env):
    """MBPP 596 compares with ``sys.getsizeof``: a fake ``sys`` in the agent's namespace
    is not the module, so it cannot make a wrong function pass."""
    fake = ("class FakeSys:\n    getsizeof = staticmethod(lambda x: 0)\nsys = FakeSys()\n"
            "def tuple_size(t):\n    return 0\n")
    reward, info = score(env, fake, task=595, name="tuple_size")
    assert_wrong(reward, info)
    env.reset(options={"task": 595})
    reward, info = score(env, env.task.gold, task=595, name="tuple_size")
    assert reward == 1.0 and info["all_pass"]


LARGE = {
    "huge list": "    return [0] * 10**7\n",
    "huge string": "    return 'x' * 10**8\n",
    "deeply nested": "    v = []\n    for _ in range(10**5):\n        v = [v]\n    return v\n",
    "self-referential": "    v = [8]\n    v.append(v)\n    return v\n",
    "self-referential dict": "    d = {}\n    d[1] = d\n    return d\n",
    "a generator": "    return (x for x in [8])\n",
}


@pytest.mark.parametrize("kind", sorted(LARGE))
def test_unusual_return_values_are_bounded_and_wrong(env, kind):
    reward, info = score(env, "def min_cost(*a):\n" + LARGE[kind])
    assert_wrong(reward, info)
    assert_alive(env)


def test_a_function_that_never_returns_costs_only_its_own_test(env):
    """The first test's call swallows every timeout; the other two still run and pass."""
    hang = ("def min_cost(cost, m, n):\n    if cost[0][0] == 1:\n        import time\n"
            "        while True:\n            try:\n                time.sleep(60)\n"
            "            except BaseException:\n                pass\n"
            "    return {2: 12, 3: 16}[cost[0][0]]\n")
    _, info = score(env, hang)
    assert info["tests_correct"] == 2 and not info["all_pass"]
    assert_alive(env)


FORGED = {
    "garbage": "'not json'",
    "deep JSON": "'[' * 100000",
    "unknown tags": "'[[{\"v\": {\"t\": \"exec\", \"v\": \"import os\"}}]] * 1'",
    "unhashable set": "'[' + ','.join(['[{\"v\": {\"t\": \"set\", \"v\": [[1]]}}]'] * 3) + ']'",
    "a module for a value": "'[' + ','.join(['[{\"v\": {\"t\": \"module\", \"v\": \"os\"}}]'] * 3) + ']'",
    "a reply over its budget": "'[' + ','.join(['[{\"v\": 8, \"out\": \"' + 'x' * 200000 + '\"}]'] * 3) + ']'",
    "opaque claims": "'[' + ','.join(['[{\"v\": {\"t\": \"opaque\", \"type\": \"int\"}}]'] * 3) + ']'",
}


@pytest.mark.parametrize("kind", sorted(FORGED))
def test_forged_replies_are_the_agents_failure(env, kind):
    """The agent replaces the interpreter's probe handler: whatever it prints is only a
    claim about values, never an outcome, and never an infrastructure error."""
    forge = ("import sys\ng = sys._getframe(1).f_globals\n"
             f"def fake(ns, req):\n    g['pyscore'].reply({FORGED[kind]})\n    return 0\n"
             "g['REQUESTS']['probe'] = fake\n")
    reward, info = score(env, forge, "def min_cost(*a):\n" + WRONG)
    assert_wrong(reward, info)


def test_a_forged_value_nested_just_short_of_the_parsers_limit_is_the_agents_failure(env):
    """The host parsed a forged reply nested some 980 levels deep, then wrote it out
    again deeper still (the judge's request, the memo's keys): Python's recursion limit
    made the wrong answer a RewardError or a raw RecursionError. A reply nested deeper
    than any typed value is refused, whatever the depth."""
    for depth in range(800, 1001, 2):  # (the window moves with the depth of the stack)
        nested = "[" * depth + "]" * depth
        forge = ("import sys\ng = sys._getframe(1).f_globals\n"
                 "def fake(ns, req):\n"
                 f"    g['pyscore'].reply('[' + ','.join(['[{{\"v\": {nested}}}]'] * len(req['tests'])) + ']')\n"
                 "    return 0\n"
                 "g['REQUESTS']['probe'] = fake\n")
        reward, info = score(env, forge, "def min_cost(*a):\n" + WRONG)
        assert_wrong(reward, info)


def test_upstream_quirks_mode_scores_the_same_way():
    e = PythonEnv("mbpp", test_timeout=1.0, upstream_quirks=True)
    try:
        e.reset(options={"task": 0})
        e.step("def min_cost(*a):\n" + FUNCTION_ATTACKS["always-equal object"])
        assert e.evaluate().reward == 0.0
        e.reset(options={"task": 0})
        e.step(e.task.gold)
        assert e.step("submit min_cost")[1] == 1.0
    finally:
        e.close()


def test_a_module_claim_cannot_run_code_in_the_judge(env):
    """A forged reply may name any module for ``sys``; the judge only loads modules that
    compute (``antigravity`` would start a browser), so the claim is worth nothing."""
    forge = ("import sys\ng = sys._getframe(1).f_globals\n"
             "def fake(ns, req):\n"
             "    one = '[{\"v\": 0}, {\"v\": {\"t\": \"module\", \"v\": \"antigravity\"}}]'\n"
             "    g['pyscore'].reply('[' + ','.join([one] * 3) + ']')\n    return 0\n"
             "g['REQUESTS']['probe'] = fake\n")
    reward, info = score(env, forge, "def tuple_size(t):\n    return 0\n", task=595,
                         name="tuple_size")
    assert_wrong(reward, info)


def test_output_past_the_capture_does_not_garble_the_reply(env):
    """Bytes written straight to descriptor 1 (no newline) during a call are not the
    test's output (upstream captured only sys.stdout); the gold still scores 1."""
    env.reset(options={"task": 0})
    extra = ("_ic_gold = min_cost\ndef min_cost(*a):\n    import os\n"
             "    os.write(1, b'partial line')\n    return _ic_gold(*a)\n")
    reward, info = score(env, env.task.gold, extra)
    assert reward == 1.0 and info["all_pass"]


# Runs in the agent's interpreter: every process the supervisor forked besides this one
# (the warm spare that serves the next episode) is traced, its memory written (the small
# int 2 made 3: CPython's small ints sit at the same address in every fork of the
# supervisor) and its descriptors taken (``pidfd_getfd``); each outcome is printed.
POISON_SPARE = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": (434, 438), "aarch64": (434, 438)}[os.uname().machine]
me, out = os.getpid(), []
for n in os.listdir("/proc"):
    if not n.isdigit() or int(n) in (1, me):
        continue
    st = open("/proc/%s/stat" % n).read()
    if int(st[st.rfind(")") + 2:].split()[1]) != 1:
        continue
    pid = int(n)
    try:
        with open("/proc/%d/mem" % pid, "r+b", buffering=0) as m:
            m.seek(id(2) + 24)
            m.write((3).to_bytes(4, "little"))
        out.append("mem-written")
    except OSError as e:
        out.append("mem-" + (os.strerror(e.errno) if e.errno else str(e)))
    pidfd = libc.syscall(NR[0], pid, 0)
    taken = [fd for fd in range(256) if pidfd >= 0 and libc.syscall(NR[1], pidfd, fd, 0) >= 0]
    out.append("fds-taken:%s" % taken if taken else "fds-none")
    out.append("ptrace-ok" if libc.ptrace(16, pid, 0, 0) == 0 else "ptrace-refused")
print("spares", out)
'''


@pytest.mark.parametrize("backend", backends())
def test_the_next_episodes_interpreter_cannot_be_poisoned_through_the_spare(backend):
    """The spare interpreter is forked while the agent's processes run, survives the
    reset and serves the next episode. It was dumpable: an agent wrote into its memory
    (the next episode's ``1 + 1`` was ``3``), and could trace it or take its descriptors
    (the supervisor's own, before it closed them). Now it is not dumpable until it is
    handed its episode (both backends: Docker's spare was written the same way)."""
    need(backend)
    env = PythonEnv("mbpp", backend=backend)
    try:
        env.reset(options={"task": 0})
        env.step("import time; time.sleep(0.2)")  # the spare is forked after the reset
        out = env.step(POISON_SPARE)[0]
        assert "spares [" in out and "mem-" in out, out
        assert "mem-written" not in out and "fds-taken" not in out \
            and "ptrace-ok" not in out, out
        env.reset(options={"task": 1})
        assert env.step("1 + 1")[0] == "2\n"
        # handed its episode, it is dumpable like any program (PR_GET_DUMPABLE)
        assert env.step("__import__('ctypes').CDLL(None).prctl(3, 0, 0, 0, 0)")[0] == "1\n"
    finally:
        env.close()


@pytest.mark.parametrize("action", ["submit nonexistent", "  submit   nonexistent  ",
                                    "submit if", "submit None", "submit lambda"])
def test_submitting_a_name_that_is_not_defined_scores_zero(env, action):
    """The gold's own function is defined, but the submission names another one: the
    named function is scored (it does not exist: 0, with the reason), never the one the
    tests happen to call."""
    env.reset(options={"task": 0})
    env.step(env.task.gold)
    _, reward, done, _, info = env.step(action)
    assert done and reward == 0.0 and not info["all_pass"], info
    assert info["submitted_function"] == action.split()[1]
    assert info.get("tests_correct", 0) == 0 and info["note"], info
