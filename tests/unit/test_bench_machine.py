"""The machine-speed yardstick every bench's rows carry (``storage.machine``), and the echo
reference's answer (``bench heartbeats``' same-run reference)."""

from __future__ import annotations

import struct

import protocol
from coordinator.bench import echo
from storage.machine import KEY, machine_ns_per_op, with_machine


def test_the_micro_loop_is_measured_once_per_process() -> None:
    first = machine_ns_per_op()
    assert 0 < first < 10_000  # ns per dict.get: a few tens on any machine that runs us
    assert machine_ns_per_op() == first
    assert with_machine({"case": "x"}) == {"case": "x", KEY: first}


def test_the_echo_answer_is_a_valid_heartbeat_answer_with_the_requests_correlation_id() -> None:
    answer = echo.answer_template()
    reader = echo.EchoProtocol(answer)

    class Transport:
        def __init__(self) -> None:
            self.written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

    transport = Transport()
    reader.connection_made(transport)  # type: ignore[arg-type]
    frame = echo_request(41)
    reader.data_received(frame + echo_request(42)[:7])  # one whole frame, one begun
    reader.data_received(echo_request(42)[7:])
    assert len(transport.written) == 2
    schema = protocol.schema(68, 1)
    for data, cid in zip(transport.written, (41, 42), strict=True):
        (size,) = struct.unpack_from(">i", data)
        assert size == len(data) - 4
        got, body = protocol.decode_response(schema, data[4:])
        assert got == cid
        assert body.error_code == protocol.ErrorCode.none
        assert body.member_epoch == echo.EPOCH and body.assignment is None


def echo_request(correlation_id: int) -> bytes:
    from coordinator.bench.heartbeat_load import TOPIC
    from coordinator.bench.storm_client import Member

    member = Member(None, "g", (TOPIC,))  # type: ignore[arg-type]  # only encoded here
    member.epoch, member.owned_sent = echo.EPOCH, True
    return protocol.encode_request(member._request(), correlation_id, "bench")
