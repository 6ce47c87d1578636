"""A handler's answer as a future (``answer_later``, the OffsetCommit path): the runtime's
answer mapped, its CoordinatorError mapped to the error answer, anything else left for the
dispatcher, which answers UNKNOWN_SERVER_ERROR for it as for a failed coroutine handler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator.apis.context import answer_later
from coordinator.runtime import CoordinatorError
from protocol import ErrorCode


def mapped(source: asyncio.Future[Any]) -> asyncio.Future[Any]:
    return answer_later(source, lambda value: ("ok", value),
                        lambda exc: ("error", exc.code))


async def test_the_result_and_a_coordinator_error_are_mapped() -> None:
    loop = asyncio.get_running_loop()
    ok, failed = loop.create_future(), loop.create_future()
    answers = mapped(ok), mapped(failed)
    assert not any(answer.done() for answer in answers)
    ok.set_result(7)
    failed.set_exception(CoordinatorError(ErrorCode.not_coordinator))
    assert await answers[0] == ("ok", 7)
    assert await answers[1] == ("error", ErrorCode.not_coordinator)


async def test_other_failures_and_cancellation_reach_the_answer() -> None:
    loop = asyncio.get_running_loop()
    broken, cancelled = loop.create_future(), loop.create_future()
    bug = answer_later(broken, lambda value: 1 / value, lambda exc: None)
    gone = mapped(cancelled)
    broken.set_result(0)  # the mapping itself fails: the dispatcher reports it
    cancelled.cancel()
    with pytest.raises(ZeroDivisionError):
        await bug
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_an_answer_already_done_is_left_alone() -> None:
    loop = asyncio.get_running_loop()
    source = loop.create_future()
    answer = mapped(source)
    answer.cancel()  # the connection went away
    source.set_result(1)
    await asyncio.sleep(0)
    assert answer.cancelled()
