"""``bench heartbeats``' load generator, run in worker processes of its own so that it does
not take the server's core.

A worker gets whole groups and a share of the connections. It joins its members as
KIP-848 consumers (``storm_client.Member``: the steady request a Java consumer sends once it
reconciled: epoch, no subscription, no owned partitions), waits until every group is stable,
then, from the start time the parent gives, sends each member's steady heartbeat as one
pre-encoded frame (its correlation id names the member), closed or open loop
(``request_loop``), and reads back only the correlation id and the error code of each answer.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection

import protocol
from protocol import ErrorCode

from . import echo
from .request_loop import Check, Outcome, run_window, run_worker
from .storm_client import Member, create_topics, describe_group
from .wire import SIZE, Wire, message

API_VERSIONS = message("api_versions", 3, "ApiVersionsRequest")
HANDSHAKE = message("sasl_handshake", 1, "SaslHandshakeRequest")
AUTHENTICATE = message("sasl_authenticate", 2, "SaslAuthenticateRequest")
USER, PASSWORD = "bench", "bench-secret"
CLIENT_ID = "bench-heartbeats"
TOPIC = "bench-heartbeats"
ERROR_AT = 4 + 1 + 4
"""Where a ConsumerGroupHeartbeat v1 answer's error code starts: the correlation id, the
header's empty tagged fields, the throttle time."""
_ERROR = struct.Struct(">h")
SETUP_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class Plan:
    """What one worker process does."""

    bootstrap: str
    groups: tuple[str, ...]
    members_per_group: int
    connections: int
    rate: float | None
    """This worker's share of the offered rate (heartbeats/s); None: closed loop."""
    ca_file: str | None = None
    sasl_mechanism: str | None = None
    echo: bool = False
    """Against the reference server (``echo``): no set-up, the members' steady heartbeats
    only (as if joined and reconciled: epoch 1, nothing owned to report)."""


# ------------------------------------------------------------------------------ set-up
async def login(wire: Wire, mechanism: str) -> None:
    """SaslHandshake and SaslAuthenticate (PLAIN, or SCRAM's two rounds) as ``USER``."""
    import scramp

    handshake, _ = await wire.request(protocol.make(HANDSHAKE, mechanism=mechanism))
    assert handshake.error_code == ErrorCode.none, handshake
    if mechanism == "PLAIN":
        answer, _ = await wire.request(protocol.make(
            AUTHENTICATE, auth_bytes=f"\0{USER}\0{PASSWORD}".encode()))
        assert answer.error_code == ErrorCode.none, answer
        return
    scram = scramp.ScramClient([mechanism], USER, PASSWORD)
    first, _ = await wire.request(protocol.make(
        AUTHENTICATE, auth_bytes=scram.get_client_first().encode()))
    assert first.error_code == ErrorCode.none, first
    scram.set_server_first(bytes(first.auth_bytes).decode())
    final, _ = await wire.request(protocol.make(
        AUTHENTICATE, auth_bytes=scram.get_client_final().encode()))
    assert final.error_code == ErrorCode.none, final
    scram.set_server_final(bytes(final.auth_bytes).decode())


async def open_wire(plan: Plan) -> Wire:
    context = ssl.create_default_context(cafile=plan.ca_file) if plan.ca_file else None
    wire = await Wire.connect(plan.bootstrap, context, CLIENT_ID)
    if plan.echo:
        return wire
    await wire.request(protocol.make(API_VERSIONS, client_software_name="bench",
                                     client_software_version="1"))
    if plan.sasl_mechanism is not None:
        await login(wire, plan.sasl_mechanism)
    return wire


async def create_topic(plan: Plan, partitions: int) -> None:
    wire = await open_wire(plan)
    try:
        await create_topics(wire, [TOPIC], partitions)
    finally:
        await wire.close()


async def _stable(wire: Wire, group_id: str, members: list[Member]) -> bool:
    group = await describe_group(wire, group_id)
    return (group.group_state == "Stable" and group.assignment_epoch == group.group_epoch
            and len(group.members) == len(members)
            and all(m.epoch == group.group_epoch for m in members))


def members_of(plan: Plan, wires: list[Wire]) -> dict[str, list[Member]]:
    """The plan's members by group, spread over ``wires`` in turn."""
    by_group: dict[str, list[Member]] = {}
    index = 0
    for group_id in plan.groups:
        by_group[group_id] = []
        for _ in range(plan.members_per_group):
            by_group[group_id].append(Member(wires[index % len(wires)], group_id, (TOPIC,)))
            index += 1
    return by_group


def as_reconciled(by_group: dict[str, list[Member]]) -> dict[str, list[Member]]:
    """The members as the echo reference sees them: joined at epoch 1, owning what they
    reported (so their heartbeats are the steady ones, of the same size)."""
    for members in by_group.values():
        for member in members:
            member.epoch, member.owned_sent = echo.EPOCH, True
    return by_group


async def join(plan: Plan, wires: list[Wire]) -> dict[str, list[Member]]:
    """Every member joined and reconciled, every group stable."""
    by_group = members_of(plan, wires)
    everyone = [m for members in by_group.values() for m in members]
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    unsettled = dict(by_group)
    while unsettled:
        if time.monotonic() > deadline:
            raise TimeoutError(f"groups not stable after {SETUP_TIMEOUT_S}s: {sorted(unsettled)}")
        changed = await asyncio.gather(*(m.heartbeat() for m in everyone))
        if any(changed) or not all(m.owned_sent for m in everyone):
            continue  # acknowledge what changed at once
        for group_id, members in list(unsettled.items()):
            if await _stable(wires[0], group_id, members):
                del unsettled[group_id]
        if unsettled:
            await asyncio.sleep(0.1)
    return by_group


# ------------------------------------------------------------------------------ the load
def _checker(ids: list[int]) -> Check:
    def check(member: int, frame: bytes) -> str | None:
        (got,) = SIZE.unpack_from(frame, 0)
        if got != ids[member]:
            return f"correlation id {got}, expected {ids[member]}"
        (code,) = _ERROR.unpack_from(frame, ERROR_AT)
        return f"error code {code}" if code else None

    return check


async def run_load(plan: Plan, pipe: Connection) -> Outcome:
    wires = [await open_wire(plan) for _ in range(plan.connections)]
    try:
        by_group = (as_reconciled(members_of(plan, wires)) if plan.echo
                    else await join(plan, wires))
        everyone = [m for members in by_group.values() for m in members]
        # each member's steady heartbeat, its correlation id naming the member
        frames = [protocol.encode_request(m._request(), i, CLIENT_ID)
                  for i, m in enumerate(everyone)]
        members: list[list[int]] = [[] for _ in wires]
        for i, member in enumerate(everyone):
            members[wires.index(member.wire)].append(i)
        recorder, connections, drained = await run_window(
            pipe, wires, frames.__getitem__, _checker(list(range(len(everyone)))), members,
            plan.rate)
        if drained and not plan.echo:  # else the sessions expire later
            for connection in connections:
                connection.detach()
            await asyncio.gather(*(m.leave() for m in everyone))
        return recorder.outcome(len(everyone))
    finally:
        for wire in wires:
            await wire.close()


def worker_main(plan: Plan, pipe: Connection) -> None:
    """A worker process: runs ``plan``, then sends its ``Outcome`` (or ("failed", why))."""
    run_worker(run_load(plan, pipe), pipe)
