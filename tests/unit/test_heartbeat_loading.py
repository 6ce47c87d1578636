"""A classic Heartbeat for a group whose coordinator partition is still loading is answered
NONE, as Kafka's ``GroupCoordinatorService`` answers it ("the group is still loading, so
blindly respond"); every other error of the runtime reaches the member.

The handler runs against a context holding only what it reads: the authorizer's answer, the
runtime's partition for the group and its write, which raises what a real runtime raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.types import GroupId
from kio.static.primitive import i32

from coordinator.apis import heartbeat
from coordinator.runtime import CoordinatorError
from coordinator.runtime.errors import load_in_progress, not_available
from protocol import ErrorCode


class _Runtime:
    def __init__(self, raised: CoordinatorError | None) -> None:
        self.raised = raised

    def partition_for(self, group_id: str) -> int:
        return 7

    async def write(self, index: int, handler: Callable[..., Any], name: str = "",
                    group_id: str | None = None) -> Any:
        assert (index, name, group_id) == (7, "Heartbeat", "g")
        if self.raised is not None:
            raise self.raised
        return ErrorCode.rebalance_in_progress


class _Broker:
    def __init__(self, runtime: _Runtime) -> None:
        self.runtime = runtime


class _Context:
    def __init__(self, raised: CoordinatorError | None) -> None:
        self.broker = _Broker(_Runtime(raised))

    def authorize(self, *_: object) -> bool:
        return True

    def respond(self, **fields: Any) -> dict[str, Any]:
        return fields


REQUEST = HeartbeatRequest(group_id=GroupId("g"), generation_id=i32(3), member_id="m",
                           group_instance_id=None)


@pytest.mark.parametrize(("raised", "answered"), [
    (load_in_progress(7), ErrorCode.none),
    (not_available(7, "failed"), ErrorCode.coordinator_not_available),
    (None, ErrorCode.rebalance_in_progress),  # the group's own answer, untouched
])
async def test_a_loading_groups_heartbeat_is_answered_none(raised: CoordinatorError | None,
                                                           answered: ErrorCode) -> None:
    response = await heartbeat.handle(_Context(raised), REQUEST)  # type: ignore[arg-type]
    assert response == {"error_code": answered}
