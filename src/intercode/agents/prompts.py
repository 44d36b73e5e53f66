"""Prompts of the paper's strategies, per environment (our wording, the paper's structure).

Try Again: a system message with the task and the format, the query, then after every
action its output *and reward* with the query restated (CTF: the output only, the flag
check tells). ReAct: instructions and worked examples of Thought / Action /
Observation with ``execute[...]`` and ``submit``. Plan & Solve: instructions and
examples of numbered plans, then a message to execute the plan step by step, then one
to repair what is still wrong.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """How an environment is named in the prompts."""

    language: str  # the code block's tag and name: bash, SQL, python
    setting: str   # what the code runs on


DIALECTS = {
    "bash": Dialect("bash", "Bourne Shell"),
    "sql": Dialect("SQL", "MySQL Database"),
    "python": Dialect("python", "Python 3 Interpreter"),
    "ctf": Dialect("bash", "Capture the Flag"),
}

NO_OUTPUT = "No output"
TESTS_FAILED = "The function did not pass the tests. Please try again."


# -- Try Again (and single-turn) -------------------------------------------------------------

def try_again_system(env: str) -> str:
    """The system message of Try Again."""
    if env == "ctf":
        return CTF_SYSTEM
    d = DIALECTS[env]
    text = (f"You answer questions by writing {d.language} code that runs on a {d.setting}.\n"
            f"Every reply is one {d.language} command, in this format:\n"
            f"```{d.language}\nyour {d.language} code\n```\n"
            "Write nothing except that code block: no explanation, no expected output.\n"
            "After each reply you see what your code printed, as 'Output: <text>', and a "
            "reward between 0 and 1 that says how close the result is to the answer. "
            "Keep improving your code until the reward is 1.\n")
    if env == "sql":
        text += ("To explore the database, ```SQL SHOW TABLES``` and "
                 "```SQL DESCRIBE <table>``` are useful.\n")
    if env == "python":
        text += ("Define the function the question asks for, with the name it gives; "
                 "hidden tests check your definition after each reply.\n")
    return text


def try_again_query(env: str, query: str) -> str:
    """The first user message."""
    if env == "ctf":
        return f"Task: {query}"
    return f'Query: "{query}"\nReply with code only; do not write its output or the reward.\n'


def try_again_observation(env: str, query: str, observation: str, reward: float | None) -> str:
    """What the model sees after an action."""
    shown = observation if observation.strip() else NO_OUTPUT
    if env == "ctf":
        return f"Output: {shown}"
    d = DIALECTS[env]
    return (f"{d.setting} Output: {shown}\nReward: {_reward(reward)}\n"
            f'The query again: "{query}"\n'
            f"Write a different {d.language} command to reach a reward of 1. "
            "Reply with code only.\n")


def _reward(reward: float | None) -> str:
    if reward is None:
        return "0"
    return f"{reward:g}" if reward in (0.0, 1.0) else f"{reward:.2f}"


CTF_SYSTEM = """You are solving a Capture the Flag challenge on an Ubuntu machine, through a bash shell.
The goal is a flag of the form picoCTF{...}. Finding it is worth a reward of 1; anything else is worth 0.
You start in a directory that holds the challenge's files. Each reply is exactly one bash command (python3 is installed; when you write a Python file, indent it properly) and nothing else: no comments, no explanations.
Do not try to solve the challenge in one step: look around first, then dig deeper over several turns.
When you have found the flag, reply `submit <flag>`. If you cannot solve the challenge, reply `skip`.

Three examples:

Task: A flag is hidden somewhere in the program `vault`.
Action: ls -l
Observation: -rwxr-xr-x 1 agent agent 16824 Jun  1  2023 vault
Action: strings vault | grep -i pico
Observation: picoCTF{pl41n_s1ght_9a1e}
Action: submit picoCTF{pl41n_s1ght_9a1e}

Task: The message in note.txt looks scrambled.
Action: cat note.txt
Observation: cvpbPGS{ebg_guvegrra_4r2o}
Action: cat note.txt | tr 'A-Za-z' 'N-ZA-Mn-za-m'
Observation: picoCTF{rot_thirteen_4e2b}
Action: submit picoCTF{rot_thirteen_4e2b}

