"""pytest fixtures for tests of Kafka applications, registered through the ``pytest11`` entry
point: installing the package is enough.

- ``kafka_coordinator``: a server of its own for each test (its data under ``tmp_path``);
  configure it with ``@pytest.mark.kafka_coordinator(config={...}, profile="test",
  brokers=3)`` on the test, class or module, or with ``indirect`` parametrization
  (``@pytest.mark.parametrize("kafka_coordinator", [{"config": {...}}], indirect=True)``);
  the parameter's config comes after the marker's. ``brokers``: a cluster of that many brokers
  (``cluster.brokers``; default 1).
- ``bootstrap_servers``: that server's ``host:port``.
- ``kafka_coordinator_session``: one server for the whole session, configured by overriding
  the ``kafka_coordinator_session_options`` fixture in a conftest.py
  (``{"config": {...}, "profile": "test", "brokers": 1}``).

When a test that used one fails, the server's log is added to the report; for a server of the
test's own, the log and the rebalance timeline page of each group it saw are also saved as files
(``<data dir>-report/server.log``, ``timeline-<group>.html``) and the report says where.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from . import report as saved
from .process import DEFAULT_PROFILE, Coordinator

MARKER = "kafka_coordinator"
_OPTIONS = frozenset({"config", "profile", "brokers"})
_LOG_LINES = 200
_STARTED = pytest.StashKey[list[Coordinator]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(config=None, profile='{DEFAULT_PROFILE}', brokers=1): the Kafka configs, "
        "the profile and the number of brokers of the test's kafka_coordinator server")


def _checked(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise pytest.UsageError(f"{where}: unknown option(s) {sorted(unknown)}; expected "
                                f"{sorted(_OPTIONS)}")
    brokers = options.get("brokers", 1)
    if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
        raise pytest.UsageError(f"{where}: brokers must be a whole number, 1 or more, "
                                f"not {brokers!r}")
    return dict(options)


def options_for(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The server's options for this test: the closest marker, then the indirect parameter."""
    config: dict[str, Any] = {}
    profile = DEFAULT_PROFILE
    brokers = 1
    sources: list[tuple[Mapping[str, Any], str]] = []
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only: "
                                    "config={...}, profile=..., brokers=...")
        sources.append((marker.kwargs, f"@pytest.mark.{MARKER}"))
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, Mapping):
            raise pytest.UsageError(f"the {MARKER} fixture's parameter must be a dict like "
                                    "{'config': {...}, 'profile': 'test'}")
        sources.append((param, f"the {MARKER} parameter"))
    for options, where in sources:
        checked = _checked(options, where)
        config.update(checked.get("config") or {})
        profile = checked.get("profile", profile)
        brokers = checked.get("brokers", brokers)
    return {"config": config, "profile": profile, "brokers": brokers}


def _started(request: pytest.FixtureRequest, coordinator: Coordinator) -> None:
    """Remember the server for the test's report (see ``pytest_runtest_makereport``)."""
    node = request.node
    node.stash.setdefault(_STARTED, []).append(coordinator)


@pytest.fixture
def kafka_coordinator(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Coordinator]:
    """A coordinator of this test's own, accepting clients, stopped after the test."""
    options = options_for(request)
    with Coordinator.start(data_dir=tmp_path / "kafka-coordinator", **options) as coordinator:
        _started(request, coordinator)
        yield coordinator


@pytest.fixture
def bootstrap_servers(kafka_coordinator: Coordinator) -> str:
    """``host:port`` of this test's coordinator, for ``bootstrap.servers``."""
    return kafka_coordinator.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_coordinator_session_options() -> dict[str, Any]:
    """Override in a conftest.py to configure ``kafka_coordinator_session``:
    ``{"config": {...}, "profile": "test", "brokers": 1}``."""
    return {}


@pytest.fixture(scope="session")
def kafka_coordinator_session(
        kafka_coordinator_session_options: Mapping[str, Any],
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator shared by every test of the session."""
    options = _checked(kafka_coordinator_session_options, "kafka_coordinator_session_options")
    data_dir = tmp_path_factory.mktemp("kafka-coordinator-session") / "data"
    with Coordinator.start(data_dir=data_dir, config=options.get("config") or {},
                           profile=options.get("profile", DEFAULT_PROFILE),
                           brokers=options.get("brokers", 1)) as coordinator:
        yield coordinator


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed and call.when in ("call", "setup"):
        started: list[Coordinator] = item.stash.get(_STARTED, [])
        coordinators = list(started)
        session = getattr(item, "funcargs", {}).get("kafka_coordinator_session")
        if isinstance(session, Coordinator):
            coordinators.append(session)
        for coordinator in coordinators:
            lines = coordinator.output().splitlines()[-_LOG_LINES:]
            report.sections.append((f"kafka-coordinator {coordinator.bootstrap_servers} log "
                                    f"(last {len(lines)} lines)", "\n".join(lines)))
        for coordinator in started:
            report.sections.append((f"kafka-coordinator {coordinator.bootstrap_servers} files",
                                    _save(coordinator)))
    return report


def _save(coordinator: Coordinator) -> str:
    """The server's log and its groups' timeline pages as files, and where they are."""
    try:
        log_path, pages = saved.save(coordinator)
    except Exception as exc:  # a report must not fail for its extras: say why there are none
        return f"could not save the log and the timeline pages: {exc!r}"
    lines = [f"log: {log_path}"]
    lines += [f"timeline page: {page}" for page in pages] or ["no group: no timeline page"]
    return "\n".join(lines)
