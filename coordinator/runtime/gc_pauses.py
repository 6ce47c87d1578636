"""Keep the cyclic garbage collector from stopping the event loop for long.

A full (generation 2) collection walks every tracked object: with a large group's state in
memory (targets, owners, topic metadata) that is hundreds of milliseconds, during which no
request of any group is answered (measured with ``bench storm``). Objects that have lived a
while are almost all long-lived state, so they are moved out of the collector's reach every
``freeze_interval_s`` (``gc.freeze``, O(1)); collections then only walk what is new. At one
second, a churning 1,000-member group left enough survivors between freezes for the automatic
collections to take 10-60 ms each (measured in ``bench storm``); at 100 ms they stay under a
few milliseconds. Cyclic garbage among frozen objects is reclaimed by a full collection every
``full_interval_s``, logged with its pause.

Until the coordinator partitions are loaded (``run(loaded)``; ``LOAD_MAX_OFF_S`` at most) the
collector is off: a start allocates long-lived objects only (modules, classes, the replayed
state), which the automatic collections would walk again and again for nothing (half of a
snapshot load's decoding time). ``python -m coordinator serve`` turns it off before its
imports; it is turned on, after a freeze of everything the start made, once the partitions are
loaded.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable

from coordinator.observability.logs import get_logger

log = get_logger("coordinator.gc")

LOAD_MAX_OFF_S = 10.0
"""The longest the collector stays off while the partitions load (a store without snapshots)."""


class GcPauseGuard:
    def __init__(self, freeze_interval_s: float = 0.1, full_interval_s: float = 3600.0) -> None:
        self.freeze_interval_s = freeze_interval_s
        self.full_interval_s = full_interval_s

    async def run(self, loaded: Awaitable[object] | None = None) -> None:
        """Keep collections short; with ``loaded``, no collection until it is done, or for
        ``LOAD_MAX_OFF_S`` at most (a long load also answers requests meanwhile, whose cyclic
        garbage is then collected); then the collector is on, whoever turned it off."""
        if loaded is not None:
            gc.disable()
            try:
                # not asyncio.wait_for: on Python 3.11 a cancellation (the server's stop)
                # arriving as ``loaded`` ends is swallowed there, and the guard ran on forever
                async with asyncio.timeout(LOAD_MAX_OFF_S):
                    await loaded
            except TimeoutError:
                log.info("garbage collection on before the partitions are loaded",
                         after_s=LOAD_MAX_OFF_S)
            finally:
                gc.freeze()
                gc.enable()
        last_full = time.monotonic()
        gc.freeze()
        while True:
            await asyncio.sleep(self.freeze_interval_s)
            if time.monotonic() - last_full >= self.full_interval_s:
                began = time.perf_counter()
                gc.unfreeze()
                collected = gc.collect()
                log.info("full garbage collection", collected=collected,
                         pause_ms=round((time.perf_counter() - began) * 1000.0, 1))
                last_full = time.monotonic()
            gc.freeze()
