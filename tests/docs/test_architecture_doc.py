"""docs/architecture.md against the tree: every path it names exists, every package of the
coordinator is described, and the README sends readers there (not outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _named_paths(text: str) -> set[str]:
    """Code spans that name a file or folder of the repository."""
    return {span for span in CODE_SPAN.findall(text)
            if re.fullmatch(r"[\w./-]+", span) and ("/" in span or span.endswith((".py", ".md")))
            and not span.startswith(("..", "<"))}


def _resolve(name: str) -> Path | None:
    """A named path: relative to the repository, or relative to a package of the coordinator
    (``model.py`` or ``common/`` in the paragraph on ``coordinator/groups/``)."""
    candidate = ROOT / name.rstrip("/")
    if candidate.exists():
        return candidate
    found = sorted(path for path in (ROOT / "coordinator").rglob(name.rstrip("/").split("/")[-1])
                   if path.as_posix().endswith(name.rstrip("/")))
    return found[0] if found else None


def test_every_path_the_architecture_page_names_exists() -> None:
    names = _named_paths(DOC.read_text())
    assert len(names) > 30  # the page names files; the pattern above found them
    assert sorted(name for name in names if _resolve(name) is None) == []


def test_every_coordinator_package_is_described() -> None:
    text = DOC.read_text()
    packages = {path.parent.relative_to(ROOT).as_posix() + "/"
                for path in (ROOT / "coordinator").rglob("__init__.py")} - {"coordinator/"}
    assert sorted(p for p in packages if f"`{p}`" not in text) == []


def test_every_top_level_package_is_in_the_folders_table() -> None:
    text = DOC.read_text()
    packages = {path.parent.name + "/" for path in ROOT.glob("*/__init__.py")} - {"tests/"}
    assert "kafka_coordinator/" in packages
    assert sorted(p for p in packages if f"| `{p}` |" not in text) == []


def test_every_module_of_the_groups_package_is_described() -> None:
    text = DOC.read_text()
    groups = ROOT / "coordinator" / "groups"
    modules = {p.name for p in groups.rglob("*.py") if p.name != "__init__.py"}
    assert sorted(m for m in modules if m not in text) == []


def test_the_readme_links_the_architecture_page_and_nothing_outside_the_repository() -> None:
    text = README.read_text()
    assert "(docs/architecture.md)" in text
    assert "../shared" not in text
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
