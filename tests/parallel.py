"""How the suite is spread over pytest-xdist's workers (``make test`` runs ``pytest -n N``).

A test is independent of the others when all it shares with them is function-scoped fixtures:
it is a work unit of its own and runs on whichever worker is free. The tests of a module that
use a module-, class- or session-scoped fixture of ours (a module's shared server, the
pipeline's Spark session and stores, the plugin's session server) are one work unit, so the
module runs on one worker, starts that fixture once as in a serial run, and runs its tests in
their file's order; the modules that use one session-scoped fixture (the Spark session) are one
unit too.

Each worker collects the whole suite; the first one writes each test's unit to a file the
controller gave it (``workerinput``), and the controller's scheduler (a ``LoadScopeScheduling``
whose scope is that unit) reads it before it hands out work. Units are handed out in the order
the workers collected them, which :func:`order_units` sets: units holding a test marked
``slow`` first, then module units, then the single tests, so the long ones start early and the
short ones fill the workers at the end. Without ``-n`` nothing changes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_OURS = ("tests.", "kafka_coordinator.")
"""Modules whose shared fixtures are worth keeping to one worker (not pytest's own, such as the
session-scoped ``tmp_path_factory``)."""
UNITS_FILE = "suite_units_file"
"""The ``workerinput`` key naming where a worker writes the units it collected."""
_DIRECTORY = pytest.StashKey[Path]()
_SESSION = "session fixture "


def shared_fixtures(item: pytest.Item, ours: tuple[str, ...] = _OURS) -> dict[str, str]:
    """The non-function-scoped fixtures that ``item`` uses, with their scopes, of those defined
    in modules whose names start with one of ``ours``."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return {}
    shared = {}
    for name, definitions in info.name2fixturedefs.items():
        if not definitions:
            continue
        definition = definitions[-1]
        module = getattr(definition.func, "__module__", "") or ""
        if definition.scope != "function" and module.startswith(ours):
            shared[name] = definition.scope
    return shared


def units_of(items: list[pytest.Item], ours: tuple[str, ...] = _OURS) -> dict[str, str]:
    """Each test's work unit: its own id, or, for a test using a shared fixture, its module's
    path; modules that use the same session-scoped fixture are one unit (named after the first
    of them), so that fixture is made once."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:  # the unit a module or session fixture has joined
        while parent.get(key, key) != key:
            key = parent[key]
        return key

    modules: dict[str, str] = {}
    for item in items:
        shared = shared_fixtures(item, ours)
        if not shared:
            continue
        module = modules[item.nodeid] = item.nodeid.split("::", 1)[0]
        for name, scope in shared.items():
            if scope != "session":
                continue
            mine, its = find(module), find(f"{_SESSION}{name}")
            if its.startswith(_SESSION):
                parent[its] = mine  # a unit is named after a module
            elif mine != its:
                parent[max(mine, its)] = min(mine, its)
    return {item.nodeid: find(modules[item.nodeid]) if item.nodeid in modules else item.nodeid
            for item in items}


def order_units(items: list[pytest.Item], ours: tuple[str, ...] = _OURS) -> dict[str, str]:
    """Sort ``items`` unit by unit (each unit's tests together, in their order): units with a
    slow test first, then units of several tests (the larger first), then single tests; return
    each test's unit."""
    unit_of = units_of(items, ours)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(unit_of[item.nodeid], []).append(item)

    def rank(entry: tuple[int, tuple[str, list[pytest.Item]]]) -> tuple[int, int, int]:
        position, (_, members) = entry
        slow = any(member.get_closest_marker("slow") is not None for member in members)
        return (0 if slow else 1 if len(members) > 1 else 2, -len(members), position)

    ordered = sorted(enumerate(units.items()), key=rank)
    items[:] = [item for _, (_, members) in ordered for item in members]
    return unit_of


# --- in a worker -----------------------------------------------------------------------------
def collected(config: pytest.Config, items: list[pytest.Item],
              ours: tuple[str, ...] = _OURS) -> None:
    """``pytest_collection_modifyitems``: in a worker, order the units and write them."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or UNITS_FILE not in workerinput:
        return
    units = order_units(items, ours)
    target = Path(workerinput[UNITS_FILE])
    if target.exists():
        return
    aside = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    aside.write_text(json.dumps(units), encoding="utf-8")
    os.replace(aside, target)  # whole or not at all; every worker collects the same


# --- in the controller -----------------------------------------------------------------------
def configure_node(node: Any) -> None:
    """``pytest_configure_node``: tell a worker where to write its units."""
    config: pytest.Config = node.config
    if _DIRECTORY not in config.stash:
        config.stash[_DIRECTORY] = Path(tempfile.mkdtemp(prefix="pytest-units-"))
    node.workerinput[UNITS_FILE] = str(config.stash[_DIRECTORY] / "units.json")


def unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(_DIRECTORY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``pytest_xdist_make_scheduler`` for ``--dist load`` (the default with ``-n``): units as
    above. Other ``--dist`` modes keep xdist's own scheduler."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        """Work units are :func:`units_of`'s, in the order the workers collected them."""

        units: dict[str, str] | None = None

        def schedule(self) -> None:
            if self.units is None:
                path = config.stash[_DIRECTORY] / "units.json" if _DIRECTORY in config.stash \
                    else None
                self.units = (json.loads(path.read_text(encoding="utf-8"))
                              if path is not None and path.exists() else {})
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return (self.units or {}).get(nodeid, nodeid)

        def _reschedule(self, node: Any) -> None:
            """Hand ``node`` units until it holds at least two tests. A worker runs a test only
            once it knows the next (or is told to stop), and it is given more only when it
            reports a test done: xdist's one unit at a time left a replacement worker given a
            one-test unit holding it, the rest of the queue waiting for it."""
            super()._reschedule(node)
            while (self.workqueue and not node.shutting_down
                   and self._pending_of(self.assigned_work[node]) < 2):
                super()._reschedule(node)

        def remove_node(self, node: Any) -> str | None:
            """A worker is gone (done, or crashed: a client library's abort, a hang cut short
            by the watchdog). xdist's own version puts every unit the worker was ever given
            back in the queue, finished ones and the test that crashed included: the test
            crashed the next worker too, and a finished unit handed to a worker sends it no
            tests, so it never reports back and the run stalls (seen: a worker killed in a
            hung close, then an idle replacement for ever). Here only the units with tests
            still to run go back, without the one that crashed (xdist reports it failed)."""
            workload = self.assigned_work.pop(node)
            pending = [(scope, unit) for scope, unit in workload.items()
                       if not all(unit.values())]
            if not pending:
                return None
            crashed_unit = pending[0][1]  # units run in the order they were sent
            crashitem = next(nodeid for nodeid, done in crashed_unit.items() if not done)
            crashed_unit[crashitem] = True
            requeue = {scope: unit for scope, unit in pending if not all(unit.values())}
            # ahead of the units not yet handed out, as they were
            for scope in reversed(list(requeue)):
                self.workqueue[scope] = requeue[scope]
                self.workqueue.move_to_end(scope, last=False)
            for other in self.assigned_work:
                self._reschedule(other)
            return crashitem

    config.option.loadscopereorder = False  # keep order_units' order
    return UnitScheduling(config, log)
