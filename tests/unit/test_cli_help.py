"""``intercode --help`` opens by saying what intercode is, for a user."""

from __future__ import annotations

import pytest

from intercode.cli import main


def test_help_opens_with_what_intercode_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    opening = " ".join(lines[lines.index("") + 1:][:3])  # the first lines after the usage
    assert opening.startswith("intercode runs interactive coding tasks"), opening
    assert "agents" in opening and "sandbox" in opening, opening
    for word in ("command line", "configures logging", "``"):
        assert word not in text, word
    for command in ("eval", "play", "validate", "serve"):
        assert f"`{command}`" in text, command
