"""Rack awareness helpers shared by the assignors."""

from __future__ import annotations

from collections.abc import Iterable

from assignors.spec import NO_RACK, AssignmentSpec


def rack_aware(spec: AssignmentSpec, members: Iterable[int], topics: Iterable[int]) -> bool:
    """True when some member could be placed better or worse by rack for these topics.

    It is false without rack data, and also when every member's rack holds a replica of
    every partition (then all placements are equally good and the racks can be ignored).
    """
    if not spec.partition_racks:
        return False
    member_racks = {spec.member_racks[m] for m in members}
    member_racks.discard(NO_RACK)
    if not member_racks:
        return False
    common = spec.topic_common_racks
    for t in topics:
        racks = common[t]
        if racks is not None and not member_racks <= racks:
            return True
    return False


def matches(spec: AssignmentSpec, member: int, topic: int, partition: int) -> bool:
    """True if ``member`` has no rack preference or its rack holds a replica of the partition."""
    rack = spec.member_racks[member]
    if rack == NO_RACK or not spec.partition_racks:
        return True
    racks = spec.partition_racks[topic]
    return racks is None or rack in spec.rack_sets[racks[partition]]
