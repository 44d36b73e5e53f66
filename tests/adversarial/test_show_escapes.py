"""`intercode show` prints what agents and environments wrote literally: rich markup is
not markup, terminal escape sequences and other control characters are shown as
escapes (they must not clear, recolour or retitle the reader's terminal), and junk
that is not printable in UTF-8 does not crash the command."""

from __future__ import annotations

import io
import json

import pytest

from intercode.cli import main
from intercode.llm.message_ids import message_id
from intercode.report.show import show

MARKUP = "[bold]x[/] [/] [link=file:///etc/passwd]y[/link] :smile: [/bold]"
HOSTILE = [
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b[31mred\x1b[0m",  # recolour
    "\x1b]0;owned\x07",  # set the window title
    "\x9b31m",  # a C1 control sequence introducer
    "line\rover",  # overwrite the line
    "nul\x00 bell\x07 bs\x08 del\x7f",
    "\u202eevil",  # right-to-left override
    "\ud800 lone",  # a lone surrogate (valid JSON, not encodable as UTF-8)
]
ESCAPED = ["\\x1b[2J\\x1b[H", "\\x1b[31mred\\x1b[0m", "\\x1b]0;owned\\x07", "\\x9b31m",
           "line\\x0dover", "nul\\x00 bell\\x07 bs\\x08 del\\x7f", "\\u202eevil",
           "\\ud800 lone"]
RAW = ["\x1b[2J", "\x1b[31m", "\x1b]0;", "\x9b", "\r", "\x00", "\x07", "\x08", "\x7f",
       "\u202e"]
OBSERVATION = "\n".join([MARKUP, *HOSTILE, "[/]end"])
SYSTEM = "system prompt [/]"
PROMPT = "the task \x1b[5m[blink]"


@pytest.fixture
def hostile_run(tmp_path):
    ids = [message_id("system", SYSTEM), message_id("user", PROMPT)]
    turn = {"action": MARKUP + "\x1b[8m", "observation": OBSERVATION, "reward": 0.0,
            "valid": True, "submit": False, "exit_code": 0, "timed_out": False,
            "env_s": 0.01,
            "llm": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.1,
                    "reply": "[/bold] \x1b[?1049h reply", "prompts": [ids]}}
    record = {"env": "sql", "dataset": "spider-dev", "task": 0, "query": "[red]q[/red] \x1b[1m",
              "agent": "try-again", "status": "ok", "reward": 0.0, "success": False,
              "turns": [turn], "category": "[blink]c\x1b[5m", "error": None,
              "agent_fault": "[/] broke \x1b[31m", "reward_info": {"note": "\x1b[5m[/]"},
              "schema": 2, "extra": {}}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "messages.jsonl").write_text("".join(
        json.dumps({"id": i, "role": r, "content": c}) + "\n"
        for i, (r, c) in zip(ids, [("system", SYSTEM), ("user", PROMPT)], strict=True)))
    return tmp_path, record


def test_a_transcript_prints_hostile_text_literally(hostile_run, capsys):
    folder, _ = hostile_run
    assert main(["show", str(folder), "--task", "0"]) == 0
    out = capsys.readouterr().out
    out.encode("utf-8")  # printable: no lone surrogate got through
    for raw in RAW:
        assert raw not in out, repr(raw)
    assert "\x1b" not in out  # off a terminal: no escape codes at all
    for text in (MARKUP, *ESCAPED, "[/]end", "[/bold] \\x1b[?1049h reply", SYSTEM,
                 "the task \\x1b[5m[blink]", "[red]q[/red] \\x1b[1m", "[blink]c\\x1b[5m",
                 "[/] broke \\x1b[31m", MARKUP + "\\x1b[8m"):
        assert text in out, text
    assert '"note": "\\u001b[5m[/]"' in out  # reward info is JSON, escaped as JSON


def test_on_a_terminal_only_our_own_codes_reach_it(hostile_run):
    folder, _ = hostile_run

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    for task in (0, None):
        stream = Tty()
        show(str(folder), task=task, stream=stream)
        out = stream.getvalue()
        out.encode("utf-8")
        for raw in ("\x1b[2J", "\x1b]0;", "\x9b", "\r", "\x00", "\x07", "\x08", "\u202e",
                    "\x1b[?1049h", "\x1b[8m"):
            assert raw not in out, (task, repr(raw))
        assert "\x1b[" in out  # rich's own colours are there
        if task == 0:
            assert "[/]end" in out and "\\x1b[2J\\x1b[H" in out


def test_the_summary_and_the_json_too(hostile_run, capsys):
    folder, _ = hostile_run
    assert main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "[blink]c\\x1b[5m" in out and "\x1b" not in out
    assert main(["show", str(folder), "--task", "0", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.isascii()
    data = json.loads(out)
    assert data["turns"][0]["observation"] == OBSERVATION  # exact, lone surrogate included
    assert {m["content"] for m in data["messages"].values()} == {SYSTEM, PROMPT}
