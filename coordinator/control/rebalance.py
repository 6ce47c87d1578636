"""Forcing a new target assignment, and asking whether a member is in a group: the control
endpoint's reads and writes of group state, run on the group's coordinator partition.

``force_rebalance`` bumps the group epoch through a coordinator write, as a member joining
would: a consumer group (KIP-848) gets a ``ConsumerGroupMetadata`` record with the next epoch,
a share group a ``ShareGroupMetadata``, a streams group a ``StreamsGroupMetadata``; the next
heartbeat of any member computes a new target, and each member reconciles to the new
assignment epoch (the server-side assignors are sticky, so partitions stay where they were
unless the assignment changes). A classic group prepares a rebalance
(``classic.join.force_rebalance``): its members are told REBALANCE_IN_PROGRESS at their next
heartbeat, rejoin, and get the next generation.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups import metrics_view
from coordinator.groups.classic import join as classic_join
from coordinator.groups.classic.model import ClassicGroup
from coordinator.groups.consumer import imbalance as consumer_imbalance
from coordinator.groups.consumer import records as consumer_records
from coordinator.groups.consumer.model import ConsumerGroup
from coordinator.groups.share import records as share_records
from coordinator.groups.share.model import ShareGroup
from coordinator.groups.streams import records as streams_records
from coordinator.groups.streams.model import StreamsGroup
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, PartitionState, Result
from protocol import ErrorCode

log = get_logger("coordinator.control")

REASON = "forced by the control endpoint"


def _next(epoch: int) -> int:
    return 2 if epoch <= 0 else epoch + 1  # a group's first epoch is 2 (epoch 1: empty)


def bump(shard: Any, now_ms: int, group_id: str) -> Result:
    """The pure handler: the records (or the classic effect) of a forced rebalance; its
    response is what the control endpoint answers."""
    group = shard.groups.get(group_id)
    if group is None:
        raise CoordinatorError(ErrorCode.group_id_not_found, f"no group {group_id}")
    if isinstance(group, ClassicGroup):
        result = classic_join.force_rebalance(shard, group_id, now_ms, REASON)
        generation = group.generation_id
        log.info("rebalance forced", group_id=group_id, type="classic", state=result.response)
        return Result(result.records, {"group": group_id, "type": "classic",
                                       "state": result.response, "generation": generation,
                                       "rebalancing": result.response == "PreparingRebalance"},
                      result.completions, result.effect)
    if isinstance(group, ConsumerGroup):
        epoch = _next(group.group_epoch)
        record = consumer_records.group_epoch(group_id, epoch)
        sensors.record_rebalance(group_id)
        kind = "consumer"
    elif isinstance(group, ShareGroup):
        epoch = _next(group.group_epoch)
        record = share_records.group_epoch(group_id, epoch)
        sensors.record_share_rebalance(group_id)
        kind = "share"
    elif isinstance(group, StreamsGroup):
        epoch = group.group_epoch + 1
        record = streams_records.group_metadata(group, epoch, group.metadata_hash,
                                                group.validated_topology_epoch,
                                                group.assignment_configs)
        sensors.record_streams_rebalance(group_id)
        kind = "streams"
    else:
        raise CoordinatorError(ErrorCode.group_id_not_found, f"no group {group_id}")
    log.info("bumped group epoch", group_id=group_id, group_epoch=epoch, reason=REASON)
    return Result([record], {"group": group_id, "type": kind, "group_epoch": epoch,
                             "rebalancing": True})


async def force_rebalance(runtime: Any, group_id: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, answer) of ``POST /groups/<group>/rebalance``."""
    try:
        answer = await runtime.write(runtime.partition_for(group_id),
                                     lambda shard, now: bump(shard, now, group_id),
                                     name="ForceRebalance", group_id=group_id)
    except CoordinatorError as exc:
        if exc.code is ErrorCode.group_id_not_found:
            return 404, {"error": f"no group {group_id}", "group": group_id}
        status = 503 if exc.code in (ErrorCode.coordinator_load_in_progress,
                                     ErrorCode.not_coordinator,
                                     ErrorCode.coordinator_not_available) else 500
        return status, {"error": f"the coordinator could not write: {exc.code.name.upper()}",
                        "group": group_id}
    return 200, answer


def _group(runtime: Any, group_id: str) -> tuple[bool, Any]:
    """(whether the group's partition is active, the group or None). Read on the event loop,
    as the metrics collector reads the shards."""
    index = runtime.partition_for(group_id)
    if runtime.state(index) is not PartitionState.ACTIVE:
        return False, None
    shard = runtime.partitions[index].shard
    return True, None if shard is None else shard.groups.get(group_id)


def member_present(runtime: Any, group_id: str, member_id: str) -> bool | None:
    """Whether ``member_id`` is a member of ``group_id`` now; None while the group's partition
    is not active."""
    active, group = _group(runtime, group_id)
    if not active:
        return None
    return group is not None and member_id in getattr(group, "members", {})


SETTLED_STATES = frozenset({"stable", "empty"})


def settled_without(runtime: Any, group_id: str, member_id: str) -> bool | None:
    """Whether ``member_id`` is gone from ``group_id`` and the group settled without it (Stable
    or Empty: the others hold the target computed without it); None while the group's
    partition is not active. When a freeze ends (``faults.py``)."""
    active, group = _group(runtime, group_id)
    if not active:
        return None
    if group is None:
        return True
    if member_id in getattr(group, "members", {}):
        return False
    return metrics_view.view(group).state in SETTLED_STATES


async def held_partitions(runtime: Any, group_id: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, answer) of ``GET /groups/<group>/held``: a consumer group's partitions
    held by deferred resolution (seed 004, Design II; ``consumer.imbalance``), each hold with
    the member whose partitions they were, why it went and the deadline (ms since the epoch).
    ConsumerGroupDescribe has no field for them."""
    active, group = _group(runtime, group_id)
    if not active:
        return 503, {"error": "the group's coordinator partition is not active",
                     "group": group_id}
    if not isinstance(group, ConsumerGroup):
        return 404, {"error": f"no consumer group {group_id}", "group": group_id}
    names = {t.topic_id: t.name for t in group.subscription_metadata.values()}
    return 200, {"group": group_id, "held": consumer_imbalance.holds_view(group, names.get)}
