"""The SQL benchmark: Spider, WikiSQL and BIRD questions on MySQL-dialect databases
(SQLite or MariaDB)."""

from __future__ import annotations

from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

__all__ = ["BENCHMARK"]

REACT_EXAMPLES = """Question: What are the names of the teachers older than 40?
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
"""

PLAN_EXAMPLES = """Question: What is the average age of the singers from France?
Plan:
1. List the tables to find the one with singers.
2. Look at its columns to find the age and country columns.
3. Average the age over the rows whose country is France.

Question: Which department has the most employees?
Plan:
1. List the tables.
2. Find how employees are linked to departments.
3. Count employees per department and keep the largest.
"""

BENCHMARK = Benchmark(
    name="sql",
    env="intercode.envs.sql:SqlEnv",
    core="intercode.envs.core.sql:SqlCore",
    datasets={"spider-dev": "intercode.datasets.spider:load",
              "wikisql-dev": "intercode.datasets.wikisql:load",
              "bird-dev": "intercode.datasets.bird:load",
              "bird-dev-no-evidence": "intercode.datasets.bird:load"},
    default_dataset="spider-dev",
    description="Spider, WikiSQL, BIRD: questions answered with one SQL query on a database",
    parsing=Parsing(statement="sql", tags=frozenset({"sql", "mysql", "sqlite"})),
    prompting=Prompting(
        language="SQL", setting="MySQL Database",
        try_again_note=("To explore the database, ```SQL SHOW TABLES``` and "
                        "```SQL DESCRIBE <table>``` are useful.\n"),
        react_examples=REACT_EXAMPLES, plan_examples=PLAN_EXAMPLES),
    dialogue_limit=5,
    human_prompt="sql>",
    options=frozenset({"sql_backend", "mysql_url", "sql_max_rows", "sql_max_result_rows",
                       "sql_metric"}),
    user_dataset="intercode.datasets.user:load_user_dataset",
    test_dataset="spider-dev",
    echo="SELECT '{text}'",
)
