from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import ServerProcess

# tests/plugin/ and tests/docs/ run throwaway projects with pytester; pytest allows
# pytest_plugins only in the top-level conftest
pytest_plugins = ["pytester"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A running server on a free port with its own log directory."""
    with ServerProcess(tmp_path / "data") as process:
        yield process


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for a whole module, for tests that do not disturb each other."""
    with ServerProcess(tmp_path_factory.mktemp("shared") / "data") as process:
        yield process
