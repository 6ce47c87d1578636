"""Steady heartbeats answered from a connection's shortcuts (``dispatch.Shortcut``, answered in
the read's callback by ``server.Connection``) answer what dispatching them would: in request
order among other requests, with their own correlation ids; a fault rule armed afterwards
still applies to them; the session they keep alive still expires once they stop; a member
fenced meanwhile is told so."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator

import pytest

import protocol
from coordinator.bench.storm_client import Member, create_topics, describe_group
from coordinator.bench.wire import Wire, message
from kafka_coordinator.control import ControlClient
from kafka_coordinator.faults import Faults
from protocol import ErrorCode
from tests.harness import ServerProcess

SESSION_MS = 2000
OVERRIDES = {
    "control.listener": "http://127.0.0.1:0",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
}
METADATA = message("metadata", 12, "MetadataRequest")
_ERROR_AT = 4 + 1 + 4  # correlation id, the header's tags, the throttle time
_SIZE = struct.Struct(">i")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("shortcuts") / "data", OVERRIDES) as process:
        process.wait_loaded()
        yield process


async def _steady_member(server: ServerProcess, group: str) -> tuple[Wire, Member]:
    wire = await Wire.connect(server.bootstrap, None, "shortcuts")
    await create_topics(wire, [f"{group}-topic"], 2)
    member = Member(wire, group, (f"{group}-topic",))
    for _ in range(50):  # join, take the assignment, acknowledge it
        await member.heartbeat()
        described = await describe_group(wire, group)
        if (member.owned_sent and described.group_state == "Stable"
                and described.assignment_epoch == member.epoch == described.group_epoch):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the member did not settle")
    await member.heartbeat()  # the steady request, answered at once: its shortcut is kept
    return wire, member


async def _pipelined(server: ServerProcess, member: Member, count: int
                     ) -> list[tuple[int, int, bytes]]:
    """``count`` of the member's steady heartbeats, a Metadata request after every fourth,
    in one write on a connection of their own: (correlation id, api key, answer) in the order
    the answers came."""
    request = member._request()
    frames, expected = [], []
    for i in range(count):
        frames.append(protocol.encode_request(request, i, "shortcuts"))
        expected.append(68)
        if i % 4 == 3:
            frames.append(protocol.encode_request(
                protocol.make(METADATA, topics=(), allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False), 100_000 + i,
                "shortcuts"))
            expected.append(3)
    reader, writer = await asyncio.open_connection(*server.bootstrap.rsplit(":", 1))
    try:
        writer.write(b"".join(frames))
        answers = []
        for api_key in expected:
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            frame = await reader.readexactly(size)
            answers.append((_SIZE.unpack_from(frame)[0], api_key, frame))
        return answers
    finally:
        writer.close()


def test_steady_heartbeats_are_answered_in_order_as_dispatched(server: ServerProcess) -> None:
    async def run() -> None:
        wire, member = await _steady_member(server, "shortcuts-order")
        try:
            # the second connection dispatches the first heartbeat and keeps its shortcut:
            # the rest are answered from it, between Metadata answers, in request order
            answers = await _pipelined(server, member, 200)
            expected = [cid for i in range(200)
                        for cid in ((i, 100_000 + i) if i % 4 == 3 else (i,))]
            assert [cid for cid, _, _ in answers] == expected
            heartbeats = [frame for _, key, frame in answers if key == 68]
            assert len(heartbeats) == 200
            decoded = [protocol.decode_response(protocol.schema(68, 1), frame)[1]
                       for frame in heartbeats]
            assert {(r.error_code, r.member_epoch, r.member_id) for r in decoded} == \
                {(ErrorCode.none, member.epoch, member.member_id)}
        finally:
            await wire.close()

    asyncio.run(run())


def test_a_fault_armed_later_applies_to_a_shortcut_heartbeat(server: ServerProcess) -> None:
    assert server.control_url is not None
    faults = Faults(ControlClient(server.control_url))

    async def run() -> None:
        wire, member = await _steady_member(server, "shortcuts-fault")
        try:
            await member.heartbeat()
            faults.error("ConsumerGroupHeartbeat", "COORDINATOR_NOT_AVAILABLE",
                         group="shortcuts-fault", count=1)
            response, _ = await wire.request(member._request())
            assert response.error_code == ErrorCode.coordinator_not_available
            response, _ = await wire.request(member._request())  # the rule is spent
            assert response.error_code == ErrorCode.none
        finally:
            faults.clear()
            await wire.close()

    asyncio.run(run())


@pytest.mark.slow
def test_the_session_kept_by_shortcuts_expires_once_they_stop(server: ServerProcess) -> None:
    async def run() -> None:
        wire, member = await _steady_member(server, "shortcuts-session")
        try:
            loop = asyncio.get_running_loop()
            until = loop.time() + 2.5 * SESSION_MS / 1000
            while loop.time() < until:  # heartbeats for longer than a session
                response, _ = await wire.request(member._request())
                assert response.error_code == ErrorCode.none
                await asyncio.sleep(0.2)
            described = await describe_group(wire, "shortcuts-session")
            assert [m.member_id for m in described.members] == [member.member_id]
            deadline = loop.time() + 10 * SESSION_MS / 1000
            while (await describe_group(wire, "shortcuts-session")).members:
                assert loop.time() < deadline, "the silent member's session did not expire"
                await asyncio.sleep(0.1)
            # the same bytes again: not steady any more, dispatched, and fenced
            response, _ = await wire.request(member._request())
            assert response.error_code == ErrorCode.unknown_member_id
        finally:
            await wire.close()

    asyncio.run(run())
