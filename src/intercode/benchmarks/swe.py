"""IC-SWE-bench: fix a real repository's issue through a shell; the tests decide."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

if TYPE_CHECKING:
    from intercode.datasets.tasks import Task

__all__ = ["BENCHMARK", "apply_gold"]

TRY_AGAIN_NOTE = (
    "You are in /testbed, a git repository at the commit where the issue was reported. "
    "Change the repository's code so that the issue is fixed; do not edit its tests (changes "
    "to test files and test configuration are not handed in). Each reply is one bash command. "
    "Inspect the code with grep, sed -n and cat, edit it with sed -i, a here-document or a small "
    "python3 script, and run the code or the tests to check. `submit` hands in your changes "
    "(the repository's diff against its commit) and ends the task.\n")

REACT_EXAMPLES = """Question: `median([])` raises IndexError; it should raise ValueError("empty data").
Thought 1: I find where median is defined.
Action 1: execute[grep -rn "def median" --include=*.py .]
Observation 1: ./stats/core.py:12:def median(values):
Thought 2: I read the function.
Action 2: execute[sed -n 12,20p stats/core.py]
Observation 2: def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
Thought 3: An empty list must be refused before indexing.
Action 3: execute[sed -i '13i\\    if not values:\\n        raise ValueError("empty data")' stats/core.py]
Observation 3: No output
Thought 4: I check the new behaviour.
Action 4: execute[python3 -c "from stats.core import median; median([])"]
Observation 4: ValueError: empty data
Thought 5: The issue is fixed; I hand in the change.
Action 5: submit
"""

PLAN_EXAMPLES = """Question: `median([])` raises IndexError; it should raise ValueError("empty data").
Plan:
1. Find where median is defined (grep).
2. Read the function.
3. Add a check for empty input that raises ValueError("empty data").
4. Run the function on an empty list to check, then submit.
"""


def apply_gold(task: Task) -> str:
    """The action that applies a task's reference patch in ``/testbed`` (``git apply``
    reading a here-document whose end marker the patch does not contain)."""
    patch = task.gold if task.gold.endswith("\n") else task.gold + "\n"
    marker = "INTERCODE_GOLD_" + hashlib.sha256(patch.encode()).hexdigest()[:16]
    return f"cd /testbed && git apply --verbose - <<'{marker}'\n{patch}{marker}"


BENCHMARK = Benchmark(
    name="swe",
    env="intercode.envs.swe:SweEnv",
    core="intercode.envs.core.swe:SweCore",
    datasets={"swe-demo": "intercode.datasets.swe:load",
              "ic-swe-bench": "intercode.datasets.swe:load"},
    default_dataset="swe-demo",
    description="IC-SWE-bench: fix a repository's issue through a bash shell; its tests decide",
    parsing=Parsing(prefixes=("bash:", "$ "),
                    tags=frozenset({"bash", "sh", "shell", "console"})),
    prompting=Prompting(
        language="bash", setting="a software repository (Bourne shell)",
        try_again_note=TRY_AGAIN_NOTE,
        react_goal=("fix an issue in the code of the git repository in /testbed through a "
                    "bash shell, without editing its tests"),
        react_submit="(2) submit, which hands in the repository's changes and ends the task",
        execute_note=" When the issue is fixed, reply `submit`.",
        react_examples=REACT_EXAMPLES, plan_examples=PLAN_EXAMPLES,
        tools_note=TRY_AGAIN_NOTE),
    dialogue_limit=5,
    human_prompt="testbed$",
    multiline_input=True,
    gold_action=apply_gold,
    options=frozenset({"test_timeout", "repo_mirror"}),
    user_dataset="intercode.datasets.swe:load_instances",
    test_dataset="swe-demo",
    sandbox_packages=("python3-venv",),  # intercode.swe.build.PACKAGES
    extra={"validate_noop": True, "binary_reward": True},
    max_turns=30,
)
