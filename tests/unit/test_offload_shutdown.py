"""Stopping the server: work handed to the background after the offloader closed (a timer
firing while the executor's workers stop) is dropped with a log line, not an exception logged
as an error (found by ``soak fuzz``: a regex resolution submitted to the stopped executor)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.background.executor import BackgroundExecutor
from coordinator.groups.common.offload import ExecutorOffloader
from coordinator.runtime.result import Result


async def test_work_submitted_after_close_is_dropped() -> None:
    executor = BackgroundExecutor(1)
    await executor.start(eager=False)
    offloader = ExecutorOffloader(executor, runtime=None)
    written: list[object] = []
    await offloader.close()  # the order App.run_until_stopped stops them in
    await executor.stop()

    def write(outcome: object) -> Callable[[object, int], Result]:
        written.append(outcome)
        return lambda shard, now: Result()

    offloader.submit_task(3, sorted, [2, 1], write, "g")
    assert not executor.running and written == []
    with pytest.raises(RuntimeError, match="not running"):  # what it was spared
        executor.submit(sorted, [2, 1], written.append)