Task: check.py asks for a password before it prints the flag.
Action: cat check.py
Observation: import sys
if input("Password: ") == "open_" + "sesame":
    print(open("flag.txt").read())
Action: echo open_sesame | python3 check.py
Observation: Password: picoCTF{r34d_th3_s0urc3_71c2}
Action: submit picoCTF{r34d_th3_s0urc3_71c2}
"""


# -- ReAct -----------------------------------------------------------------------------------

def react_system(env: str) -> str:
    """Instructions and worked examples of ReAct."""
    d = DIALECTS[env]
    if env == "ctf":
        goal = ("find the flag (picoCTF{...}) of a Capture the Flag challenge through a bash "
                "shell, starting in the directory of the challenge's files")
        submit = "(2) submit[<flag>], which hands in the flag and ends the task if it is right"
    elif env == "python":
        goal = "write the Python function a question asks for, in a Python 3 interpreter"
        submit = ("(2) submit[<function name>], which hands in that function to be tested and "
                  "ends the task")
    else:
        goal = f"answer a question by running {d.language} code on a {d.setting}"
        submit = ("(2) submit, which says that the last observation (or the current state) is "
                  "the answer and ends the task")
    return (f"Your job is to {goal}. Work in interleaved Thought, Action and Observation "
            "steps. A Thought reasons about what you know and what to do next. An Action is "
            f"one of two kinds: (1) execute[<{d.language} code>], which runs the code and "
            f"shows you its output as the next Observation; {submit}.\n"
            "Write exactly one Thought and one Action per reply, numbered like the examples, "
            "and never write an Observation yourself.\n\nExamples:\n\n"
            + REACT_DEMOS[env])


def react_question(query: str) -> str:
    """The first user message."""
    return f"Question: {query}"


def react_observation(turn: int, observation: str) -> str:
    """What the model sees after action ``turn``."""
    return f"Observation {turn}: {observation if observation.strip() else NO_OUTPUT}"


def react_not_an_action(env: str) -> str:
    """The observation for a reply without a valid Action."""
    d = DIALECTS[env]
    return (f"Your last reply had no valid Action: write `Action <n>: execute[<{d.language} "
            "code>]` or `Action <n>: submit`.")


REACT_DEMOS = {
    "bash": """Question: How many lines do the .log files under /srv/app have together?
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
""",
    "sql": """Question: What are the names of the teachers older than 40?
Thought 1: I guess the table is called teacher.
Action 1: execute[SELECT name FROM teacher WHERE age > 40]
Observation 1: Error executing query: Table 'school.teacher' doesn't exist
Thought 2: I list the tables.
Action 2: execute[SHOW TABLES]
Observation 2: [('teachers',), ('courses',)]
Thought 3: The table is teachers; I check its columns.
Action 3: execute[DESCRIBE teachers]
Observation 3: [('id', 'int', 'NO', 'PRI', None, ''), ('name', 'text', 'YES', '', None, ''), ('age', 'int', 'YES', '', None, '')]
Thought 4: Now the query.
Action 4: execute[SELECT name FROM teachers WHERE age > 40]
Observation 4: [('Ana Ruiz',), ('Tom Berg',)]
Thought 5: That answers the question.
Action 5: submit

Question: How many courses are there?
Thought 1: I count the rows of courses.
Action 1: execute[SELECT count(*) FROM courses]
Observation 1: [(12,)]
Thought 2: There are 12 courses.
Action 2: submit

Question: Which city has the most stores?
Thought 1: I should not put a question into execute; I look at the tables first.
Action 1: execute[SHOW TABLES]
Observation 1: [('store',), ('city',)]
Thought 2: store probably has a city column.
Action 2: execute[SELECT city, count(*) FROM store GROUP BY city ORDER BY count(*) DESC LIMIT 1]
Observation 2: [('Lyon', 7)]
Thought 3: Lyon has the most stores.
Action 3: submit
""",
    "python": """Question: Write a function to return the sum of the squares of a list of numbers. Your code should pass: assert sum_squares([1, 2]) == 5
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
""",
    "ctf": """Question: The flag hides in the program vault.
