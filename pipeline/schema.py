"""The columns of the ``coordinator-log`` data source: one row per stored record.

Common columns locate the record; the other columns hold the key and value fields that the
analytics use, typed, and are null where a record type has no such field. A record that does not
decode has ``type = "Undecodable"`` and ``error`` set.
"""

from __future__ import annotations

import pyarrow as pa

from pipeline.outputs import GROUP_TABLES_UNION

TOPIC_PARTITIONS = pa.list_(
    pa.struct([("topic_id", pa.string()), ("partitions", pa.list_(pa.int32()))])
)
TOPICS = pa.list_(
    pa.struct(
        [("topic_id", pa.string()), ("topic_name", pa.string()), ("num_partitions", pa.int32())]
    )
)
TASKS = pa.list_(
    pa.struct([("subtopology_id", pa.string()), ("partitions", pa.list_(pa.int32())),
               ("assignment_epochs", pa.list_(pa.int32()))])
)
"""Streams tasks by subtopology; ``assignment_epochs`` (active tasks of a current assignment,
one per partition) is null in target assignments."""
CLASSIC_MEMBERS = pa.list_(
    pa.struct(
        [
            ("member_id", pa.string()),
            ("instance_id", pa.string()),
            ("client_id", pa.string()),
            ("session_timeout_ms", pa.int32()),
            ("rebalance_timeout_ms", pa.int32()),
            ("subscription", pa.binary()),
            ("assignment", pa.binary()),
        ]
    )
)

FIELDS: list[tuple[str, pa.DataType, str]] = [
    ("store", pa.string(), "the log directory the record was read from"),
    ("log", pa.string(), "__consumer_offsets or __cluster_metadata"),
    ("partition", pa.int32(), "partition of that log"),
    ("offset", pa.int64(), "record offset"),
    ("timestamp", pa.int64(), "batch timestamp, ms"),
    ("type_id", pa.int32(), "record type id (Kafka's key version)"),
    ("type", pa.string(), "Kafka's record name without Key/Value"),
    ("tombstone", pa.bool_(), "no value"),
    ("group_id", pa.string(), "key: group / group_id"),
    ("member_id", pa.string(), "key: member_id"),
    ("commit_topic", pa.string(), "OffsetCommit key: topic"),
    ("commit_partition", pa.int32(), "OffsetCommit key: partition"),
    ("epoch", pa.int32(), "group epoch, assignment epoch, member epoch or generation"),
    ("previous_epoch", pa.int32(), "CurrentMemberAssignment: previous member epoch"),
    ("member_state", pa.int32(), "CurrentMemberAssignment: state"),
    ("assignment_timestamp", pa.int64(), "TargetAssignmentMetadata Timestamp; "
     "GroupMetadata current_state_timestamp"),
    ("partitions", TOPIC_PARTITIONS, "target or current assignment"),
    ("pending_partitions", TOPIC_PARTITIONS, "partitions pending revocation"),
    ("commit_offset", pa.int64(), "OffsetCommit: offset"),
    ("commit_timestamp", pa.int64(), "OffsetCommit: commitTimestamp"),
    ("expire_timestamp", pa.int64(), "OffsetCommit: expireTimestamp"),
    ("subscribed_topics", pa.list_(pa.string()), "MemberMetadata: subscribed topic names; "
     "StreamsGroupTopology: source and repartition source topics"),
    ("instance_id", pa.string(), "MemberMetadata: instance id"),
    ("client_id", pa.string(), "MemberMetadata: client id"),
    ("rebalance_timeout_ms", pa.int32(), "MemberMetadata: rebalance timeout"),
    ("server_assignor", pa.string(), "MemberMetadata: server assignor"),
    ("protocol_type", pa.string(), "GroupMetadata: protocol type"),
    ("protocol", pa.string(), "GroupMetadata: protocol"),
    ("leader", pa.string(), "GroupMetadata: leader"),
    ("classic_members", CLASSIC_MEMBERS, "GroupMetadata: members"),
    ("topics", TOPICS, "PartitionMetadata topics; TopicMetadata (one entry)"),
    ("active_tasks", TASKS, "streams TargetAssignmentMember / CurrentMemberAssignment: "
     "active tasks"),
    ("standby_tasks", TASKS, "streams target or current assignment: standby tasks"),
    ("warmup_tasks", TASKS, "streams target or current assignment: warm-up tasks"),
    ("pending_tasks", TASKS, "streams CurrentMemberAssignment: active tasks pending "
     "revocation"),
    ("topology_epoch", pa.int32(), "StreamsGroupTopology: epoch; StreamsGroupMemberMetadata: "
     "the member's; StreamsGroupMetadata: validated topology epoch"),
    ("process_id", pa.string(), "StreamsGroupMemberMetadata: process id"),
    ("error", pa.string(), "why an Undecodable record did not decode"),
]

ARROW_SCHEMA = pa.schema([pa.field(name, kind) for name, kind, _ in FIELDS])
COLUMNS = [name for name, _, _ in FIELDS]
INDEX = {name: i for i, name in enumerate(COLUMNS)}


def spark_ddl() -> str:
    """The schema as a Spark DDL string (what ``DataSource.schema`` returns)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(ARROW_SCHEMA).simpleString()[len("struct<"):-1]


DIGEST_SCHEMA = pa.schema([
    pa.field("kind", pa.string()),
    *GROUP_TABLES_UNION,
    ARROW_SCHEMA.field("tombstone"),
    pa.field("commit_topic", pa.string()),
    pa.field("commit_partition", pa.int32()),
    pa.field("commits", pa.int64()),
    pa.field("first_commit_ms", pa.int64()),
    pa.field("last_commit_ms", pa.int64()),
    pa.field("live_offset", pa.int64()),
    pa.field("commit_offset", pa.int64()),
    pa.field("minute_ms", pa.int64()),
    pa.field("records", pa.int64()),
])
"""The ``digest`` view's rows (:mod:`pipeline.digest` fills them). Here, beside the other view's,
with no import but pyarrow's: Spark's planning processes ask the source for its schema, and
need not import the decoding code for it."""
