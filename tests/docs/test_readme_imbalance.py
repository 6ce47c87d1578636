"""README.md's timelines of deferred and incremental resolution are what the code does
(``imbalance_timelines`` replays each scenario through the heartbeat handler in virtual
time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.imbalance_timelines import SCENARIOS, blocks

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("title", list(SCENARIOS))
def test_the_readme_shows_the_timeline_the_code_gives(title: str) -> None:
    block = blocks()[title]
    assert f"```text\n{block}\n```" in README.read_text(), (
        f"README.md's timeline '{title}' is not what the code gives; it gives:\n{block}\n"
        "(python -m tests.docs.imbalance_timelines prints every block)")
