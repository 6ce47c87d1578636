"""A protocol-level Kafka Streams instance: one streams group member (KIP-1071) per process.

It speaks StreamsGroupHeartbeat v0 as Kafka 4.3's ``StreamsGroupHeartbeatRequestManager`` and
``StreamsMembershipManager`` do:

* it joins with member epoch 0, its topology, process id, user endpoint, rebalance timeout,
  client tags and three empty task lists (``EndpointInformationEpoch`` -1);
* it heartbeats every ``HeartbeatIntervalMs`` the server gives, echoing the last endpoint
  information epoch it received; the three owned task lists are sent only when the owned set
  changed since the last one the server took, null otherwise;
* a response's task lists are the complete assignment: tasks owned but no longer assigned are
  revoked first (the member stops owning them, prints it, and reports the reduced set at
  once); only once that report was answered does it take the tasks newly assigned (and reports
  those) -- so the server's "revocation before assignment" is what its output shows;
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: every task is lost, it rejoins with epoch 0 and the
  same member id; retriable coordinator errors are retried;
* ``--revoke-delay-ms``: closing revoked tasks takes that long (it heartbeats meanwhile,
  still owning them), as a Streams thread flushing and committing before it lets a task go;
* it leaves with epoch -1 (after revoking everything) on ``leave`` or end of stdin; ``shutdown``
  on stdin sets ``ShutdownApplication`` on its heartbeats; with ``--leave-on-shutdown`` it
  leaves once a response carries SHUTDOWN_APPLICATION, as Kafka Streams shuts down;
  ``--hold``: it joins only when a ``join`` line comes.

Every request frame is encoded with kio (Kafka's schema classes), decoded back with kio and
compared equal (and compared with the repository's own encoder, byte for byte); every response
frame is decoded with kio and encoded again, and the bytes must be identical (no unknown,
missing or tagged field slips through), and the response must keep the invariants the Kafka
client relies on. Anything else ends the process with a ``violation`` line and exit code 3.

Output: one JSON object per line with ``t`` (``time.monotonic()``, system-wide on Linux, so
the lines of several members can be merged in time order), ``event``, ``member``, ``process``,
``epoch`` and the owned ``active`` / ``standby`` / ``warmup`` tasks (``[subtopology,
partition]`` pairs), plus per event: ``tasks`` (assign/revoke/lost: what changed), ``statuses``
(``[code, detail]``), ``assignment`` (the task lists of the response, when present),
``endpoint_epoch``, ``endpoints`` (``PartitionsByUserEndpoint``, when present), ``error``,
``sent_at`` (heartbeat: when its request was sent, on the same clock as ``t``).

Run: ``python -m tests.integration.streams_member --bootstrap HOST:PORT --group APP
--topology JSON [--member-id ID] [--process-id ID] [--endpoint HOST:PORT] ...``. The topology
JSON: ``{"epoch": 0, "subtopologies": [{"id": "0", "source": ["input"], "sink": ["app-r"],
"changelog": ["app-store-changelog"], "repartition_source": [{"name": "app-r",
"partitions": 0}]}]}``.
"""

from __future__ import annotations

import argparse
import datetime
import io
import itertools
import json
import select
import socket
import struct
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.streams_group_describe.v0 import request as describe_request
from kio.schema.streams_group_describe.v0 import response as describe_response
from kio.schema.streams_group_heartbeat.v0 import request as hb_request
from kio.schema.streams_group_heartbeat.v0 import response as hb_response
from kio.schema.types import GroupId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i32Timedelta, u16

import protocol

