"""The classic group: its members, states and protocol selection (Kafka's ``ClassicGroup``).

Durable facts (generation, protocol, leader, members and their assignments) are GroupMetadata
records; the join and sync phases in between are in memory only, as in Kafka: after a restart,
members simply rejoin. Groups are replaced, never changed in place: handlers build the next
group from ``copy()`` and install it once their records are written.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum

from storage.records import GroupMetadataKey, GroupMetadataValue
from storage.records.classic import MemberMetadata

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""


class ClassicGroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = False

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: ClassicGroupState = ClassicGroupState.EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    state_timestamp_ms: int = -1
    new_member_added: bool = False
    initial_rebalance: bool = False  # the first rebalance of a new group waits for more joins

    def copy(self) -> ClassicGroup:
        return replace(self, members=dict(self.members), pending_members=set(self.pending_members))

    # --- membership ---------------------------------------------------------------------------
    def static_member(self, instance_id: str | None) -> ClassicMember | None:
        if instance_id is None:
            return None
        for member in self.members.values():
            if member.group_instance_id == instance_id:
                return member
        return None

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def transition(self, state: ClassicGroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    # --- protocols ----------------------------------------------------------------------------
    def supports(self, protocol_type: str, protocol_names: list[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's supportsProtocols)."""
        if not self.members:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self.protocol_type:
            return False
        common = self._candidates()
        return any(name in common for name in protocol_names)

    def _candidates(self) -> set[str]:
        members = list(self.members.values())
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return common

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports."""
        candidates = self._candidates()
        votes: Counter[str] = Counter()
        order: dict[str, int] = {}
        for member in self.members.values():
            for name in member.protocol_names():
                if name in candidates:
                    votes[name] += 1
                    order.setdefault(name, len(order))
                    break
        return max(votes, key=lambda name: (votes[name], -order[name]))

    # --- records ------------------------------------------------------------------------------
    def record(self) -> tuple[GroupMetadataKey, GroupMetadataValue]:
        members = tuple(
            MemberMetadata(member_id=m.member_id, group_instance_id=m.group_instance_id,
                           client_id=m.client_id, client_host=m.client_host,
                           rebalance_timeout=m.rebalance_timeout_ms,
                           session_timeout=m.session_timeout_ms,
                           subscription=m.metadata(self.protocol_name or ""),
                           assignment=m.assignment)
            for m in self.members.values())
        return GroupMetadataKey(group=self.group_id), GroupMetadataValue(
            protocol_type=self.protocol_type or "", generation=self.generation_id,
            protocol=self.protocol_name, leader=self.leader_id,
            current_state_timestamp=self.state_timestamp_ms, members=members)

    def tombstone(self) -> tuple[GroupMetadataKey, None]:
        return GroupMetadataKey(group=self.group_id), None

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        members = {
            m.member_id: ClassicMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout, session_timeout_ms=m.session_timeout,
                protocol_type=value.protocol_type,
                protocols=((value.protocol or "", m.subscription),), assignment=m.assignment)
            for m in value.members
        }
        state = ClassicGroupState.STABLE if members else ClassicGroupState.EMPTY
        return cls(group_id=group_id, state=state, protocol_type=value.protocol_type or None,
                   protocol_name=value.protocol, generation_id=value.generation,
                   leader_id=value.leader, members=members,
                   state_timestamp_ms=value.current_state_timestamp)


def new_member_id(prefix: str | None) -> str:
    """Kafka's form: the client id (or the static instance id) and a random UUID."""
    return f"{prefix or ''}-{uuid.uuid4()}"
