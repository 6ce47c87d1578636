"""The one replay table (``coordinator.groups.replay``): every coordinator record type has
exactly one replayer or is listed as not replayed, with the reason; shards use it whatever
modules happen to be imported."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter

import pytest

from coordinator.groups import replay
from coordinator.groups.classic.model import ClassicGroup
from coordinator.groups.consumer.model import ConsumerGroup
from coordinator.groups.streams.model import StreamsGroup
from storage.records import (
    RECORD_TYPES,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    ShareSnapshotKey,
    ShareUpdateKey,
    ShareUpdateValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupPartitionMetadataValue,
)


def test_every_record_type_is_replayed_once_or_listed_with_a_reason() -> None:
    key_types = {record_type.key_cls for record_type in RECORD_TYPES.values()}
    counts = Counter(key_type for key_type, _ in replay.REPLAYED)
    assert [t.__name__ for t, n in counts.items() if n > 1] == []
    replayed = set(counts)
    ignored = set(replay.NOT_REPLAYED)
    assert replayed & ignored == set()
    assert sorted(t.__name__ for t in key_types - replayed - ignored) == []
    assert sorted(t.__name__ for t in (replayed | ignored) - key_types) == []
    assert all(reason.strip() for reason in replay.NOT_REPLAYED.values())


def test_a_new_shard_replays_with_the_table_and_runs_the_load_hooks() -> None:
    shard = replay.new_shard(3)
    assert shard.partition == 3
    assert dict(shard.replayers) == dict(replay.REPLAYED)
    assert shard.load_hooks == replay.LOAD_HOOKS
    shard.replay(0, GroupMetadataKey(group="c"), GroupMetadataValue(
        protocol_type="consumer", generation=1, protocol=None, leader=None,
        current_state_timestamp=0, members=()))
    shard.replay(1, ConsumerGroupMetadataKey(group_id="k"), ConsumerGroupMetadataValue(epoch=2))
    assert isinstance(shard.groups["c"], ClassicGroup)
    assert isinstance(shard.groups["k"], ConsumerGroup)
    shard.replay(2, StreamsGroupMetadataKey(group_id="s"), StreamsGroupMetadataValue(epoch=1))
    assert isinstance(shard.groups["s"], StreamsGroup)
    # a type listed as not replayed is skipped (logged), the shard goes on
    shard.replay(2, StreamsGroupPartitionMetadataKey(group_id="p"),
                 StreamsGroupPartitionMetadataValue(topics=()))
    assert "p" not in shard.groups and shard.last_offset == 2
    # share-partition state goes to shard.share_partitions, not to the groups
    tid = uuid.UUID(int=5)
    shard.replay(3, ShareUpdateKey(group_id="sg", topic_id=tid, partition=1),
                 ShareUpdateValue(snapshot_epoch=0, leader_epoch=0, start_offset=7))
    assert shard.share_partitions["sg"][(tid, 1)].start_offset == 7 and "sg" not in shard.groups
    shard.replay(4, ShareSnapshotKey(group_id="sg", topic_id=tid, partition=1), None)
    assert "sg" not in shard.share_partitions
    shard.on_loaded(0)
    assert len(shard.timers) > 0  # the offsets-retention check, armed by a load hook


@pytest.mark.slow
def test_the_table_does_not_depend_on_what_else_was_imported() -> None:
    """In a fresh interpreter that imports nothing but the table, shards replay every type."""
    code = (
        "import sys\n"
        "from coordinator.groups.replay import REPLAYED, new_shard\n"
        "shard = new_shard(0)\n"
        "assert dict(shard.replayers) == dict(REPLAYED), 'table differs'\n"
        "print(len(shard.replayers), len(shard.load_hooks))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == [str(len(replay.REPLAYED)), str(len(replay.LOAD_HOOKS))]
