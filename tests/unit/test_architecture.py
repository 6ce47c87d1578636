"""The layout docs/architecture.md describes, checked against the imports in the code.

Every import statement counts, wherever it is (module level, inside a function, under
``TYPE_CHECKING``): a lazy import hides a cycle from Python, not from the design.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = ("protocol", "storage", "assignors", "metrics", "pipeline", "coordinator",
        "kafka_coordinator")

ALLOWED_TOP_LEVEL = {
    # folder: the folders of ours it may import (../shared/DESIGN.md's layout table)
    "protocol": set(),
    "storage": {"protocol"},
    "assignors": set(),
    "metrics": set(),
    "pipeline": {"storage", "protocol"},
    "coordinator": {"protocol", "storage", "assignors", "metrics"},
    # the user-facing toolkit drives the server as a process: it needs only its test helpers
    "kafka_coordinator": {"coordinator"},
}

WIRING = {"__init__", "__main__", "app", "cli", "dispatch", "server"}
"""The only modules directly in ``coordinator/``: the server, the dispatch and the wiring."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for top in OURS for path in (ROOT / top).rglob("*.py")}


@cache
def _packages() -> frozenset[str]:
    return frozenset(_module_name(path) for top in OURS
                     for path in (ROOT / top).rglob("__init__.py"))


def _imports(module: str, planted: str = "") -> Iterator[str]:
    """The modules of ours that ``module`` imports (a name imported from a package counts as
    the package unless it is a module itself); ``planted``: source added to the module's."""
    if planted:
        yield from _parse_imports(module, planted)
    else:
        yield from _imports_as_written(module)


@cache
def _imports_as_written(module: str) -> tuple[str, ...]:
    """``_imports`` of the module as it is on disk: parsed once for all the tests."""
    return tuple(_parse_imports(module, ""))


def _parse_imports(module: str, planted: str) -> Iterator[str]:
    path = _modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text() + "\n" + planted, str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] +
                                ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in _modules() else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in OURS:
                yield name


def _node(module: str) -> str:
    """The unit of layering a module belongs to: its package; a module directly in
    ``coordinator/`` (the wiring) is a unit of its own."""
    if module in _packages():
        return module
    package = module.rpartition(".")[0]
    return module if package == "coordinator" else package


def _coordinator_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in _modules():
        if not module.startswith("coordinator"):
            continue
        for imported in _imports(module):
            if imported.startswith("coordinator"):
                a, b = _node(module), _node(imported)
                if a != b:
                    graph.setdefault(a, set()).add(b)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


@pytest.mark.slow
def test_no_circular_imports_between_coordinator_packages() -> None:
    graph = _coordinator_graph()
    assert "coordinator.groups.consumer" in graph  # the walk found the packages
    cycle = _cycle(graph)
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle or [])


GROUPS = "coordinator.groups"


def _groups_module_graph(planted: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """Module -> the modules (and packages) of ``coordinator/groups/`` it imports; ``planted``:
    source to add to some modules, as if they said it."""
    planted = planted or {}
    graph: dict[str, set[str]] = {}
    for module in _modules():
        if module != GROUPS and not module.startswith(GROUPS + "."):
            continue
        for imported in _imports(module, planted.get(module, "")):
            if imported.startswith(GROUPS + ".") and imported != module:
                graph.setdefault(module, set()).add(imported)
    return graph


def _assert_no_module_cycle(graph: dict[str, set[str]]) -> None:
    cycle = _cycle(graph)
    assert cycle is None, "import cycle between modules: " + " -> ".join(cycle or [])


def test_no_circular_imports_between_modules_of_the_groups() -> None:
    """Inside ``coordinator/groups/`` even the modules of one package import one another one
    way only (docs/architecture.md's order), so that each can be read and changed alone."""
    graph = _groups_module_graph()
    assert "coordinator.groups.consumer.records" in graph["coordinator.groups.consumer.heartbeat"]
    _assert_no_module_cycle(graph)


def test_the_module_check_fails_on_a_planted_cycle() -> None:
    """``consumer/model.py`` importing ``heartbeat`` (which imports the model) is a cycle, even
    as a lazy import inside a function."""
    planted = {"coordinator.groups.consumer.model":
               "def _late() -> None:\n    from . import heartbeat\n"}
    with pytest.raises(AssertionError, match=r"import cycle between modules: .*consumer\.model"):
        _assert_no_module_cycle(_groups_module_graph(planted))


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


@pytest.mark.parametrize("top", sorted(ALLOWED_TOP_LEVEL))
def test_top_level_folders_import_only_what_the_design_allows(top: str) -> None:
    found = {imported.split(".")[0] for module in _modules() if module.split(".")[0] == top
             for imported in _imports(module)} - {top}
    assert found <= ALLOWED_TOP_LEVEL[top], f"{top} imports {sorted(found)}"


@pytest.mark.parametrize("package, forbidden", [
    # the bottom layers: every package may use them, so they may use none of the others
    ("coordinator.observability", "coordinator."),
    ("coordinator.config", "coordinator."),
    # the cluster model is pure: the brokers and who leads what, nothing of the server
    ("coordinator.cluster", "coordinator."),
    # group types build on common; common knows none of them
    ("coordinator.groups.common", "coordinator.groups."),
    # consumer, share and streams groups build on the modern core; it knows none of them
    ("coordinator.groups.modern", "coordinator.groups."),
    # classic groups know nothing of consumer groups (mixed groups live in consumer/)
    ("coordinator.groups.classic", "coordinator.groups.consumer"),
])
def test_layers(package: str, forbidden: str) -> None:
    offending = sorted(
        f"{module} imports {imported}" for module in _modules()
        if module == package or module.startswith(package + ".")
        for imported in _imports(module)
        if imported.startswith(forbidden) and not (imported == package
                                                   or imported.startswith(package + ".")))
    assert not offending


def test_coordinator_top_level_is_the_server_and_its_wiring() -> None:
    loose = {path.stem for path in (ROOT / "coordinator").glob("*.py")}
    assert loose == WIRING


def test_no_module_is_imported_for_its_side_effects() -> None:
    """Record types are replayed through one explicit table (``coordinator.groups.replay``),
    not registered by imports: nothing in the coordinator needs an unused or late import."""
    marker = re.compile(r"noqa:[^\n]*\b(F401|E402)\b")
    offending = [f"{path.relative_to(ROOT)}:{n}"
                 for path in (ROOT / "coordinator").rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if marker.search(line)]
    assert not offending
