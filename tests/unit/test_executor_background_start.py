"""The background executor started without waiting (the server's start: its listeners do not
wait for the forkserver): a task submitted while the workers start runs once they are up; a
stop while they start leaves no worker behind."""

from __future__ import annotations

import asyncio

from coordinator.background.executor import BackgroundExecutor


async def test_a_task_submitted_while_the_workers_start_runs_once_they_are_up() -> None:
    executor = BackgroundExecutor(1)
    await executor.start(wait=False)
    try:
        assert not executor.running  # the pool is still being made on its thread
        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        executor.submit(sum, [1, 2, 3], done.set_result)
        assert executor.in_flight == 1
        assert await asyncio.wait_for(done, 30) == 6
        assert executor.running and executor.in_flight == 0
    finally:
        await executor.stop()
    assert not executor.running


async def test_a_stop_while_the_workers_start_leaves_none_running() -> None:
    executor = BackgroundExecutor(1)
    await executor.start(wait=False)
    dropped: list[object] = []
    executor.submit(sum, [1], dropped.append)
    await executor.stop()
    assert not executor.running and executor.in_flight == 0
    await asyncio.sleep(0)  # nothing left to call back
    assert dropped == []
