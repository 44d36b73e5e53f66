"""intercode's tasks through the whole Inspect path (mockllm scripted with gold and wrong
actions), on every environment; the rewards equal ``intercode eval``'s for the same actions."""

from __future__ import annotations

import pytest
from inspect_helpers import details, fenced, run_inspect, run_intercode, scores, tasks

from intercode.benchmarks import get
from intercode.integrations.inspectai.tasks import intercode_task

# (env, dataset, task indices, a wrong action)
CASES = [
    ("bash", "bash-demo", [0, 1, 2], "echo wrong"),
    ("sql", "spider-dev", [0, 1, 2], "SELECT 1"),
    ("python", "mbpp", [0, 1], "def nothing():\n    return 0"),
    ("ctf", "intercode-ctf", [0], "submit picoCTF{not_the_flag}"),
    ("swe", "swe-demo", [0, 1], "echo '# not a fix' >> textkit/words.py"),
]


@pytest.mark.parametrize(("env", "dataset", "indices", "wrong"), CASES,
                         ids=[c[0] for c in CASES])
def test_try_again_gold_and_wrong_equal_intercode(env, dataset, indices, wrong, tmp_path):
    """Gold actions score 1.0; a wrong action then the gold, and a wrong one alone, score
    what intercode's runner gives for the same actions."""
    bench = get(env)
    picked = tasks(dataset, indices)
    first, *rest = indices
    plans: dict[int, list[str]] = {i: [bench.gold_action(picked[i])] for i in rest}
    plans[first] = [wrong, bench.gold_action(picked[first])]
    scripts = {picked[i].query: [fenced(env, a) for a in plan] for i, plan in plans.items()}
    log = run_inspect(intercode_task(env, dataset, tasks=indices, turns=4), scripts, tmp_path)
    got, why = scores(log), details(log)
    assert set(got) == set(indices)
    for i in indices:
        assert got[i] == (1.0, True), (i, why[i])
        assert got[i] == run_intercode(env, dataset, i, plans[i], turns=4), (i, why[i])
        # the score's answer is the action that earned the reward (the gold, here)
        assert why[i][2]["score"]["action"].strip() == plans[i][-1].strip()
        # and its turn, counted from 1 as `intercode show` counts (the gold is the last)
        assert why[i][2]["score"]["best_turn"] == len(plans[i])
    # wrong only: below 1, and the same number as intercode's
    wrong_log = run_inspect(intercode_task(env, dataset, tasks=[first], turns=2),
                            {picked[first].query: [fenced(env, wrong), fenced(env, wrong)]},
                            tmp_path)
    reward, success = scores(wrong_log)[first]
    assert not success and reward < 1.0
    assert (reward, success) == run_intercode(env, dataset, first, [wrong, wrong], turns=2)


@pytest.mark.parametrize(("env", "dataset", "indices", "wrong"), CASES,
                         ids=[c[0] for c in CASES])
def test_react_agent_tools_gold_and_wrong(env, dataset, indices, wrong, tmp_path):
    """Inspect's react agent with execute()/submit(): the gold scores 1.0, a wrong action
    then submit scores what intercode gives for the same actions without Try Again."""
    bench = get(env)
    picked = tasks(dataset, indices[:2])
    scripts = {}
    plans = {}
    for n, (i, t) in enumerate(picked.items()):
        gold, final = bench.gold_action(t), bench.gold_submit(t)
        actions = [wrong, final] if n == 1 else [gold, final]
        if gold.startswith("submit"):  # CTF: the gold is the flag
            actions = [wrong] if n == 1 else [gold]
        plans[i] = actions
        calls = []
        for a in actions:
            if a.split()[0] == "submit":
                calls.append(("submit", {"answer": a[len("submit"):].strip()}))
            else:
                calls.append(("execute", {"code": a}))
        scripts[t.query] = calls
    log = run_inspect(intercode_task(env, dataset, strategy="react", tasks=list(picked),
                                     turns=4), scripts, tmp_path)
    got, why = scores(log), details(log)
    for n, i in enumerate(picked):
        expected = run_intercode(env, dataset, i, plans[i], try_again=False, turns=4)
        assert got[i] == expected, (i, plans[i], why[i])
        if n == 0:
            assert got[i] == (1.0, True)
        else:
            assert got[i][0] < 1.0


def test_unavailable_ctf_tasks_are_left_out_with_a_note():
    task = intercode_task("ctf", "intercode-ctf", tasks="0,1")
    ids = [s.id for s in task.dataset]
    skipped = task.metadata["intercode"]["skipped"]
    assert ids == [0] and "1" in skipped and "network" in skipped["1"]


def test_react_turn_limit_refuses_more_actions(tmp_path):
    """Past ``turns`` actions, execute() is a tool error (the gold is not run), and the
    reward is what intercode gives for the actions within the limit."""
    picked = tasks("bash-demo", [0])
    gold = get("bash").gold_action(picked[0])
    scripts = {picked[0].query: [("execute", {"code": "echo wrong"}),
                                 ("execute", {"code": gold}), ("submit", {"answer": ""})]}
    log = run_inspect(intercode_task("bash", "bash-demo", strategy="react", tasks=[0],
                                     turns=1), scripts, tmp_path)
    sample = log.samples[0]
    refused = [m for m in sample.messages if m.role == "tool" and m.error is not None]
    assert refused and "turn limit (1)" in refused[0].error.message
    got = scores(log)[0]
    assert got[0] < 1.0
    assert got == run_intercode("bash", "bash-demo", 0, ["echo wrong"], try_again=False,
                                turns=1)
