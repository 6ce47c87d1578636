"""A worker that hangs or dies does not stop the suite (tests/watchdog.py and
tests/parallel.py's ``remove_node``): a test blocked where pytest-timeout cannot reach it (the
alarm blocked, as in a C library's join) is cut short with every thread's stack, reported as
crashed, and the rest of its work unit runs on the replacement worker; nothing runs twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import watchdog

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
from tests import parallel

OURS = ("test_",)

def pytest_collection_modifyitems(config, items):
    parallel.collected(config, items, ours=OURS)

def pytest_configure_node(node):
    parallel.configure_node(node)

def pytest_xdist_make_scheduler(config, log):
    return parallel.make_scheduler(config, log)

def pytest_unconfigure(config):
    parallel.unconfigure(config)
"""

MODULE = """
import os
import signal
import time

import pytest

@pytest.fixture(scope="module")
def shared():
    return os.getpid()

def test_before(shared):
    pass

@pytest.mark.timeout(1)
def test_hangs(shared):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # pytest-timeout's alarm
    time.sleep(600)

def test_after(shared):
    pass

@pytest.mark.parametrize("n", range(6))
def test_alone(n):
    pass
"""


@pytest.mark.slow
def test_a_hung_worker_is_replaced_and_the_rest_runs(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_stuck=MODULE)
    # without the scheduler's mends the run never ends: pytester's timeout fails the test
    result = pytester.runpytest_subprocess("-n", "2", "-p", "tests.watchdog",
                                           "--hang-grace", "1", "-p", "no:cacheprovider",
                                           "-rf", timeout=180)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("passed") == 8, result.stdout.str()
    result.stdout.fnmatch_lines(["*FAILED test_stuck.py::test_hangs*crashed*"])
    # every thread's stack, from the worker's own stderr
    assert "Timeout (0:00:02)!" in result.stderr.str()
    assert "in test_hangs" in result.stderr.str()


@pytest.mark.parametrize(("marker", "option", "expected"), [
    ("@pytest.mark.timeout(7)", None, 7.0),
    ("@pytest.mark.timeout(timeout=8)", "3", 8.0),
    ("", "3", 3.0),
    ("", None, 300.0),
    ("@pytest.mark.timeout(0)", None, 0.0),
])
def test_a_tests_limit_is_pytest_timeouts(pytester: pytest.Pytester, marker: str,
                                          option: str | None, expected: float) -> None:
    pytester.makeini("[pytest]\ntimeout = 300\n")
    pytester.makepyfile(test_one=f"import pytest\n{marker}\ndef test_it(): pass\n")
    args = ["--timeout", option] if option else []
    items, _ = pytester.inline_genitems(*args)
    assert watchdog.limit_of(items[0]) == expected
