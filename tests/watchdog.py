"""The last resort against a test that hangs where pytest-timeout cannot reach it (a plugin of
tests/conftest.py's ``pytest_plugins``).

pytest-timeout's signal method fails a test that runs past its limit by raising in the main
thread, which Python does only between bytecodes: a main thread blocked inside a C library
never gets there. librdkafka's destroy can block for ever joining one of its threads
(confluentinc/librdkafka#4519), and a slowed run sat 14 minutes in a ``Consumer.close()``;
in CI that is a run that reaches its 90 minutes instead of one failed test. So each test also
arms faulthandler's own timer (a C thread) for its pytest-timeout limit plus ``--hang-grace``
seconds: past that the process writes every thread's stack to the stderr it started with and
exits. Under xdist the worker is replaced and the test reported as crashed (tests/parallel.py
puts the rest of its unit back in the queue); without ``-n`` the run ends there, with the
stacks.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Iterator
from typing import IO, Any

import pytest

GRACE_S = 120.0
"""After a test's pytest-timeout limit, how long pytest-timeout is given to fail it first."""

_stderr: IO[str] | None = None
"""A copy of the stderr this process started with (pytest's capture replaces fd 2 while a
test runs, and what was written there then would go with the process)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--hang-grace", type=float, default=GRACE_S, metavar="SECONDS",
                     help="seconds past a test's pytest-timeout limit before the process "
                          "writes every thread's stack and exits (default %(default)s)")


def pytest_configure(config: pytest.Config) -> None:
    global _stderr
    if _stderr is None:
        _stderr = os.fdopen(os.dup(2), "w")


def limit_of(item: pytest.Item) -> float:
    """The test's pytest-timeout limit in seconds (its ``timeout`` marker, else ``--timeout``,
    else the ini's ``timeout``); 0 for none."""
    marker = item.get_closest_marker("timeout")
    value: Any = None
    if marker is not None:
        value = marker.kwargs.get("timeout", marker.args[0] if marker.args else None)
    if value is None:
        value = item.config.getoption("timeout", None)
    if value is None:
        value = item.config.getini("timeout")  # pytest-timeout's, "0" unless set
    try:
        return max(float(value or 0), 0.0)
    except (TypeError, ValueError):
        return 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    limit = limit_of(item)
    if limit and _stderr is not None:
        faulthandler.dump_traceback_later(limit + item.config.getoption("hang_grace"),
                                          exit=True, file=_stderr)
    try:
        yield
    finally:
        if limit:
            faulthandler.cancel_dump_traceback_later()
