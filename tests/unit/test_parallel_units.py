"""How the suite is cut into pytest-xdist work units (tests/parallel.py): a module's tests that
share a module-scoped fixture are one unit, modules sharing a session-scoped fixture are one
unit, every other test is its own; units with a slow test come first, then the larger units."""

from __future__ import annotations

import pytest

from tests import parallel

CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def engine():
    return object()
"""

MODULE_A = """
import pytest

@pytest.fixture(scope="module")
def server():
    return object()

def test_one(server): pass
def test_alone(): pass
def test_three(server): pass
"""

MODULE_B = """
import pytest

def test_engine(engine): pass

@pytest.mark.slow
def test_slow(): pass
"""

MODULE_C = """
def test_engine_too(engine): pass
"""


def test_units_and_their_order(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=MODULE_A, test_b=MODULE_B, test_c=MODULE_C)
    items, _ = pytester.inline_genitems()
    units = parallel.order_units(items, ours=("conftest", "test_"))
    assert units == {
        "test_a.py::test_one": "test_a.py",
        "test_a.py::test_three": "test_a.py",
        "test_a.py::test_alone": "test_a.py::test_alone",
        "test_b.py::test_engine": "test_b.py",  # the session fixture joins b and c
        "test_c.py::test_engine_too": "test_b.py",
        "test_b.py::test_slow": "test_b.py::test_slow",
    }
    assert [item.nodeid for item in items] == [
        "test_b.py::test_slow",  # slow first
        "test_a.py::test_one", "test_a.py::test_three",  # then units of several tests, each
        "test_b.py::test_engine", "test_c.py::test_engine_too",  # in its collection order
        "test_a.py::test_alone",  # then the single tests
    ]


def test_pytests_own_shared_fixtures_do_not_make_units(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_d="def test_one(tmp_path_factory): pass\n"
                               "def test_two(tmp_path_factory): pass\n")
    items, _ = pytester.inline_genitems()
    assert parallel.units_of(items, ours=("conftest", "test_")) == {
        "test_d.py::test_one": "test_d.py::test_one",
        "test_d.py::test_two": "test_d.py::test_two"}
