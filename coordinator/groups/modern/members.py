"""What the KIP-848 group types (consumer, share, streams) do alike for their members: what a
member is (``ModernGroupMember``), the group a request or a replayed record is for, member-id
and member-epoch checks (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, INVALID_REQUEST), and a
member's expiry timers (session and rebalance timeouts, re-armed after a load). Each group type
passes its group class, its name as Kafka's messages spell it, and how it removes a member."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from protocol import ErrorCode

log = get_logger("coordinator.groups")


@dataclass(frozen=True, slots=True)
class ModernGroupMember:
    """Kafka's ``ModernGroupMember``: the member's id, the epoch it is at and the one before
    (the KIP's lost-response case); each type's member adds its state, subscription and
    assignment."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0


class _Group(Protocol):
    def __init__(self, group_id: str) -> None: ...


class _Member(Protocol):
    @property
    def member_epoch(self) -> int: ...


G = TypeVar("G", bound=_Group)
M = TypeVar("M", bound=_Member)


def replayed_group(shard: Any, group_id: str, group_class: type[G],
                   create: bool = True) -> G | None:
    """The group of ``group_class`` a replayed record is for; created unless ``create`` is
    false. A record for an id held by another group type wins (an upgrade or a conversion
    writes the other type's tombstone first)."""
    group = shard.groups.get(group_id)
    if isinstance(group, group_class):
        return group
    if not create:
        return None
    group = shard.groups[group_id] = group_class(group_id)
    return group


def group_of(shard: Any, group_id: str, group_class: type[G], kind: str) -> G:
    """The ``kind`` group holding ``group_id``, or GROUP_ID_NOT_FOUND (also when the id is
    another type's group), with Kafka's messages."""
    group = shard.groups.get(group_id)
    if group is None:
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"{kind.capitalize()} group {group_id} not found.")
    if not isinstance(group, group_class):
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {group_id} is not a {kind} group.")
    return group


def unknown_member(group_id: str, member_id: str) -> CoordinatorError:
    """UNKNOWN_MEMBER_ID with Kafka's message."""
    return CoordinatorError(ErrorCode.unknown_member_id,
                            f"Member {member_id} is not a member of group {group_id}.")


def known_member(group: Any, member_id: str) -> Any:
    """The group's member ``member_id``, or UNKNOWN_MEMBER_ID."""
    member = group.member(member_id)
    if member is None:
        raise unknown_member(group.group_id, member_id)
    return member


def note_leaving(logger: Any, kind: str, group: Any, member: Any, now_ms: int) -> None:
    """A member leaves on its own (epoch -1): the log line (on the type's ``logger``) and the
    rebalance timeline."""
    logger.info(f"member leaves the {kind} group", group_id=group.group_id,
             member_id=member.member_id, member_epoch=member.member_epoch)
    timeline.note_removed(group.group_id, member.member_id, timeline.LEFT, now_ms)


def invalid(message: str) -> CoordinatorError:
    """INVALID_REQUEST: a heartbeat that breaks the KIP's rules for its fields."""
    return CoordinatorError(ErrorCode.invalid_request, message)


def session_key(kind: str, group_id: str, member_id: str) -> tuple[str, str, str]:
    """The timer of a member's session timeout."""
    return (f"{kind}-session", group_id, member_id)


def rebalance_key(kind: str, group_id: str, member_id: str) -> tuple[str, str, str]:
    """The timer of a member's rebalance timeout (revoking within it)."""
    return (f"{kind}-rebalance", group_id, member_id)


def cancel_timers(shard: Any, kind: str, group_id: str, member_id: str) -> None:
    """A member's session and rebalance timers, cancelled (it left or was fenced)."""
    shard.timers.cancel(session_key(kind, group_id, member_id))
    shard.timers.cancel(rebalance_key(kind, group_id, member_id))


def groups_of(shard: Any, group_class: type[G]) -> list[G]:
    """The groups of ``group_class`` on the shard (a list: timers may change the shard)."""
    return [group for group in list(shard.groups.values()) if isinstance(group, group_class)]


def rearm_members(shard: Any, group_class: type[Any],
                  rearm: Callable[[Any, Any], None]) -> None:
    """After a load: ``rearm(group, member)`` for every member of every group of the class
    (the timers of a group's members are not in its records)."""
    for group in groups_of(shard, group_class):
        for member in list(group.members.values()):
            rearm(group, member)


def fenced(kind: str, received: int, known: int) -> CoordinatorError:
    """FENCED_MEMBER_EPOCH with Kafka's message; ``kind``: consumer, share or streams."""
    relation = "greater" if received > known else "smaller"
    return CoordinatorError(
        ErrorCode.fenced_member_epoch,
        f"The {kind} group member has a {relation} member epoch ({received}) than the one "
        f"known by the group coordinator ({known}). The member must abandon all its partitions "
        "and rejoin.")


def check_member_epoch(kind: str, received: int, member_epoch: int, previous_epoch: int,
                       owns_subset: Callable[[], bool] | None = None) -> None:
    """FENCED_MEMBER_EPOCH unless ``received`` is the member's epoch, or its previous one
    (the KIP's lost-response case) with, where ``owns_subset`` is given, what it says it owns
    a subset of its assignment. Epoch 0 is a rejoin of the same member id and is accepted."""
    if received == 0 or received == member_epoch:
        return
    if received > member_epoch or received != previous_epoch or (
            owns_subset is not None and not owns_subset()):
        raise fenced(kind, received, member_epoch)


def schedule_expiry(shard: Any, key: Any, deadline_ms: int, group_class: type[Any],
                    group_id: str, member_id: str, reason: str, message: str,
                    remove: Callable[[Any, Any, Any, int], Result],
                    still_due: Callable[[Any], bool] | None = None) -> None:
    """At ``deadline_ms``, unless the timer ``key`` is rescheduled or cancelled first: if the
    member is still in its group (and ``still_due(member)``), log ``message``, note it on the
    rebalance timeline as removed for ``reason``, and ``remove(shard, group, member, now)``."""
    def expire(shard: Any, now: int) -> Result:
        group: Any = shard.groups.get(group_id)
        member = group.member(member_id) if isinstance(group, group_class) else None
        if member is None or (still_due is not None and not still_due(member)):
            return Result()
        log.info(message, group_id=group_id, member_id=member_id,
                 member_epoch=member.member_epoch)
        timeline.note_removed(group_id, member_id, reason, now)
        return remove(shard, group, member, now)

    shard.timers.schedule(key, deadline_ms, expire)


def schedule_session_timeout(shard: Any, kind: str, group_class: type[Any], group_id: str,
                             member_id: str, deadline_ms: int,
                             remove: Callable[[Any, Any, Any, int], Result]) -> None:
    """The member's session timeout at ``deadline_ms`` (its timer ``session_key``): unless it
    heartbeats first, it is removed as expired."""
    schedule_expiry(shard, session_key(kind, group_id, member_id), deadline_ms, group_class,
                    group_id, member_id, timeline.SESSION_EXPIRED,
                    f"{kind} group member session expired", remove)
