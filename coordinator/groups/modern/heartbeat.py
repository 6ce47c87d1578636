"""What every modern group type's heartbeat request and response start with (Kafka's
``<Type>GroupHeartbeatRequest``/``Response``: the group, the member and its epoch; the epoch the
member is at and how soon it heartbeats again). Each type's ``heartbeat`` adds its fields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberRequest:
    group_id: str
    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class MemberResponse:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
