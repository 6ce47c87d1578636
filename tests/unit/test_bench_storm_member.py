"""The bench's load-generator member: its wait for the next heartbeat (no server needed)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from coordinator.bench.storm_client import Member


def member() -> Member:
    wire: Any = None  # the wait never touches the connection
    return Member(wire, "g", ("t",))


async def test_restagger_moves_the_next_heartbeat_to_the_new_wait() -> None:
    m = member()
    began = time.monotonic()
    waiting = asyncio.create_task(m._wait(30.0))
    await asyncio.sleep(0.01)
    m.restagger(0.05)
    await asyncio.wait_for(waiting, 5.0)
    assert 0.05 <= time.monotonic() - began < 5.0


async def test_stop_ends_the_wait_and_a_plain_wait_runs_its_course() -> None:
    m = member()
    began = time.monotonic()
    await asyncio.wait_for(m._wait(0.05), 5.0)
    assert time.monotonic() - began >= 0.05
    waiting = asyncio.create_task(m._wait(30.0))
    await asyncio.sleep(0.01)
    await m.stop()
    await asyncio.wait_for(waiting, 5.0)
