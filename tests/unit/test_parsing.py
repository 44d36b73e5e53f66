"""Replies become actions without any change to the code (unlike upstream's parsers)."""

from __future__ import annotations

import pytest

from intercode.agents.parsing import (
    Parsed,
    first_sql_statement,
    parse_code,
    parse_react,
    retry_message,
    truncate_observation,
)


@pytest.mark.parametrize(("reply", "env", "expected"), [
    # whitespace and case inside code survive (upstream lowercased and collapsed them)
    ('```bash\ngrep "Error  Code" /var/log/*.log | wc -l\n```', "bash",
     Parsed("code", 'grep "Error  Code" /var/log/*.log | wc -l')),
    ("```python\ndef f(x):\n    if x:\n        return 1\n    return 2\n```", "python",
     Parsed("code", "def f(x):\n    if x:\n        return 1\n    return 2")),
    ("Sure:\n```shell\nls -la /tmp\n```\nand then ```bash\nrm -rf /\n```", "bash",
     Parsed("code", "ls -la /tmp")),
    ("```\nfind . -name '*.py'\n```", "bash", Parsed("code", "find . -name '*.py'")),
    ("```ls -la```", "bash", Parsed("code", "ls -la")),
    ("ls -la", "bash", Parsed("code", "ls -la")),
    ("bash: ls /", "bash", Parsed("code", "ls /")),
    ("", "bash", Parsed("none")),
    ("   \n", "python", Parsed("none")),
    # SQL: the first statement, quotes respected; a reply without SQL has no action
    ("```sql\nSELECT name FROM t WHERE a = 'x;y'; DROP TABLE t;\n```", "sql",
     Parsed("code", "SELECT name FROM t WHERE a = 'x;y'")),
    ("The answer is SELECT count(*) FROM singer; I think.", "sql",
     Parsed("code", "SELECT count(*) FROM singer")),
    ("```SQL\nSHOW TABLES\n```", "sql", Parsed("code", "SHOW TABLES")),
    ("```sql\nDROP TABLE singer\n```", "sql", Parsed("none")),
    ("I do not know which table holds it.", "sql", Parsed("none")),
    # submit and skip
    ("submit", "bash", Parsed("submit", "submit")),
    ("```\nsubmit\n```", "sql", Parsed("submit", "submit")),
    ("submit picoCTF{a_b}", "ctf", Parsed("submit", "submit picoCTF{a_b}")),
    ("submit add_numbers", "python", Parsed("submit", "submit add_numbers")),
    ("skip", "ctf", Parsed("skip", "skip")),
    ("submitted_files=$(ls)", "bash", Parsed("code", "submitted_files=$(ls)")),
])
def test_parse_code(reply, env, expected):
    assert parse_code(reply, env) == expected


def test_first_sql_statement_handles_quotes_escapes_and_comments():
    assert first_sql_statement("SELECT 'it''s; fine' FROM t; x") == "SELECT 'it''s; fine' FROM t"
    assert first_sql_statement('SELECT "a\\";b" FROM t;') == 'SELECT "a\\";b" FROM t'
    assert first_sql_statement("SELECT 1 -- no; end\n, 2; SELECT 3") == "SELECT 1 -- no; end\n, 2"
    assert first_sql_statement("SELECT `we;ird` FROM t") == "SELECT `we;ird` FROM t"


@pytest.mark.parametrize(("reply", "env", "thought", "action"), [
    ("Thought 1: List the tables.\nAction 1: execute[SHOW TABLES; SELECT 1]", "sql",
     "List the tables.", Parsed("code", "SHOW TABLES")),
    ("Thought 2: Count.\nAction 2: execute[cat a | grep -c 'x]y']\nObservation 2: 3", "bash",
     "Count.", Parsed("code", "cat a | grep -c 'x]y'")),
    ("Thought: ok\nAction: execute[def f(x):\n    return x]", "python", "ok",
     Parsed("code", "def f(x):\n    return x")),
    ("Thought 3: Done.\nAction 3: submit", "bash", "Done.", Parsed("submit", "submit")),
    ("Thought: found it\nAction: submit[picoCTF{x_y}]", "ctf", "found it",
     Parsed("submit", "submit picoCTF{x_y}")),
    ("Thought: it works\nAction: submit[add]", "python", "it works",
     Parsed("submit", "submit add")),
    ("Thought 1: I need to think more.", "bash", "Thought 1: I need to think more.",
     Parsed("none")),
    ("Thought 1: hm\nAction 1: run ls", "bash", "hm", Parsed("none")),
])
def test_parse_react(reply, env, thought, action):
    assert parse_react(reply, env) == (thought, action)


def test_retry_message_is_the_papers():
    text = retry_message("sql")
    assert text.startswith("No SQL code was found in your last response.")
    assert "```SQL\nYour SQL code here\n```" in text


def test_truncation_by_rows_and_characters():
    rows = repr([(i, f"a, b') {i}", None) for i in range(80)])
    cut = truncate_observation(rows, 1000, 50)
    assert eval(cut) == eval(rows)[:50]
    assert truncate_observation(repr([(1,), (2,)]), 1000, 50) == "[(1,), (2,)]"
    assert truncate_observation("x" * 1500, 1000, 50) == "x" * 1000
    assert truncate_observation("short", 1000, 50) == "short"
