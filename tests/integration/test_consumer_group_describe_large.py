"""ConsumerGroupDescribe of a group larger than one building turn (``MEMBERS_PER_TURN``): 150
consumer-protocol members over TCP (the bench's wire client), described while other requests
keep being answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.apis.consumer_group_describe import MEMBERS_PER_TURN
from coordinator.bench.storm_client import Member, Wire, create_topics, describe_group
from tests.harness import ServerProcess

MEMBERS, PARTITIONS = 150, 300


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", {
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.consumer.assignment.interval.ms": "0"}) as process:
        yield process


@pytest.mark.slow
async def test_a_large_group_is_described_whole(server: ServerProcess) -> None:
    assert MEMBERS > MEMBERS_PER_TURN
    admin = await Wire.connect(server.bootstrap)
    conns = [await Wire.connect(server.bootstrap) for _ in range(10)]
    await create_topics(admin, ["wide"], PARTITIONS)
    members = [Member(conns[i % len(conns)], "big", ("wide",)) for i in range(MEMBERS)]
    for member in members:
        member.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            group = await describe_group(admin, "big")
            if (group.group_state == "Stable" and len(group.members) == MEMBERS
                    and group.assignment_epoch == group.group_epoch):
                break
            assert time.monotonic() < deadline, f"not stable: {group.group_state}"
            await asyncio.sleep(0.2)
        owned: list[int] = []
        for described in group.members:
            mine = [(tp.topic_name, p) for tp in described.assignment.topic_partitions
                    for p in tp.partitions]
            target = [(tp.topic_name, p) for tp in described.target_assignment.topic_partitions
                      for p in tp.partitions]
            assert mine == target and len(mine) == PARTITIONS // MEMBERS
            owned += [p for _, p in mine]
        assert sorted(owned) == list(range(PARTITIONS))  # every partition, each once
        assert {m.member_id for m in group.members} == {m.member_id for m in members}
    finally:
        await asyncio.gather(*(m.stop() for m in members))
        for wire in [admin, *conns]:
            await wire.close()
