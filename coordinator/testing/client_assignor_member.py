"""A consumer group member that speaks the KIP-848 draft's client-side assignor protocol (seed
003) over a blocking socket: what ``kafka_coordinator.client_assignor`` runs.

It joins with ConsumerGroupHeartbeat (no topics of its own unless asked, its client-side
assignor in the ``ClientAssignors`` tagged field), heartbeats, and when a response carries
``ShouldComputeAssignment`` reads the group state with ConsumerGroupPrepareAssignment, asks
``compute`` for the assignment and installs it with ConsumerGroupInstallAssignment. Topics are
named by name to ``compute`` and by id on the wire.
"""

from __future__ import annotations

import datetime
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import protocol
from coordinator.testing.connection import Connection
from protocol import ErrorCode
from protocol.client_assignors import (
    INSTALL_ASSIGNMENT_KEY,
    PREPARE_ASSIGNMENT_KEY,
    classes,
)

HEARTBEAT = 68
FIND_COORDINATOR_VERSION = 3


@dataclass(frozen=True, slots=True)
class MemberState:
    """A member of the group, as the client-side assignor sees it."""

    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topics: frozenset[str]
    target: Mapping[str, frozenset[int]]
    """Its partitions in the current target, by topic name."""
    metadata: bytes
    """Its metadata for the assignor (empty when it lists none)."""


@dataclass(frozen=True, slots=True)
class GroupState:
    """What ConsumerGroupPrepareAssignment answered: the input of ``assign``."""

    group_id: str
    group_epoch: int
    assignor: str
    members: Sequence[MemberState]
    topics: Mapping[str, int]
    """Partition count by topic name."""


Assignment = Mapping[str, Mapping[str, Sequence[int]]]
"""member id -> topic name -> partitions."""


