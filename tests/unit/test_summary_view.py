"""The end-of-run summary as tables: plain text off a terminal, colours on one."""

from __future__ import annotations

import io

from intercode.runner.summary import format_summary as runner_format_summary
from intercode.runner.summary import summarize
from intercode.runner.summary_view import format_summary, print_summary


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def rec(task, status, reward=None, category="easy", **more):
    return {"task": task, "status": status, "reward": reward, "category": category,
            "success": None if reward is None else reward == 1.0, "turns": [{}, {}], **more}


LLM = {"calls": 4, "prompt_tokens": 12000, "completion_tokens": 340, "latency_s": 2.5}


def summary():
    records = {0: rec(0, "ok", 1.0, best_turn=1, llm=LLM),
               1: rec(1, "ok", 0.25, category="hard", llm=LLM, known_issue="gold is wrong"),
               2: rec(2, "error", category="hard"),
               3: rec(3, "skipped", category=None, error="needs the network")}
    return summarize(records, requested=5, known={1})


def test_the_headline_and_the_categories_as_plain_text():
    text = format_summary(summary())
    lines = text.splitlines()
    assert lines[0] == "Summary"
    assert "episodes       4/5 finished: 2 ok, 1 errors, 1 skipped, 1 missing" in lines
    assert ("success        1/4 = 25.0% of the tasks (errors and missing count as failures)"
            in lines)
    assert "success ok     50.0% of the 2 ok episodes" in lines
    assert "reward         mean 0.312 over the tasks; 0.625 over the ok episodes" in lines
    assert "turns          mean 2.00" in lines
    assert ("model          8 calls, 24,000 prompt + 680 completion tokens, 5.0 s waiting "
            "(0.62 s a call)") in lines
    assert "known issues   1 task; success without them 33.3%" in lines
    assert "error tasks    2" in lines
    assert "skipped tasks  3 (they cannot run here; left out of the rates)" in lines
    by = lines[lines.index("By category"):]
    header = next(line for line in by if "category" in line and "episodes" in line)
    assert header.split() == ["category", "episodes", "errors", "success", "rate", "mean",
                              "reward"]
    assert next(line for line in by if line.split()[:1] == ["hard"]).split() == [
        "hard", "2", "1", "0", "0.0%", "0.125"]
    assert next(line for line in by if line.split()[:1] == ["easy"]).split() == [
        "easy", "1", "0", "1", "100.0%", "1.000"]
    assert "\x1b" not in text and all(line == line.rstrip() for line in lines)
    assert runner_format_summary(summary()) == text  # the runner's name for it


def test_without_categories_model_or_errors_the_table_is_short():
    text = format_summary(summarize({0: rec(0, "ok", 1.0, category=None)}, requested=1))
    assert "By category" not in text and "model" not in text and "error tasks" not in text
    assert "success        1/1 = 100.0% of the tasks" in text


def test_category_names_are_printed_literally():
    records = {0: rec(0, "ok", 1.0, category="[bold red]x[/] \x1b[2J")}
    text = format_summary(summarize(records, requested=1))
    assert "[bold red]x[/] \\x1b[2J" in text and "\x1b" not in text


def test_printed_plain_off_a_terminal_and_in_colour_on_one():
    plain = io.StringIO()
    print_summary(summary(), plain)
    assert plain.getvalue() == format_summary(summary()) + "\n"
    tty = FakeTty()
    print_summary(summary(), tty)
    assert "\x1b[" in tty.getvalue() and "25.0% of the tasks" in tty.getvalue()
