"""Which code replays which record: the one table from every coordinator record type to its
replayer, the hooks that run once a partition's log is loaded, and the shard built with both.

Kafka's ``GroupCoordinatorShard.replay`` is one switch over record types; this is that switch,
written out. A record type is either replayed here or listed in ``NOT_REPLAYED`` with the reason
(``tests/unit/test_replay_table.py`` checks that every type of ``storage.records`` is exactly one
of the two). A shard that meets a type it has no replayer for logs it and goes on.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator import transaction
from coordinator.config import ServerConfig
from storage.records import (
    AccessControlEntryKey,
    ConfigRecordKey,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupHeldPartitionsKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    GroupConfigKey,
    GroupMetadataKey,
    OffsetCommitKey,
    RemoveAccessControlEntryKey,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupPartitionMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
    ShareSnapshotKey,
    ShareUpdateKey,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupHeldTasksKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMetadataKey,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTopologyKey,
    TopicMetadataKey,
    TransactionLogKey,
    TxnOffsetCommitKey,
    UserScramCredentialKey,
)
from storage.records.client_assignors import (
    ConsumerGroupClientAssignmentKey,
    ConsumerGroupMemberClientAssignorsKey,
)

from . import expiration
from .classic import session as classic_session
from .common import group_configs, offsets
from .common.configs import classic_config, offsets_retention
from .common.shard import CoordinatorShard, LoadHook, RawReplayer, Replayer
from .consumer import client_selection
from .consumer import holds as consumer_holds
from .consumer import imbalance as consumer_imbalance
from .consumer import membership as consumer_membership
from .consumer import regex as consumer_regex
from .consumer import replay as consumer_replay
from .share import heartbeat as share_heartbeat
from .share import replay as share_replay
from .share import state_records as share_state
from .streams import heartbeat as streams_heartbeat
from .streams import imbalance as streams_imbalance
from .streams import replay as streams_replay

REPLAYED: tuple[tuple[type, Replayer], ...] = (
    # offsets (all group types)
    (OffsetCommitKey, offsets.replay),
    (TxnOffsetCommitKey, offsets.replay_pending),  # pending transactional offsets (1011)
    # classic groups: one record per group
    (GroupMetadataKey, classic_session.replay_group_metadata),
    # consumer groups (KIP-848)
    (ConsumerGroupMetadataKey, consumer_replay.group_metadata),
    (ConsumerGroupPartitionMetadataKey, consumer_replay.partition_metadata),
    (ConsumerGroupMemberMetadataKey, consumer_replay.member_metadata),
    (ConsumerGroupTargetAssignmentMetadataKey, consumer_replay.target_metadata),
    (ConsumerGroupTargetAssignmentMemberKey, consumer_replay.target_member),
    (ConsumerGroupCurrentMemberAssignmentKey, consumer_replay.current_assignment),
    (ConsumerGroupRegularExpressionKey, consumer_regex.replay),
    (ConsumerGroupMemberClientAssignorsKey, client_selection.replay_assignors),  # 1030
    (ConsumerGroupClientAssignmentKey, client_selection.replay_assignment),  # 1031
    (ConsumerGroupHeldPartitionsKey, consumer_imbalance.replay),  # deferred resolution (1020)
    # share groups (KIP-932)
    (ShareGroupMetadataKey, share_replay.group_metadata),
    (ShareGroupPartitionMetadataKey, share_replay.partition_metadata),
    (ShareGroupMemberMetadataKey, share_replay.member_metadata),
    (ShareGroupTargetAssignmentMetadataKey, share_replay.target_metadata),
    (ShareGroupTargetAssignmentMemberKey, share_replay.target_member),
    (ShareGroupCurrentMemberAssignmentKey, share_replay.current_assignment),
    (ShareGroupStatePartitionMetadataKey, share_replay.state_partition_metadata),
    (ShareSnapshotKey, share_state.replay_snapshot),  # share-partition state (1002)
    (ShareUpdateKey, share_state.replay_update),  # and its deltas (1003)
    # streams groups (KIP-1071)
    (StreamsGroupMetadataKey, streams_replay.group_metadata),
    (StreamsGroupMemberMetadataKey, streams_replay.member_metadata),
    (StreamsGroupTopologyKey, streams_replay.topology),
    (StreamsGroupTargetAssignmentMetadataKey, streams_replay.target_metadata),
    (StreamsGroupTargetAssignmentMemberKey, streams_replay.target_member),
    (StreamsGroupCurrentMemberAssignmentKey, streams_replay.current_assignment),
    (StreamsGroupHeldTasksKey, streams_imbalance.replay),  # deferred resolution (1021)
    # per-group configs of an older store (1001), until migrated to cluster metadata
    (GroupConfigKey, group_configs.replay),
    # the transaction coordinator (Kafka's __transaction_state records, 1010)
    (TransactionLogKey, transaction.replay),
)
"""(record key type, replayer), one pair per replayed type."""

REPLAYERS: Mapping[type, Replayer] = dict(REPLAYED)

RAW_REPLAYERS: Mapping[bytes, RawReplayer] = {
    prefix: offsets.replay_raw for prefix in offsets.COMMIT_KEY_PREFIXES}
"""Types a load replays from their bytes, by 2-byte key prefix: offset commits, most of any
store's records (the same state as their ``REPLAYED`` replayer gives; checked in
``tests/unit/test_raw_replay.py``)."""

NOT_REPLAYED: Mapping[type, str] = {
    StreamsGroupPartitionMetadataKey: "removed in Kafka 4.1 (KAFKA-17747): read from older "
                                      "stores, not needed",
    TopicMetadataKey: "written to __cluster_metadata-0, not to a coordinator partition; "
                      "coordinator.metadata.log replays it",
    AccessControlEntryKey: "written to __cluster_metadata-0 (ACLs); "
                           "coordinator.security.acl_records replays it",
    RemoveAccessControlEntryKey: "written to __cluster_metadata-0 (ACLs); "
                                 "coordinator.security.acl_records replays it",
    UserScramCredentialKey: "written to __cluster_metadata-0 (SCRAM credentials); "
                            "coordinator.security.credentials replays it",
    ConfigRecordKey: "written to __cluster_metadata-0 (GROUP and CLIENT_METRICS config "
                     "resources); coordinator.metadata.config_resources replays it",
}
"""Record types ``storage.records`` knows that no coordinator partition replays, and why."""

LOAD_HOOKS: tuple[LoadHook, ...] = (
    consumer_membership.rearm_on_load,  # session and rebalance timeouts of consumer members
    consumer_holds.rearm_on_load,  # release timers of consumer groups' held partitions
    classic_session.arm_loaded_sessions,  # session timeouts of classic members
    share_heartbeat.rearm_on_load,  # session timeouts of share members
    streams_heartbeat.rearm_on_load,  # session and rebalance timeouts of streams members
    streams_imbalance.rearm_on_load,  # release timers of streams groups' held tasks
    expiration.arm,  # the offsets-retention check (KIP-211)
)
"""What runs, in this order, once a partition's log is replayed."""


def new_shard(partition: int, config: ServerConfig | None = None,
              group_configs: Mapping[str, Mapping[str, str]] | None = None) -> CoordinatorShard:
    """A coordinator partition's empty state, with the table above; ``config`` None means
    Kafka's defaults; ``group_configs``: the metadata image's GROUP config resources (None:
    none)."""
    return CoordinatorShard(partition, replayers=REPLAYERS, load_hooks=LOAD_HOOKS,
                            classic_config=classic_config(config),
                            offsets_retention=offsets_retention(config),
                            raw_replayers=RAW_REPLAYERS, group_configs=group_configs)
