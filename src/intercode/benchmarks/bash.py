"""The Bash benchmark: NL2Bash tasks on prepared file systems (InterCode's Bash)."""

from __future__ import annotations

from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

__all__ = ["BENCHMARK"]

REACT_EXAMPLES = """Question: How many lines do the .log files under /srv/app have together?
Thought 1: I first look at what /srv/app holds.
Action 1: execute[ls -R /srv/app]
Observation 1: /srv/app:
logs  README
/srv/app/logs:
a.log  b.log
Thought 2: Two log files; I count their lines together.
Action 2: execute[cat /srv/app/logs/*.log | wc -l]
Observation 2: 42
Thought 3: The answer is 42.
Action 3: submit

Question: Make a file done.txt in /tmp holding the word ok.
Thought 1: I write the word into the file.
Action 1: execute[echo ok > /tmp/done.txt]
Observation 1: No output
Thought 2: I check the file.
Action 2: execute[cat /tmp/done.txt]
Observation 2: ok
Thought 3: The file is right.
Action 3: submit

Question: Which is the largest file in /data?
Thought 1: I sort the files of /data by size.
Action 1: execute[ls -S /data | head -n 1]
Observation 1: ls: cannot access '/data': No such file or directory
Thought 2: There is no /data; maybe it is /workspace/data.
Action 2: execute[ls -S /workspace/data | head -n 1]
Observation 2: dump.bin
Thought 3: dump.bin is the largest.
Action 3: submit
"""

PLAN_EXAMPLES = """Question: Count the Python files under /project that mention "TODO".
Plan:
1. List the Python files under /project.
2. Keep those whose content contains "TODO".
3. Count them.

Question: Copy every .csv file of /in to /out, keeping the originals.
Plan:
1. Make sure /out exists.
2. Copy the .csv files of /in to /out.
3. List /out to check the copies.
"""

NL2BASH = "intercode.datasets.nl2bash:load"

BENCHMARK = Benchmark(
    name="bash",
    env="intercode.envs.bash:BashEnv",
    core="intercode.envs.core.bash:BashCore",
    datasets={name: NL2BASH for name in ("nl2bash", "nl2bash-fs1", "nl2bash-fs2",
                                         "nl2bash-fs3", "nl2bash-fs4", "bash-test",
                                         "bash-demo")},
    default_dataset="nl2bash",
    play_dataset="nl2bash-fs1",
    description="NL2Bash: natural-language file-system tasks for a Bourne shell",
    parsing=Parsing(prefixes=("bash:", "$ "),
                    tags=frozenset({"bash", "sh", "shell", "console", "zsh"})),
    prompting=Prompting(language="bash", setting="Bourne Shell",
                        react_examples=REACT_EXAMPLES, plan_examples=PLAN_EXAMPLES),
    dialogue_limit=7,
    options=frozenset({"gold_cache", "answer_check"}),
    human_prompt="$",
    user_dataset="intercode.datasets.user:load_user_dataset",
    test_dataset="bash-demo",
)