class InstallRefused(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _nested(cls: type, name: str) -> type:
    found: type = getattr(sys.modules[cls.__module__], name)
    return found


class AssignorMember:
    """The member; ``poll`` heartbeats once and computes the assignment when asked."""

    def __init__(self, bootstrap_servers: str, group_id: str, assignor: str,
                 compute: Callable[[GroupState], Assignment], *, version: int = 0,
                 client_id: str = "client-assignor", topics: Sequence[str] = (),
                 rebalance_timeout_ms: int = 30000, timeout_s: float = 10.0) -> None:
        self.group_id = group_id
        self.assignor = assignor
        self.version = version
        self.compute = compute
        self.topics = tuple(topics)
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.heartbeat_interval_ms = 500
        self.installed: list[int] = []
        """The group epochs of the assignments it installed."""
        host, port = bootstrap_servers.split(",")[0].rsplit(":", 1)
        bootstrap = Connection(host, int(port), client_id, timeout_s)
        try:
            self.connection = self._coordinator(bootstrap, client_id, timeout_s)
        finally:
            if getattr(self, "connection", None) is not bootstrap:
                bootstrap.close()
        found = classes(HEARTBEAT, 1)
        assert found is not None
        self._request_type: type = found[0]

    def _coordinator(self, bootstrap: Connection, client_id: str,
                     timeout_s: float) -> Connection:
        schema = protocol.schema(10, FIND_COORDINATOR_VERSION)
        found = bootstrap.request(protocol.make(schema.request_type, key=self.group_id,
                                                key_type=0))
        if found.error_code != ErrorCode.none:
            raise ConnectionError(f"FindCoordinator: {found.error_code.name}")
        return Connection(found.host, int(found.port), client_id, timeout_s)

    # --- the heartbeat -----------------------------------------------------------------------
    def _heartbeat_body(self, leaving: bool = False) -> Any:
        cls = self._request_type
        joining = self.member_epoch == 0
        assignor = _nested(cls, "Assignor")(
            name=self.assignor, minimum_version=0, maximum_version=self.version, reason=0,
            version=self.version, metadata=b"")
        return protocol.make(
            cls, group_id=self.group_id, member_id=self.member_id,
            member_epoch=-1 if leaving else self.member_epoch,
            rebalance_timeout=datetime.timedelta(
                milliseconds=self.rebalance_timeout_ms if joining else -1),
            subscribed_topic_names=self.topics if joining else None,
            topic_partitions=() if joining else None,
            client_assignors=(assignor,) if joining else None)

    def poll(self) -> bool:
        """One heartbeat (and the computation it asks for); False once fenced (it rejoins at
        the next poll)."""
        response = self.connection.request(self._heartbeat_body())
        if response.error_code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.member_epoch = 0
            return False
        if response.error_code != ErrorCode.none:
            raise ConnectionError(f"ConsumerGroupHeartbeat: {response.error_code.name} "
                                  f"{response.error_message}")
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = int(response.heartbeat_interval.total_seconds() * 1000)
        if response.should_compute_assignment:
            self.compute_and_install()
        return True

    def leave(self) -> None:
        if self.member_epoch > 0:
            self.connection.request(self._heartbeat_body(leaving=True))
        self.member_epoch = 0

    def close(self) -> None:
        self.connection.close()

    # --- the computation ---------------------------------------------------------------------
    def prepare(self) -> tuple[Any, GroupState]:
        schema = protocol.schema(PREPARE_ASSIGNMENT_KEY, 0)
        answer = self.connection.request(protocol.make(
            schema.request_type, group_id=self.group_id, member_id=self.member_id,
            member_epoch=self.member_epoch))
        if answer.error_code != 0:
            raise InstallRefused(int(answer.error_code), answer.error_message)
        names = {t.topic_id: t.topic_name for t in answer.topics}
        members = [MemberState(
            m.member_id, m.member_epoch, m.client_id, m.client_host, m.instance_id, m.rack_id,
            frozenset(names[t] for t in m.subscribed_topic_ids if t in names),
            {names[tp.topic_id]: frozenset(tp.partitions) for tp in m.topic_partitions
             if tp.topic_id in names},
            bytes(m.assignor.metadata)) for m in answer.members]
        return answer, GroupState(self.group_id, answer.group_epoch, answer.assignor_name,
                                  members, {t.topic_name: t.num_partitions
                                            for t in answer.topics})

    def install(self, answer: Any, state: GroupState, assignment: Assignment) -> None:
        schema = protocol.schema(INSTALL_ASSIGNMENT_KEY, 0)
        ids = {t.topic_name: t.topic_id for t in answer.topics}
        member = _nested(schema.request_type, "Member")
        partitions = _nested(schema.request_type, "TopicPartitions")
        members = []
        for member_id, by_topic in sorted(assignment.items()):
            members.append(member(member_id=member_id, metadata_version=0, metadata_bytes=b"",
                                  partitions=tuple(
                                      partitions(topic_id=ids.get(name, uuid.UUID(int=0)),
                                                 partitions=tuple(sorted(parts)))
                                      for name, parts in sorted(by_topic.items()) if parts)))
        result = self.connection.request(protocol.make(
            schema.request_type, group_id=self.group_id, member_id=self.member_id,
            member_epoch=self.member_epoch, group_epoch=state.group_epoch, error=0,
            members=tuple(members)))
        if result.error_code != 0:
            raise InstallRefused(int(result.error_code), result.error_message)
        self.installed.append(state.group_epoch)

    def compute_and_install(self) -> None:
        """Prepare, compute, install; again while the installation is stale (the group moved
        on meanwhile). Stops when it is not the chosen member any more."""
        for _ in range(10):
            try:
                answer, state = self.prepare()
                self.install(answer, state, self.compute(state))
                return
            except InstallRefused as refused:
                if refused.code != ErrorCode.stale_member_epoch:
                    raise
                self.poll_epoch()

    def poll_epoch(self) -> None:
        """A heartbeat for the current member epoch, without acting on its signal."""
        response = self.connection.request(self._heartbeat_body())
        if response.error_code == ErrorCode.none:
            self.member_epoch = response.member_epoch
