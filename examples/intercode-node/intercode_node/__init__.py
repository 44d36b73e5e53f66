"""intercode-node: a Node.js benchmark for intercode, as a plugin package.

``BENCHMARK`` is what the entry point ``intercode.benchmarks: node`` names. It is built on
first access (a module ``__getattr__``): importing ``intercode`` loads every plugin, so a
plugin that imported ``intercode`` at the top of this module would be only partly
initialized when its own entry point is loaded (``import intercode_node`` first).
"""

from __future__ import annotations

from typing import Any

REACT_EXAMPLES = """Question: Write a function `sumSquares(arr)` that returns the sum of the squares of the numbers in `arr`. For example, sumSquares([1, 2]) returns 5.
Thought 1: I define the function and try it.
Action 1: execute[function sumSquares(arr) {
  return arr.reduce((s, x) => s + x * x, 0);
}]
Observation 1: No output
Thought 2: I check the example.
Action 2: execute[sumSquares([1, 2])]
Observation 2: 5
Thought 3: It works.
Action 3: submit[sumSquares]

Question: Write a function `reverseWords(s)` that returns the words of `s` in reverse order. For example, reverseWords("a b c") returns "c b a".
Thought 1: I split, reverse and join, and print the example.
Action 1: execute[function reverseWords(s) {
  return s.split(' ').reverse().join(' ');
}
console.log(reverseWords('a b c'))]
Observation 1: c b a
Thought 2: Right.
Action 2: submit[reverseWords]
"""

PLAN_EXAMPLES = """Question: Write a function `maxOfThree(a, b, c)` that returns the largest argument. For example, maxOfThree(1, 5, 3) returns 5.
Plan:
1. Define function maxOfThree(a, b, c) returning Math.max(a, b, c).
2. Call it on the example to check it.

Question: Write a function `countVowels(s)` that counts the vowels of `s`. For example, countVowels("banana") returns 3.
Plan:
1. Define function countVowels(s) counting the characters of s that match /[aeiou]/i.
2. Check it on "banana".
"""


def submit_function(task: Any) -> str:
    """``submit <the task's function>``."""
    return f"submit {getattr(task, 'entry_point', '')}".strip()


def __getattr__(name: str) -> Any:
    if name != "BENCHMARK":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

    if "BENCHMARK" in globals():  # built by the plugin loading that the import started
        return globals()["BENCHMARK"]
    benchmark = Benchmark(
        name="node",
        env="intercode_node.env:NodeEnv",
        datasets={"node-basic": "intercode_node.env:load"},
        default_dataset="node-basic",
        description="JavaScript functions in a Node.js interpreter, checked by hidden tests",
        parsing=Parsing(submit_argument=True, tags=frozenset({"js", "javascript", "node"})),
        prompting=Prompting(
            language="javascript", setting="Node.js interpreter",
            try_again_note=("Define the function the question asks for, with the name it "
                            "gives; hidden tests check your definition after each reply.\n"),
            react_goal=("write the JavaScript function a question asks for, in a Node.js "
                        "interpreter"),
            react_submit=("(2) submit[<function name>], which hands in that function to be "
                          "tested and ends the task"),
            failed_definition="The function did not pass the tests. Please try again.",
            react_examples=REACT_EXAMPLES, plan_examples=PLAN_EXAMPLES),
        human_prompt="node>",
        multiline_input=True,
        gold_submit=submit_function,
        test_dataset="node-basic",
        sandbox_packages=("nodejs",),  # the pinned sandbox root gets Node.js
        echo="console.log('{text}')",
    )
    globals()["BENCHMARK"] = benchmark
    return benchmark
