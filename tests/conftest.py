from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A running server on a free port with its own log directory."""
    process = ServerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for a whole module, for tests that do not disturb each other."""
    process = ServerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()
