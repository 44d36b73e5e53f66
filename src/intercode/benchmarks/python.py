"""The Python benchmark: MBPP functions in a persistent interpreter, judged by hidden tests;
APPS programs, handed in as a file and judged by input/output tests."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

if TYPE_CHECKING:
    from intercode.datasets.tasks import Task

__all__ = ["APPS_PROGRAM", "APPS_SOURCE", "BENCHMARK"]

FUNCTION = re.compile(r"def\s+(\w+)\s*\(")

REACT_EXAMPLES = """Question: Write a function to return the sum of the squares of a list of numbers. Your code should pass: assert sum_squares([1, 2]) == 5
Thought 1: I define the function and try it.
Action 1: execute[def sum_squares(xs):
    return sum(x * x for x in xs)]
Observation 1: No output
Thought 2: I check the example.
Action 2: execute[sum_squares([1, 2])]
Observation 2: 5
Thought 3: It works.
Action 3: submit[sum_squares]

Question: Write a function to reverse the words of a sentence. Your code should pass: assert reverse_words("a b c") == "c b a"
Thought 1: I split, reverse and join.
Action 1: execute[def reverse_words(s):
    return " ".join(s.split()[::-1])
print(reverse_words("a b c"))]
Observation 1: c b a
Thought 2: Right.
Action 2: submit[reverse_words]
"""

PLAN_EXAMPLES = """Question: Write a function to find the maximum of three numbers. Your code should pass: assert max_of_three(1, 5, 3) == 5
Plan:
1. Define max_of_three(a, b, c) returning the largest argument.
2. Call it on the example to check it.

Question: Write a function to count the vowels of a string. Your code should pass: assert count_vowels("banana") == 3
Plan:
1. Define count_vowels(s) counting the letters of s that are in "aeiou".
2. Check it on "banana".
"""


APPS_SOURCE = "apps"  # the ``source`` of an APPS problem (``intercode.datasets.apps``)
APPS_PROGRAM = "solution.py"  # the file ``submit`` hands in by default


def submit_function(task: Task) -> str:
    """``submit <the gold's function>`` (the entry point the tests call); an APPS
    problem's gold is a program file: ``submit``."""
    if task.source == APPS_SOURCE:
        return "submit"
    match = FUNCTION.search(task.gold)
    return f"submit {match.group(1)}" if match else "submit"


def gold_code(task: Task) -> str:
    """The gold itself; an APPS problem's gold program is written to its file."""
    if task.source == APPS_SOURCE:
        return (f"with open({APPS_PROGRAM!r}, 'w', encoding='utf-8') as _f:\n"
                f"    _ = _f.write({task.gold!r})")
    return task.gold


MBPP = "intercode.datasets.mbpp:load"

BENCHMARK = Benchmark(
    name="python",
    env="intercode.envs.python:PythonEnv",
    core="intercode.envs.core.python:PythonCore",
    datasets={name: MBPP for name in ("mbpp", "mbpp-prompt", "mbpp-test", "mbpp-validation",
                                      "mbpp-train")}
    | {"apps": "intercode.datasets.apps:load"},
    default_dataset="mbpp",
    description="MBPP: Python functions checked by hidden assert statements",
    parsing=Parsing(submit_argument=True, tags=frozenset({"python", "python3", "py"})),
    prompting=Prompting(
        language="python", setting="Python 3 Interpreter",
        try_again_note=("Define the function the question asks for, with the name it gives; "
                        "hidden tests check your definition after each reply.\n"),
        react_goal="write the Python function a question asks for, in a Python 3 interpreter",
        react_submit=("(2) submit[<function name>], which hands in that function to be tested "
                      "and ends the task"),
        failed_definition="The function did not pass the tests. Please try again.",
        react_examples=REACT_EXAMPLES, plan_examples=PLAN_EXAMPLES,
        submit_answer="the name of the function to test",
        tools_note=("Define the function the question asks for, with the name it gives, "
                    "try it, then submit its name; hidden tests check it.\n")),
    dialogue_limit=None,
    human_prompt=">>>",
    multiline_input=True,
    gold_action=gold_code,
    gold_submit=submit_function,
    options=frozenset({"test_timeout", "gold_cache"}),
    user_dataset="intercode.datasets.user:load_user_dataset",
    test_dataset="mbpp-prompt",
    echo="print('{text}')",
)
