from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.testing import preloaded
from tests import parallel
from tests.harness import ServerProcess
from tests.pipeline import suite_archive

# tests/plugin/ and tests/docs/ run throwaway projects with pytester; tests/watchdog.py ends a
# test hung where pytest-timeout cannot reach it. pytest allows pytest_plugins only in the
# top-level conftest
pytest_plugins = ["pytester", "tests.watchdog"]


# pytest-xdist (`make test` runs `pytest -n N`): how the tests are spread over its workers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    parallel.collected(config, items)


def pytest_configure(config: pytest.Config) -> None:
    # every server this process starts is forked from one that has imported the server
    # (coordinator/testing/preloaded.py): a start costs a fraction of a second, not a second
    preloaded.enable()
    # Hypothesis' checks on time (a 200 ms deadline per example, the too_slow health check on
    # input generation) measure the machine, not the code: a tiny list strategy failed
    # too_slow at a 3x slowdown (2 inputs in 2.17 s). Examples and their checks are unchanged.
    from hypothesis import HealthCheck, settings

    settings.register_profile("suite", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("suite")
    # xdist's controller, before it starts the workers: Hypothesis builds its Unicode tables
    # (the characters text() draws from) on first use and keeps them in .hypothesis/; on a clean
    # clone every worker would build them at once (about 2 s of CPU each)
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from hypothesis import strategies as st

        st.text().validate()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    parallel.configure_node(node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return parallel.make_scheduler(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    parallel.unconfigure(config)
    suite_archive.remove(config)  # the pipeline tests' one JVM class archive, once all are done


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
