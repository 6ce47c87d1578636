"""The background executor started lazily (a server whose group types do not offload by
default, as under the test profile): no workers until the first task, which still runs."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.background.executor import BackgroundExecutor


async def test_the_first_task_starts_the_workers() -> None:
    executor = BackgroundExecutor(1)
    await executor.start(eager=False)
    try:
        assert not executor.running
        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        executor.submit(sum, [1, 2, 3], done.set_result)
        assert executor.running
        assert await asyncio.wait_for(done, 30) == 6
    finally:
        await executor.stop()
    assert not executor.running


async def test_a_stopped_executor_takes_no_task() -> None:
    executor = BackgroundExecutor(1)
    await executor.start(eager=False)
    await executor.stop()
    with pytest.raises(RuntimeError, match="not running"):
        executor.submit(sum, [1], lambda _: None)
    assert not executor.running
