"""`intercode play`: a person drives the environment from a terminal."""

from __future__ import annotations

import io
import subprocess
import sys

from intercode.play import Terminal, play
from intercode.sandbox.limits import Limits


def scripted(lines: list[str]) -> tuple[Terminal, io.StringIO]:
    feed = iter(lines)
    out = io.StringIO()

    def read(prompt: str) -> str:
        out.write(prompt)
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return Terminal(read=read, out=out), out


def test_a_session_solves_a_task():
    term, out = scripted(["ls /project", ":score", "cat /project/src/*.py \\", "| wc -l",
                          "submit", "n"])
    assert play("bash", "bash-demo", 0, Limits(), term) == 0
    text = out.getvalue()
    assert "Count the lines of all Python files" in text
    assert "data\ndocs\nlogs\nsrc" in text
    assert "score if submitted now: 0.67" in text
    assert "reward: 1.00" in text and "solved" in text


def test_skip_then_quit_with_ctrl_d():
    term, out = scripted(["skip", "y"])
    assert play("bash", "bash-demo", 1, Limits(), term) == 0
    assert "skipped (reward 0)" in out.getvalue()


def test_the_command_reads_a_pipe():
    proc = subprocess.run([sys.executable, "-m", "intercode", "play", "bash", "--dataset",
                           "bash-demo", "--task", "7"], input="find /project -type f | wc -l\nsubmit\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "reward: 1.00" in proc.stdout


def test_a_sql_session():
    term, out = scripted(["SHOW TABLES", ":score", "SELECT Name FROM people", "submit", "n"])
    assert play("sql", "spider-dev", 0, Limits(), term) == 0
    text = out.getvalue()
    assert "database poker_player" in text and "sql>" in text
    assert "[('people',), ('poker_player',)]" in text
    assert "kendall tau n/a" in text and "reward:" in text


def test_a_ctf_session_survives_a_wrong_flag_and_an_unavailable_task():
    term, out = scripted(["submit picoCTF{guess}", "cat flag", "submit PICOCTF{S4N1TY_V3R1F13D_2FD6ED29}",
                          "n"])
    assert play("ctf", "intercode-ctf", 4, Limits(), term) == 0
    text = out.getvalue()
    assert "The flag is wrong" in text and "reward: 1.00" in text
    term, out = scripted(["n"])
    assert play("ctf", "intercode-ctf", 9, Limits(), term) == 0
    assert "task unavailable: task 9 needs the network" in out.getvalue()


def test_a_swe_session_fixes_the_issue_with_a_score_on_the_way():
    term, out = scripted(["grep -n 'split' textkit/words.py", ":score",
                          "sed -i 's/text.split(\" \")/text.split()/' textkit/words.py",
                          "git diff --stat", "submit", "n"])
    assert play("swe", "swe-demo", 0, Limits(), term) == 0
    text = out.getvalue()
    assert "count_words" in text and "testbed$" in text
    assert "score if submitted now: 0.00" in text
    assert "1 file changed" in text and "reward: 1.00" in text
