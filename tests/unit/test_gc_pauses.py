"""The collector is off while the partitions load (a start allocates long-lived objects only),
and on once they are loaded, or after ``LOAD_MAX_OFF_S`` of a long load."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from coordinator.runtime import gc_pauses
from coordinator.runtime.gc_pauses import GcPauseGuard


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


async def _guarded(loaded: asyncio.Event) -> asyncio.Task[None]:
    task = asyncio.create_task(GcPauseGuard(freeze_interval_s=0.01).run(loaded.wait()))
    await asyncio.sleep(0.01)
    return task


async def _until_enabled(deadline_s: float = 1.0) -> None:
    for _ in range(int(deadline_s / 0.01)):
        if gc.isenabled():
            return
        await asyncio.sleep(0.01)
    assert gc.isenabled()


async def test_the_collector_is_off_until_the_partitions_are_loaded() -> None:
    gc.disable()  # as `serve` starts
    loaded = asyncio.Event()
    task = await _guarded(loaded)
    try:
        assert not gc.isenabled()
        loaded.set()
        await _until_enabled()
    finally:
        task.cancel()


async def test_a_long_load_turns_it_on_after_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_pauses, "LOAD_MAX_OFF_S", 0.05)
    task = await _guarded(asyncio.Event())  # never loaded
    try:
        assert not gc.isenabled()
        await _until_enabled()
    finally:
        task.cancel()


@pytest.mark.parametrize("turns", range(4))
async def test_a_stop_as_the_load_ends_stops_it(turns: int) -> None:
    """The server's stop cancels the guard: a cancellation arriving in the loop turns between
    the load's end and the guard's resuming ends it too (``asyncio.wait_for`` of Python 3.11
    returned the load's result there instead, and the guard ran on: a server that never
    exited after SIGTERM)."""
    loaded = asyncio.Event()
    task = await _guarded(loaded)
    loaded.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=1.0)
    assert task in done and task.cancelled()