HEARTBEAT_API_KEY = 88
DESCRIBE_API_KEY = 89

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNKNOWN_MEMBER_ID = 25
FENCED_MEMBER_EPOCH = 110
RETRIABLE = {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
REJOIN = {UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH}

STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
KNOWN_STATUSES = {0, 1, 2, 3, 4, 5}  # 6 (MISSING_CLIENT_TAGS) is response v1 only

ROLES = ("active", "standby", "warmup")
Task = tuple[str, int]
Owned = dict[str, frozenset[Task]]

_SIZE = struct.Struct(">i")


class SchemaViolation(AssertionError):
    """A frame that does not round-trip through Kafka's schema classes, or a response that
    breaks an invariant the Kafka client relies on."""


# ------------------------------------------------------------------------------ kio framing
def _write(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def _read(cls: type[Any], frame: bytes, offset: int) -> tuple[Any, int]:
    value, size = entity_reader(cls)(frame, offset)
    return value, offset + size


def encode_request(body: Any, correlation_id: int, client_id: str) -> bytes:
    """The request frame (size prefix included), cross-checked: kio decodes kio's bytes back to
    an equal header and body, nothing is left over, and the repository's encoder agrees."""
    header = RequestHeader(request_api_key=body.__api_key__,
                           request_api_version=body.__version__,
                           correlation_id=i32(correlation_id), client_id=client_id)
    payload = _write(header) + _write(body)
    got_header, offset = _read(RequestHeader, payload, 0)
    got_body, end = _read(type(body), payload, offset)
    if got_header != header:
        raise SchemaViolation(f"request header round trip: {header} != {got_header}")
    if got_body != body:
        raise SchemaViolation(f"request round trip: {body} != {got_body}")
    if end != len(payload):
        raise SchemaViolation(f"request round trip left {len(payload) - end} bytes")
    frame = _SIZE.pack(len(payload)) + payload
    ours = protocol.encode_request(body, correlation_id, client_id)
    if ours != frame:
        raise SchemaViolation(f"the repository encodes {type(body).__name__} differently from "
                              f"kio:\n kio  {frame.hex()}\n ours {ours.hex()}")
    return frame


def decode_response(cls: type[Any], frame: bytes, correlation_id: int) -> Any:
    """A response frame (size prefix removed) decoded with kio; encoding the decoded header and
    body again must give the very same bytes."""
    header, offset = _read(ResponseHeader, frame, 0)
    body, end = _read(cls, frame, offset)
    if end != len(frame):
        raise SchemaViolation(f"{cls.__name__}: {len(frame) - end} bytes after the body")
    again = _write(header) + _write(body)
    if again != frame:
        raise SchemaViolation(f"{cls.__name__} does not re-encode to the bytes received:\n"
                              f" got   {frame.hex()}\n again {again.hex()}")
    if header.correlation_id != correlation_id:
        raise SchemaViolation(f"correlation id {header.correlation_id}, expected "
                              f"{correlation_id}")
    return body


class KioConnection:
    """A blocking connection whose every request and response goes through the checks of
    :func:`encode_request` and :func:`decode_response`."""

    RESPONSES: Mapping[int, type[Any]] = {
        HEARTBEAT_API_KEY: hb_response.StreamsGroupHeartbeatResponse,
        DESCRIBE_API_KEY: describe_response.StreamsGroupDescribeResponse,
    }

    def __init__(self, bootstrap: str, client_id: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._next = 1

    def request(self, body: Any) -> Any:
        cid = self._next
        self._next += 1
        self.sock.sendall(encode_request(body, cid, self.client_id))
        (size,) = _SIZE.unpack(self._exactly(4))
        return decode_response(self.RESPONSES[int(body.__api_key__)], self._exactly(size), cid)

    def _exactly(self, size: int) -> bytes:
        chunks, remaining = [], size
        while remaining:
            chunk = self.sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KioConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------ messages
def topology(spec: Mapping[str, Any]) -> hb_request.Topology:
    """The request's Topology from the JSON spec (lists sorted, as Kafka Streams sends them)."""

    def info(entry: str | Mapping[str, Any]) -> hb_request.TopicInfo:
        if isinstance(entry, str):
            entry = {"name": entry}
        return hb_request.TopicInfo(
            name=entry["name"], partitions=entry.get("partitions", 0),
            replication_factor=entry.get("replication_factor", -1),
            topic_configs=tuple(hb_request.KeyValue(key=k, value=v)
                                for k, v in sorted(entry.get("configs", {}).items())))

    def infos(entries: Iterable[str | Mapping[str, Any]]) -> tuple[hb_request.TopicInfo, ...]:
        return tuple(sorted((info(e) for e in entries), key=lambda i: i.name))

    subtopologies = tuple(
        hb_request.Subtopology(
            subtopology_id=s["id"], source_topics=tuple(sorted(s.get("source", ()))),
            source_topic_regex=(), state_changelog_topics=infos(s.get("changelog", ())),
            repartition_sink_topics=tuple(sorted(s.get("sink", ()))),
            repartition_source_topics=infos(s.get("repartition_source", ())),
            copartition_groups=())
        for s in sorted(spec["subtopologies"], key=lambda s: s["id"]))
    return hb_request.Topology(epoch=spec.get("epoch", 0), subtopologies=subtopologies)


def task_ids(tasks: Iterable[Task]) -> tuple[hb_request.TaskIds, ...]:
    by_sub: dict[str, set[i32]] = {}
    for sub, partition in tasks:
        by_sub.setdefault(sub, set()).add(i32(partition))
    return tuple(hb_request.TaskIds(subtopology_id=s, partitions=tuple(sorted(p)))
                 for s, p in sorted(by_sub.items()))


def tasks_of(ids: Iterable[Any]) -> frozenset[Task]:
    return frozenset((t.subtopology_id, int(p)) for t in ids for p in t.partitions)


def describe(bootstrap: str, group_ids: Iterable[str], client_id: str = "streams-describe"
             ) -> Any:
    """StreamsGroupDescribe v0 through a checked connection."""
    with KioConnection(bootstrap, client_id) as conn:
        return conn.request(describe_request.StreamsGroupDescribeRequest(
            group_ids=tuple(GroupId(g) for g in group_ids),
            include_authorized_operations=False))


def check_heartbeat_response(response: Any, member_id: str, leaving: bool = False) -> None:
    """What the Kafka 4.3 client relies on (``StreamsGroupHeartbeatResponse``,
    ``StreamsMembershipManager``); a leave is answered with epoch -1 and no statuses."""
    lists = (response.active_tasks, response.standby_tasks, response.warmup_tasks)
    if int(response.error_code) != NONE:
        if any(t is not None for t in lists) or response.partitions_by_user_endpoint:
            raise SchemaViolation(f"an error response with tasks or endpoints: {response}")
        return
    if response.member_id != member_id:
        raise SchemaViolation(f"member id {response.member_id!r}, expected {member_id!r}")
    if response.status is None:
        raise SchemaViolation("a successful heartbeat response without a status list")
    for status in response.status:
        if status.status_code not in KNOWN_STATUSES:
            raise SchemaViolation(f"status code {status.status_code} is not defined for v0")
    if any(t is None for t in lists) and not all(t is None for t in lists):
        raise SchemaViolation(f"task lists partly null: {lists}")
    for ids in lists:
        for t in ids or ():
            if list(t.partitions) != sorted(set(t.partitions)):
                raise SchemaViolation(f"partitions not sorted or repeated: {t}")
        subs = [t.subtopology_id for t in ids or ()]
        if len(subs) != len(set(subs)):
            raise SchemaViolation(f"a subtopology listed twice: {ids}")
    if lists[0] is not None:
        roles = [tasks_of(ids or ()) for ids in lists]
        for (i, a), (j, b) in itertools.combinations(enumerate(roles), 2):
            if a & b:
                raise SchemaViolation(f"tasks {sorted(a & b)} given as {ROLES[i]} and "
                                      f"{ROLES[j]} at once")
    if leaving:
        if response.member_epoch != -1 or response.status or any(t is not None for t in lists):
            raise SchemaViolation(f"a leave answered with {response}")
    elif response.member_epoch < 0:
        raise SchemaViolation(f"member epoch {response.member_epoch} on a heartbeat")


# ------------------------------------------------------------------------------ the member
def _pairs(tasks: Iterable[Task]) -> list[list[Any]]:
    return [[s, p] for s, p in sorted(tasks)]


def _empty() -> Owned:
    return {role: frozenset() for role in ROLES}


@dataclass
class StreamsMember:
    bootstrap: str
    group_id: str
    topology: Mapping[str, Any]
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    process_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    endpoint: tuple[str, int] | None = None
    rebalance_timeout_ms: int = 30000
    client_tags: Mapping[str, str] = field(default_factory=dict)
    rack_id: str | None = None
    client_id: str = "streams-member"
    leave_on_shutdown: bool = False
    out: TextIO = sys.stdout

    epoch: int = 0
    endpoint_epoch: int = -1
    interval_s: float = 0.0
    owned: Owned = field(default_factory=_empty)
    assigned: Owned | None = None
    """The latest complete assignment received (None until the first one)."""
    reported: Owned | None = None
    """The owned set the server last took (None: never)."""
    shutdown_requested: bool = False
    revoke_delay_ms: int = 0
    """How long closing revoked tasks takes."""
    revoke_at: float | None = None
    conn: KioConnection | None = None

    # --- output -------------------------------------------------------------------------------
    def emit(self, event: str, **fields: Any) -> None:
        row = {"t": time.monotonic(), "event": event, "member": self.member_id,
               "process": self.process_id, "epoch": self.epoch,
               **{role: _pairs(self.owned[role]) for role in ROLES}, **fields}
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    # --- requests -----------------------------------------------------------------------------
    def _request(self, leaving: bool = False) -> Any:
        owned_lists: dict[str, Any] = dict.fromkeys(
            ("active_tasks", "standby_tasks", "warmup_tasks"))
        joining = self.epoch == 0 and not leaving
        if joining:
            owned_lists = {f"{role}_tasks": () for role in ROLES}
        elif not leaving and self.owned != self.reported:
            owned_lists = {f"{role}_tasks": task_ids(self.owned[role]) for role in ROLES}
        host_port = self.endpoint
        return hb_request.StreamsGroupHeartbeatRequest(
            group_id=GroupId(self.group_id), member_id=self.member_id,
            member_epoch=i32(-1 if leaving else self.epoch),
            endpoint_information_epoch=i32(self.endpoint_epoch), instance_id=None,
            rack_id=self.rack_id if joining else None,
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(
                milliseconds=self.rebalance_timeout_ms if joining else -1)),
            topology=topology(self.topology) if joining else None,
            **owned_lists,
            process_id=self.process_id if joining else None,
            user_endpoint=hb_request.Endpoint(host=host_port[0], port=u16(host_port[1]))
            if joining and host_port is not None else None,
            client_tags=tuple(hb_request.KeyValue(key=k, value=v)
                              for k, v in sorted(self.client_tags.items()))
            if joining else None,
            task_offsets=None, task_end_offsets=None,
            shutdown_application=self.shutdown_requested)

    def _send(self, request: Any) -> Any:
        if self.conn is None:
            self.conn = KioConnection(self.bootstrap, self.client_id)
        try:
            return self.conn.request(request)
        except (OSError, ConnectionError):
            self.conn.close()
            self.conn = None
            raise

    # --- one heartbeat ------------------------------------------------------------------------
    def heartbeat(self) -> bool:
        """Send one heartbeat and act on its response. True when the next one is due now
        (the owned set changed, or a rejoin)."""
        request = self._request()
        sent = {role: self.owned[role] for role in ROLES} if request.active_tasks is not None \
            else None
        sent_at = time.monotonic()
        response = self._send(request)
        check_heartbeat_response(response, self.member_id)
        code = int(response.error_code)
        if code in RETRIABLE:
            self.emit("retry", error=code, message=response.error_message)
            self.interval_s = 0.1
            return False
        if code in REJOIN:
            # every task is lost (no longer owned from now on), then a rejoin with epoch 0
            lost = [t for role in ROLES for t in self.owned[role]]
            self.owned, self.assigned, self.reported = _empty(), None, None
            self.epoch, self.revoke_at = 0, None
            self.emit("lost", tasks=_pairs(lost), error=code, message=response.error_message)
            return True
        if code != NONE:
            self.emit("fatal", error=code, message=response.error_message)
            raise SystemExit(2)

        self.epoch = int(response.member_epoch)
        self.endpoint_epoch = int(response.endpoint_information_epoch)
        self.interval_s = response.heartbeat_interval.total_seconds()
        if sent is not None:
            self.reported = sent
        received = None
        if response.active_tasks is not None:
            self.assigned = {
                "active": tasks_of(response.active_tasks),
                "standby": tasks_of(response.standby_tasks),
                "warmup": tasks_of(response.warmup_tasks)}
            received = {role: _pairs(self.assigned[role]) for role in ROLES}
        endpoints = None
        if response.partitions_by_user_endpoint is not None:
            endpoints = [
                {"host": e.user_endpoint.host, "port": int(e.user_endpoint.port),
                 "active": [[tp.topic, list(tp.partitions)] for tp in e.active_partitions],
                 "standby": [[tp.topic, list(tp.partitions)] for tp in e.standby_partitions]}
                for e in response.partitions_by_user_endpoint]
        statuses = [[int(s.status_code), s.status_detail] for s in response.status]
        self.emit("heartbeat", sent_at=sent_at, statuses=statuses, assignment=received,
                  endpoint_epoch=self.endpoint_epoch, endpoints=endpoints,
                  interval_ms=round(self.interval_s * 1000))
        if self.leave_on_shutdown and any(c == SHUTDOWN_APPLICATION for c, _ in statuses):
            raise _Leave
        return self.reconcile()

    def reconcile(self) -> bool:
        """Revoke what is no longer assigned and report it; only after that report was
        answered, take what is new. True when the owned set changed (report it now)."""
        if self.assigned is None:
            return False
        revoke = {role: self.owned[role] - self.assigned[role] for role in ROLES}
        if any(revoke.values()):
            # closing the tasks takes revoke_delay_ms (heartbeats go on meanwhile, owning
            # them still); then they are no longer owned and that is reported at once
            if self.revoke_at is None:
                self.revoke_at = time.monotonic() + self.revoke_delay_ms / 1000
                if self.revoke_delay_ms:
                    self.emit("revoking", tasks={role: _pairs(revoke[role]) for role in ROLES})
            if time.monotonic() < self.revoke_at:
                return False
            self.revoke_at = None
            self.owned = {role: self.owned[role] - revoke[role] for role in ROLES}
            self.emit("revoke", tasks={role: _pairs(revoke[role]) for role in ROLES})
            return True
        self.revoke_at = None
        if self.owned != self.reported:
            return True  # the revocation is not reported yet: take nothing new
        add = {role: self.assigned[role] - self.owned[role] for role in ROLES}
        if any(add.values()):
            self.owned = {role: self.owned[role] | add[role] for role in ROLES}
            self.emit("assign", tasks={role: _pairs(add[role]) for role in ROLES})
            return True
        return False

    def leave(self) -> None:
        if any(self.owned.values()):
            revoked = self.owned
            self.owned = _empty()
            self.emit("revoke", tasks={role: _pairs(revoked[role]) for role in ROLES})
        if self.epoch == 0 and self.reported is None:
            self.emit("left", error=None)
            return
        try:
            response = self._send(self._request(leaving=True))
            check_heartbeat_response(response, self.member_id, leaving=True)
            self.emit("left", error=int(response.error_code))
        except (OSError, ConnectionError) as exc:
            self.emit("left", error=str(exc))

    # --- the loop ---------------------------------------------------------------------------
    def run(self, commands: TextIO | None, hold: bool = False) -> None:
        """Heartbeat until ``leave`` or the end of ``commands``; with ``hold``, join only on
        a ``join`` line (so that a test can time a join without a process start in it)."""
        self.emit("started")
        while hold and commands is not None:
            line = commands.readline()
            if not line or line.strip() == "leave":
                self.emit("left", error=None)
                return
            hold = line.strip() != "join"
        next_heartbeat = time.monotonic()
        try:
            while True:
                wake = next_heartbeat if self.revoke_at is None else min(next_heartbeat,
                                                                         self.revoke_at)
                wait = max(0.0, wake - time.monotonic())
                if commands is not None:
                    ready, _, _ = select.select([commands], [], [], wait)
                    if ready:
                        line = commands.readline()
                        if not line or line.strip() == "leave":
                            raise _Leave
                        if line.strip() == "shutdown":
                            self.shutdown_requested = True
                            self.emit("shutdown-requested")
                            next_heartbeat = time.monotonic()
                        continue
                else:
                    time.sleep(wait)
                now = time.monotonic()
                if self.revoke_at is not None and now >= self.revoke_at and self.reconcile():
                    next_heartbeat = now  # the revocation is reported at once
                if now < next_heartbeat:
                    continue
                try:
                    at_once = self.heartbeat()
                except (OSError, ConnectionError) as exc:
                    self.emit("disconnected", error=str(exc))
                    self.interval_s, at_once = 0.2, False
                next_heartbeat = time.monotonic() + (0.0 if at_once else self.interval_s)
        except _Leave:
            self.leave()


class _Leave(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A protocol-level Kafka Streams instance.")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topology", required=True, help="JSON, see the module docstring")
    parser.add_argument("--member-id", default=None)
    parser.add_argument("--process-id", default=None)
    parser.add_argument("--endpoint", default=None, help="HOST:PORT (application.server)")
    parser.add_argument("--rebalance-timeout-ms", type=int, default=30000)
    parser.add_argument("--client-id", default="streams-member")
    parser.add_argument("--rack", default=None)
    parser.add_argument("--tag", action="append", default=[], help="KEY=VALUE client tag")
    parser.add_argument("--leave-on-shutdown", action="store_true")
    parser.add_argument("--hold", action="store_true", help="join on a 'join' line only")
    parser.add_argument("--revoke-delay-ms", type=int, default=0,
                        help="how long closing revoked tasks takes")
    args = parser.parse_args(argv)
    endpoint = None
    if args.endpoint:
        host, port = args.endpoint.rsplit(":", 1)
        endpoint = (host, int(port))
    member = StreamsMember(
        args.bootstrap, args.group, json.loads(args.topology),
        member_id=args.member_id or str(uuid.uuid4()),
        process_id=args.process_id or str(uuid.uuid4()), endpoint=endpoint,
        rebalance_timeout_ms=args.rebalance_timeout_ms, client_id=args.client_id,
        rack_id=args.rack, client_tags=dict(t.split("=", 1) for t in args.tag),
        leave_on_shutdown=args.leave_on_shutdown, revoke_delay_ms=args.revoke_delay_ms)
    try:
        member.run(sys.stdin, hold=args.hold)
    except SchemaViolation as exc:
        member.emit("violation", error=str(exc))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
