"""docs/security.md names the tests that cover each attack: every name must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_the_threat_model_cites_exists():
    doc = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"`(test_\w+)`", doc))
    files = {m.group(1) for m in re.finditer(r"`(test_\w+\.py)`", doc)}
    defined: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    present = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert len(cited) > 80
    assert sorted(cited - defined - files) == []
    assert sorted(files - present) == []