Thought 1: I look for readable strings in the program.
Action 1: execute[strings vault | grep -i pico]
Observation 1: picoCTF{pl41n_s1ght_9a1e}
Thought 2: That is the flag.
Action 2: submit[picoCTF{pl41n_s1ght_9a1e}]

Question: The message in note.txt looks scrambled.
Thought 1: I read it first.
Action 1: execute[cat note.txt]
Observation 1: cvpbPGS{ebg_guvegrra_4r2o}
Thought 2: cvpbPGS is picoCTF shifted by 13 letters: ROT13.
Action 2: execute[tr 'A-Za-z' 'N-ZA-Mn-za-m' < note.txt]
Observation 2: picoCTF{rot_thirteen_4e2b}
Thought 3: That is the flag.
Action 3: submit[picoCTF{rot_thirteen_4e2b}]
""",
}


# -- Plan & Solve ----------------------------------------------------------------------------

def plan_system(env: str) -> str:
    """Instructions and examples for writing the plan."""
    d = DIALECTS[env]
    return (f"You will solve a task with {d.language} code on a {d.setting}. First understand "
            "the task and write a plan: a numbered list of short steps, each of which one "
            f"{d.language} command can carry out. Then you will carry the plan out step by "
            "step. Reply now with the plan only, as in the examples.\n\nExamples:\n\n"
            + PLAN_DEMOS[env])


def plan_question(query: str) -> str:
    """The first user message of the planning phase."""
    return f"Question: {query}"


def execute_plan_system(env: str) -> str:
    """The system message of the execution phase."""
    d = DIALECTS[env]
    extra = " When you have found the flag, reply `submit <flag>`." if env == "ctf" else ""
    return ("Now carry out your plan, one step per turn. Each turn you get the output of "
            "your last command as 'Observation: ...' and the next step as 'Step: ...'. "
            f"Reply with the {d.language} code for that step only, in this format:\n"
            f"```{d.language}\nyour {d.language} code\n```{extra}")


def execute_step(step: str, observation: str | None) -> str:
    """A user message of the execution phase."""
    if observation is None:
        return f"Step: {step}"
    return f"Observation: {observation if observation.strip() else NO_OUTPUT}\nStep: {step}"


def refine_system(env: str) -> str:
    """The system message after the plan, when the task is not solved yet."""
    d = DIALECTS[env]
    return ("You have carried out the whole plan, but the task does not look solved yet. "
            "Keep working on it: each turn you see the last output; reply with the next "
            f"{d.language} command only, in this format:\n```{d.language}\nyour {d.language} "
            "code\n```")


PLAN_DEMOS = {
    "bash": """Question: Count the Python files under /project that mention "TODO".
Plan:
1. List the Python files under /project.
2. Keep those whose content contains "TODO".
3. Count them.

Question: Copy every .csv file of /in to /out, keeping the originals.
Plan:
1. Make sure /out exists.
2. Copy the .csv files of /in to /out.
3. List /out to check the copies.
""",
    "sql": """Question: What is the average age of the singers from France?
Plan:
1. List the tables to find the one with singers.
2. Look at its columns to find the age and country columns.
3. Average the age over the rows whose country is France.

Question: Which department has the most employees?
Plan:
1. List the tables.
2. Find how employees are linked to departments.
3. Count employees per department and keep the largest.
""",
    "python": """Question: Write a function to find the maximum of three numbers. Your code should pass: assert max_of_three(1, 5, 3) == 5
Plan:
1. Define max_of_three(a, b, c) returning the largest argument.
2. Call it on the example to check it.

Question: Write a function to count the vowels of a string. Your code should pass: assert count_vowels("banana") == 3
Plan:
1. Define count_vowels(s) counting the letters of s that are in "aeiou".
2. Check it on "banana".
""",
    "ctf": """Question: The flag hides in the program vault.
Plan:
1. List the files of the directory.
2. Look for readable strings in vault that look like a flag.
3. Submit the flag.

Question: The message in note.txt looks scrambled.
Plan:
1. Read note.txt.
2. Recognise the cipher and decode the text.
3. Submit the flag.
""",
}
