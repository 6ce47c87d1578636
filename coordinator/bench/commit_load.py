"""``bench commits``' load generator, run in worker processes of its own.

Each client commits the offsets of ``partitions`` partitions of one topic for a group of its
own (OffsetCommit v8 as an admin or a standalone consumer sends it: generation -1, no member),
one commit in flight at a time (closed loop) or at a rate (open loop, ``request_loop``). Every
commit carries new offsets: the frame is encoded once with marker offsets, and each commit
writes the client's next offset over them. An answer is checked by its correlation id, its
length and each partition's error code, read at their places in the answer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import protocol
from protocol import ErrorCode

from .request_loop import Check, Outcome, run_window, run_worker
from .wire import SIZE, Wire, message

COMMIT = message("offset_commit", 8, "OffsetCommitRequest")
COMMIT_TOPIC = message("offset_commit", 8, "OffsetCommitRequestTopic")
COMMIT_PARTITION = message("offset_commit", 8, "OffsetCommitRequestPartition")
CLIENT_ID = "bench-commits"
TOPIC = "bench-commits"
_OFFSET = struct.Struct(">q")
_ERROR = struct.Struct(">h")
_MARK = 0x5A5A_0000_0000_0000
"""Marker offsets (plus the partition index) whose places in the frame take each commit's."""


@dataclass(frozen=True, slots=True)
class Plan:
    bootstrap: str
    groups: tuple[str, ...]
    """One committing client per group."""
    partitions: int
    connections: int
    rate: float | None


def commit_request(group_id: str, partitions: int, offset: int | None = None) -> Any:
    """Offsets of partitions 0..n-1 of ``TOPIC`` (``offset``, or the markers)."""
    return protocol.make(
        COMMIT, group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(protocol.make(COMMIT_TOPIC, name=TOPIC, partitions=tuple(
            protocol.make(COMMIT_PARTITION, partition_index=p,
                          committed_offset=_MARK + p if offset is None else offset,
                          committed_leader_epoch=-1, committed_metadata="")
            for p in range(partitions))),))


class Template:
    """A client's commit frame and where its offsets are."""

    def __init__(self, group_id: str, partitions: int, correlation_id: int) -> None:
        self.frame = bytearray(protocol.encode_request(commit_request(group_id, partitions),
                                                       correlation_id, CLIENT_ID))
        self.places = [self.frame.index(_OFFSET.pack(_MARK + p)) for p in range(partitions)]
        self.next_offset = 0

    def next(self) -> bytes:
        self.next_offset += 1
        for place in self.places:
            _OFFSET.pack_into(self.frame, place, self.next_offset)
        return bytes(self.frame)


def answer_layout(partitions: int) -> tuple[int, list[int]]:
    """(length, places of each partition's error code) of an OffsetCommit v8 answer for one
    topic: correlation id, header tags; throttle time, topics (compact array), the name
    (compact string), partitions (compact array) of index, error code and tags each."""
    start = 4 + 1 + 4 + 1 + 1 + len(TOPIC.encode()) + 1
    errors = [start + 7 * p + 4 for p in range(partitions)]
    return start + 7 * partitions + 1 + 1, errors


def _checker(partitions: int) -> Check:
    length, places = answer_layout(partitions)

    def check(client: int, frame: bytes) -> str | None:
        (got,) = SIZE.unpack_from(frame, 0)
        if got != client:
            return f"correlation id {got}, expected {client}"
        if len(frame) != length:
            return f"answer of {len(frame)} bytes, expected {length}"
        for place in places:
            (code,) = _ERROR.unpack_from(frame, place)
            if code:
                return f"error code {code}"
        return None

    return check


async def run_load(plan: Plan, pipe: Connection) -> Outcome:
    wires = [await Wire.connect(plan.bootstrap, client_id=CLIENT_ID)
             for _ in range(plan.connections)]
    try:
        for index, group_id in enumerate(plan.groups):  # each group exists, commits work
            answer, _ = await wires[index % len(wires)].request(
                commit_request(group_id, plan.partitions, 0))
            codes = {p.error_code for t in answer.topics for p in t.partitions}
            if codes != {ErrorCode.none}:
                raise RuntimeError(f"commit for {group_id}: {codes}")
        templates = [Template(g, plan.partitions, i) for i, g in enumerate(plan.groups)]
        clients: list[list[int]] = [[] for _ in wires]
        for index in range(len(templates)):
            clients[index % len(wires)].append(index)
        recorder, _, _ = await run_window(pipe, wires, lambda c: templates[c].next(),
                                          _checker(plan.partitions), clients, plan.rate)
        return recorder.outcome(len(templates))
    finally:
        for wire in wires:
            await wire.close()


def worker_main(plan: Plan, pipe: Connection) -> None:
    """A worker process: runs ``plan``, then sends its ``Outcome`` (or ("failed", why))."""
    run_worker(run_load(plan, pipe), pipe)
