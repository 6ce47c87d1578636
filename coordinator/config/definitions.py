"""Every broker and topic config we know: Kafka's names, types, defaults and bounds.

Group-coordinator keys come from KIP-848 (seed 003), assignment batching and offload (seed 000),
offset expiration (seed 002) and Kafka's ``GroupCoordinatorConfig``; defined here even where a
later feature is the first to read them.
"""

from __future__ import annotations

from assignors import ASSIGNORS, SHARE_ASSIGNORS

from .model import INT_MAX, LONG_MAX, ConfigDef, ConfigType, Importance
from .security import SECURITY_CONFIGS

INT, LONG, SHORT, BOOL, STRING, LIST, DOUBLE = (
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.SHORT,
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.LIST,
    ConfigType.DOUBLE,
)


def _group_protocol_family(kind: str, max_size: int, max_size_bounds: tuple[int, int | None]):
    """The session/heartbeat/size/assignment keys each group type (consumer, share, streams) has."""
    lo, hi = max_size_bounds
    return [
        ConfigDef(f"group.{kind}.session.timeout.ms", INT, 45000,
                  f"The timeout to detect client failures when using the {kind} group protocol.",
                  at_least=1),
        ConfigDef(f"group.{kind}.min.session.timeout.ms", INT, 45000,
                  "The minimum allowed session timeout for registered consumers.", at_least=1),
        ConfigDef(f"group.{kind}.max.session.timeout.ms", INT, 60000,
                  "The maximum allowed session timeout for registered consumers.", at_least=1),
        ConfigDef(f"group.{kind}.heartbeat.interval.ms", INT, 5000,
                  "The heartbeat interval given to the members.", at_least=1),
        ConfigDef(f"group.{kind}.min.heartbeat.interval.ms", INT, 5000,
                  "The minimum heartbeat interval for registered consumers.", at_least=1),
        ConfigDef(f"group.{kind}.max.heartbeat.interval.ms", INT, 15000,
                  "The maximum heartbeat interval for registered consumers.", at_least=1),
        ConfigDef(f"group.{kind}.max.size", INT, max_size,
                  f"The maximum number of members that a single {kind} group can accommodate.",
                  at_least=lo, at_most=hi),
        ConfigDef(f"group.{kind}.assignment.interval.ms", INT, 1000,
                  f"The interval between assignment updates for a {kind} group.", at_least=0),
        ConfigDef(f"group.{kind}.min.assignment.interval.ms", INT, 0,
                  f"The minimum interval between assignment updates for a {kind} group.",
                  at_least=0),
        ConfigDef(f"group.{kind}.max.assignment.interval.ms", INT, 15000,
                  f"The maximum interval between assignment updates for a {kind} group.",
                  at_least=0),
        ConfigDef(f"group.{kind}.assignor.offload.enable", BOOL, True,
                  f"Whether to offload {kind} group assignment to a group coordinator "
                  "background thread."),
    ]


def _scheduled_rebalance_delay(kind: str, what: str) -> ConfigDef:
    return ConfigDef(
        f"group.{kind}.scheduled.rebalance.max.delay.ms", INT, 0,
        f"How long the {what} of a {kind} group member that left or was fenced are held "
        "unassigned, in case it comes back, before they are spread over the others (seed 004's "
        "deferred resolution); a member joining meanwhile gets them at once. 0 spreads them at "
        "once.", at_least=0)


def _assignment_max_moves(kind: str, what: str) -> ConfigDef:
    return ConfigDef(
        f"group.{kind}.assignment.max.moves", INT, 0,
        f"The most {what} a new target assignment of a {kind} group moves away from members "
        "that have them; the rest move in later targets, an assignment interval apart (seed "
        "004's incremental resolution). 0 is unbounded.", at_least=0)


BROKER_CONFIGS: tuple[ConfigDef, ...] = (
    # --- the node and its listeners -------------------------------------------------------
    ConfigDef("node.id", INT, 1, "The node id of this server.", at_least=0,
              importance=Importance.HIGH),
    ConfigDef("broker.rack", STRING, None, "Rack of the broker."),
    ConfigDef("listeners", LIST, ["PLAINTEXT://127.0.0.1:9092"],
              "Listener list: URIs we listen on, comma separated. Port 0 picks a free port.",
              importance=Importance.HIGH),
    ConfigDef("advertised.listeners", LIST, None,
              "Listeners to publish to clients if different from the listeners config."),
    ConfigDef("cluster.brokers", INT, 1,
              "How many brokers this process presents (node ids node.id, node.id+1, ...): "
              "partition leaders, replicas and group coordinators spread over them, and they "
              "can be stopped, started and moved between from the control endpoint. 1 (the "
              "default) is a single broker leading everything.", at_least=1, at_most=64),
    ConfigDef("cluster.listeners", LIST, None,
              "The listeners of brokers 2..N, one entry per broker (or per broker 1..N, the "
              "first being listeners); an entry is NAME://host:port, several joined by '|'. "
              "Unset: each of broker 1's listeners on a free port."),
    ConfigDef("cluster.advertised.listeners", LIST, None,
              "What brokers 2..N advertise, as cluster.listeners; unset: what they listen on."),
    ConfigDef("cluster.racks", LIST, None,
              "The rack of each broker 1..N (broker.rack for each), an empty entry for none."),
    ConfigDef("legacy.request.versions.enable", BOOL, True,
              "Serve the request versions Kafka 3.9 served and Kafka 4.0 removed (KIP-896: "
              "Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, "
              "CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0, the ACL APIs' v0), as "
              "Kafka 3.9 does; false refuses them as Kafka 4.x does (the connection is closed)."),
    ConfigDef("socket.request.max.bytes", INT, 104857600,
              "The maximum number of bytes in a socket request.", at_least=1),
    ConfigDef("connections.max.idle.ms", LONG, 600000,
              "Idle connections timeout: connections idle longer than this are closed."),
    ConfigDef("message.max.bytes", INT, 1048588,
              "The largest record batch size allowed.", at_least=0),
    ConfigDef("metrics.listener", STRING, "http://127.0.0.1:9404",
              "Where the Prometheus exporter listens (http://host:port); empty to disable."),
    ConfigDef("control.listener", STRING, "",
              "Where the HTTP control endpoint (fault injection, forced rebalances, the "
              "timeline) listens: http://host:port on a loopback address (it has no "
              "authentication); empty (the default) to disable."),
    ConfigDef("timeline.max.events.per.group", INT, 10000,
              "Group records (and annotations) the rebalance timeline keeps per group in "
              "memory; older ones are folded into the latest record per key. 0 disables it.",
              at_least=0, importance=Importance.LOW),
    # --- client telemetry (KIP-714) -----------------------------------------------------
    ConfigDef("telemetry.max.bytes", INT, 1048576,
              "The maximum size (after compression if any) of a telemetry message pushed from "
              "a client to the broker.", at_least=1),
    ConfigDef("telemetry.max.clients", INT, 16384,
              "Client instances whose telemetry is kept at once (Kafka's cache size); pushes of "
              "further clients are dropped and counted.", at_least=1, importance=Importance.LOW),
    ConfigDef("telemetry.staleness.ms", INT, 60000,
              "A client's pushed metrics are removed this long after its last push (or after "
              "three of its push intervals, if longer).", at_least=1,
              importance=Importance.LOW),
    ConfigDef("telemetry.default.metrics", LIST, [],
              "Metric name prefixes of a built-in client-metrics subscription named 'default', "
              "matching every client; empty for none.", importance=Importance.LOW),
    ConfigDef("telemetry.default.interval.ms", INT, 300000,
              "The push interval of the built-in 'default' subscription.", at_least=100,
              at_most=3600000, importance=Importance.LOW),
    *SECURITY_CONFIGS,
    # --- authorization (ACLs) -------------------------------------------------------------
    ConfigDef("authorizer.class.name", STRING, "",
              "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer for "
              "Kafka's ACLs, or empty for no authorization.", importance=Importance.LOW),
    ConfigDef("super.users", STRING, "",
              "Principals (User:name) allowed everything whatever the ACLs say, separated by "
              "semicolons."),
    ConfigDef("allow.everyone.if.no.acl.found", BOOL, False,
              "Whether a resource with no ACL at all is open to everyone."),
    # --- topics and their log -------------------------------------------------------------
    ConfigDef("log.dirs", LIST, ["./data"],
              "The directories in which the log data is kept.", importance=Importance.HIGH),
    ConfigDef("log.segment.bytes", INT, 1073741824,
              "The maximum size of a single log file.", at_least=14),
    ConfigDef("log.retention.ms", LONG, 604800000,
              "The number of milliseconds to keep a log file before deleting it."),
    ConfigDef("log.retention.check.interval.ms", LONG, 300000,
              "The frequency in milliseconds that the log cleaner checks whether any log is "
              "eligible for deletion.", at_least=1),
    ConfigDef("auto.create.topics.enable", BOOL, True,
              "Enable auto creation of topic on the server."),
    ConfigDef("delete.topic.enable", BOOL, True, "Enables delete topic."),
    ConfigDef("num.partitions", INT, 1, "The default number of log partitions per topic.",
              at_least=1),
    ConfigDef("default.replication.factor", INT, 1,
              "The replication factor for automatically created topics.", at_least=1),
    # --- the coordinator runtime ----------------------------------------------------------
    ConfigDef("group.coordinator.threads", INT, 4,
              "The number of threads used by the group coordinator.", at_least=1),
    ConfigDef("group.coordinator.background.threads", INT, 2,
              "The number of threads used by the group coordinator for processing background "
              "tasks (e.g. updating regular expression subscriptions and offloaded "
              "assignments).", at_least=1),
    ConfigDef("group.coordinator.append.linger.ms", INT, 5,
              "The duration in milliseconds that the coordinator will wait for writes to "
              "accumulate before flushing them to disk.", at_least=0),
    ConfigDef("group.coordinator.rebalance.protocols", LIST,
              ["classic", "consumer", "share", "streams"],
              "The list of enabled rebalance protocols.",
              one_of=("classic", "consumer", "share", "streams")),
    # --- classic groups ---------------------------------------------------------------------
    ConfigDef("group.min.session.timeout.ms", INT, 6000,
              "The minimum allowed session timeout for registered consumers."),
    ConfigDef("group.max.session.timeout.ms", INT, 1800000,
              "The maximum allowed session timeout for registered consumers."),
    ConfigDef("group.initial.rebalance.delay.ms", INT, 3000,
              "The amount of time the group coordinator will wait for more consumers to join a "
              "new group before performing the first rebalance."),
    ConfigDef("group.max.size", INT, INT_MAX,
              "The maximum number of consumers that a single consumer group can accommodate.",
              at_least=1),
    # --- consumer groups (KIP-848) ---------------------------------------------------------
    *_group_protocol_family("consumer", INT_MAX, (1, None)),
    ConfigDef("group.consumer.assignors", LIST, ["uniform", "range"],
              "The server side assignors as a list of names. The first one in the list is the "
              "default assignor, used when the consumer does not specify one.",
              one_of=tuple(sorted(ASSIGNORS))),
    ConfigDef("group.consumer.lag.assignor.offset.reset", STRING, "latest",
              "How the lag assignor counts the lag of a partition with no committed offset: "
              "earliest (the whole log) or latest (no lag), like auto.offset.reset.",
              one_of=("earliest", "latest")),
    ConfigDef("group.consumer.lag.assignor.stickiness.tolerance", DOUBLE, 0.2,
              "The lag assignor keeps a topic's current assignment unless its lag spread is "
              "worse than a fresh assignment's by more than this fraction of the topic's mean "
              "lag per subscriber, so that lag noise does not move partitions.",
              at_least=0.0, at_most=10.0),
    ConfigDef("group.consumer.migration.policy", STRING, "bidirectional",
              "The config that enables converting the non-empty classic group using the "
              "consumer embedded protocol to the non-empty consumer group using the consumer "
              "group protocol and vice versa.",
              one_of=("disabled", "downgrade", "upgrade", "bidirectional")),
    ConfigDef("group.consumer.regex.refresh.interval.ms", INT, 600000,
              "The interval at which the group coordinator refreshes regular expressions.",
              at_least=10000),
    ConfigDef("group.consumer.client.assignors.enable", BOOL, False,
              "Serve the KIP-848 draft's client-side assignors (not in any Kafka release): "
              "members list them in a tagged field of ConsumerGroupHeartbeat, the coordinator "
              "asks one member to compute the target, which it reads with "
              "ConsumerGroupPrepareAssignment (API key 8480) and installs with "
              "ConsumerGroupInstallAssignment (8481). Off: neither API is served nor "
              "advertised, and the tagged fields are ignored."),
    _scheduled_rebalance_delay("consumer", "partitions"),
    _assignment_max_moves("consumer", "partitions"),
    # --- share groups (KIP-932) -------------------------------------------------------------
    *_group_protocol_family("share", 200, (10, 1000)),
    ConfigDef("group.share.assignors", LIST, ["simple"],
              "The server-side assignors as a list of either names or full class names. The "
              "first one in the list is considered as the default assignor to be used by share "
              "groups.", one_of=tuple(sorted(SHARE_ASSIGNORS))),
    ConfigDef("group.share.record.lock.duration.ms", INT, 30000,
              "The record acquisition lock duration in milliseconds for share groups.",
              at_least=1000, at_most=3600000),
    ConfigDef("group.share.min.record.lock.duration.ms", INT, 15000,
              "The record acquisition lock minimum duration in milliseconds for share groups.",
              at_least=1000, at_most=30000),
    ConfigDef("group.share.max.record.lock.duration.ms", INT, 60000,
              "The record acquisition lock maximum duration in milliseconds for share groups.",
              at_least=30000, at_most=3600000),
    ConfigDef("group.share.delivery.count.limit", INT, 5,
              "The maximum number of delivery attempts for a record delivered to a share group.",
              at_least=2, at_most=10),
    ConfigDef("group.share.min.delivery.count.limit", INT, 2,
              "The minimum value of the group config share.delivery.count.limit.",
              at_least=2, at_most=5),
    ConfigDef("group.share.max.delivery.count.limit", INT, 10,
              "The maximum value of the group config share.delivery.count.limit.",
              at_least=5, at_most=25),
    ConfigDef("group.share.partition.max.record.locks", INT, 2000,
              "Share-group record lock limit per share-partition.", at_least=100,
              at_most=10000),
    ConfigDef("group.share.min.partition.max.record.locks", INT, 100,
              "The minimum value of the group config share.partition.max.record.locks.",
              at_least=100, at_most=2000),
    ConfigDef("group.share.max.partition.max.record.locks", INT, 4000,
              "The maximum value of the group config share.partition.max.record.locks.",
              at_least=2000, at_most=10000),
    ConfigDef("group.share.max.share.sessions", INT, 2000,
              "The maximum number of share sessions per broker.", at_least=1),
    ConfigDef("share.coordinator.snapshot.update.records.per.snapshot", INT, 500,
              "The number of update records the share coordinator writes between snapshot "
              "records.", at_least=0, at_most=500),
    # --- streams groups (KIP-1071) ----------------------------------------------------------
    *_group_protocol_family("streams", INT_MAX, (1, None)),
    _scheduled_rebalance_delay("streams", "active tasks"),
    _assignment_max_moves("streams", "active tasks"),
    ConfigDef("group.streams.num.standby.replicas", INT, 0,
              "The number of standby replicas for each task.", at_least=0),
    ConfigDef("group.streams.max.standby.replicas", INT, 2,
              "The maximum allowed value for the group-level configuration of "
              "streams.num.standby.replicas.", at_least=0),
    ConfigDef("group.streams.initial.rebalance.delay.ms", INT, 3000,
              "The amount of time the group coordinator will wait for more streams clients to "
              "join a new group before performing the first rebalance.", at_least=0),
    # --- committed offsets and their expiration (KIP-211) -----------------------------------
    ConfigDef("offsets.topic.num.partitions", INT, 50,
              "The number of partitions for the offset commit topic.", at_least=1),
    ConfigDef("offsets.topic.replication.factor", SHORT, 3,
              "The replication factor for the offsets topic.", at_least=1),
    ConfigDef("offsets.topic.segment.bytes", INT, 104857600,
              "The offsets topic segment bytes should be kept relatively small in order to "
              "facilitate faster log compaction and cache loads.", at_least=1),
    ConfigDef("offsets.load.buffer.size", INT, 5242880,
              "Batch size for reading from the offsets segments when loading offsets into the "
              "cache.", at_least=1),
    ConfigDef("offsets.retention.minutes", INT, 10080,
              "For subscribed consumers, committed offset of a specific partition will be "
              "expired and discarded when 1) this retention period has elapsed after the "
              "consumer group loses all its consumers (i.e. becomes empty); 2) this retention "
              "period has elapsed since the last time an offset is committed for the partition "
              "and the group is no longer subscribed to the corresponding topic.", at_least=1),
    ConfigDef("offsets.retention.check.interval.ms", LONG, 600000,
              "Frequency at which to check for stale offsets.", at_least=1),
    ConfigDef("offsets.commit.timeout.ms", INT, 5000,
              "Offset commit will be delayed until all replicas for the offsets topic receive "
              "the commit or this timeout is reached.", at_least=1),
    ConfigDef("offset.metadata.max.bytes", INT, 4096,
              "The maximum size for a metadata entry associated with an offset commit."),
    # --- transactions (KIP-98) ----------------------------------------------------------------
    ConfigDef("transaction.max.timeout.ms", INT, 900000,
              "The maximum allowed timeout for transactions. If a client's requested transaction "
              "time exceed this, then the broker will return an error in InitProducerIdRequest.",
              at_least=1),
    ConfigDef("transactional.id.expiration.ms", INT, 604800000,
              "The time in ms that the transaction coordinator will wait without receiving any "
              "transaction status updates for the current transaction before expiring its "
              "transactional id.", at_least=1),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000,
              "The interval at which to rollback transactions that have timed out.",
              at_least=1),
    ConfigDef("coordinator.log.max.bytes", LONG, -1,
              "A cap on the size of the coordinator's store; writes past it fail as a full disk "
              "would (the request gets NOT_COORDINATOR). -1 means no cap.", at_least=-1),
    ConfigDef("log.cleaner.enable", BOOL, True,
              "Enable the log cleaner (compaction) for the coordinator's store and for topics "
              "whose cleanup.policy has compact."),
    ConfigDef("log.cleaner.backoff.ms", LONG, 15000,
              "The amount of time to sleep when there are no logs to clean.", at_least=0),
    ConfigDef("log.cleaner.dedupe.buffer.size", LONG, 134217728,
              "The memory a topic log cleaning may use for the latest offset of each key of "
              "the segments it cleans; a log with more keys is cleaned in several passes.",
              at_least=1),
    ConfigDef("log.cleaner.delete.retention.ms", LONG, 86400000,
              "The amount of time to retain tombstone markers for log compacted topics.",
              at_least=0),
    ConfigDef("coordinator.log.max.record.bytes.between.snapshots", LONG, 20971520,
              "A coordinator partition writes a snapshot of its state (the records it needs, "
              "up to a log offset) once this many bytes of records were appended after its "
              "last one; a start loads the newest snapshot and the log after it. As KRaft's "
              "metadata.log.max.record.bytes.between.snapshots. 0 disables snapshots.",
              at_least=0),
    ConfigDef("coordinator.log.max.snapshot.interval.ms", LONG, 3600000,
              "The longest a coordinator partition waits, with records appended after its last "
              "snapshot, before it writes a new one (checked as records become durable). As "
              "KRaft's metadata.log.max.snapshot.interval.ms. 0 means no time limit.",
              at_least=0),
    ConfigDef("coordinator.log.flush.interval.ms", LONG, 0,
              "How long coordinator records may wait in the page cache before an fsync; 0 "
              "fsyncs every write before it is acknowledged (the default). Raise it to trade "
              "durability for speed.", at_least=0),
)


TOPIC_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("cleanup.policy", LIST, ["delete"], "The retention policy to use on log segments.",
              one_of=("delete", "compact")),
    ConfigDef("compression.type", STRING, "producer", "The final compression type for a topic.",
              one_of=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("delete.retention.ms", LONG, 86400000,
              "The amount of time to retain delete tombstone markers.", at_least=0),
    ConfigDef("file.delete.delay.ms", LONG, 60000,
              "The time to wait before deleting a file from the filesystem.", at_least=0),
    ConfigDef("flush.messages", LONG, LONG_MAX,
              "The interval of messages written to a log before an fsync.", at_least=1),
    ConfigDef("flush.ms", LONG, LONG_MAX,
              "The time interval at which data written to a log is fsynced.", at_least=0),
    ConfigDef("max.message.bytes", INT, 1048588, "The largest record batch size allowed.",
              at_least=0),
    ConfigDef("message.timestamp.type", STRING, "CreateTime",
              "Whether the timestamp in the message is message create time or log append time.",
              one_of=("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", DOUBLE, 0.5,
              "How frequently the log compactor will attempt to clean the log.",
              at_least=0, at_most=1),
    ConfigDef("min.insync.replicas", INT, 1,
              "The minimum number of replicas that must acknowledge a write.", at_least=1),
    ConfigDef("retention.bytes", LONG, -1,
              "The maximum size a partition can grow to before old segments are discarded."),
    ConfigDef("retention.ms", LONG, 604800000,
              "The maximum time a log is retained before old segments are discarded.",
              at_least=-1),
    ConfigDef("segment.bytes", INT, 1073741824, "The segment file size for the log.",
              at_least=14),
    ConfigDef("segment.ms", LONG, 604800000,
              "The period of time after which Kafka will force the log to roll.", at_least=1),
    ConfigDef("unclean.leader.election.enable", BOOL, False,
              "Whether to enable replicas not in the ISR set to be elected as leader."),
)

BROKER_CONFIGS_BY_NAME = {d.name: d for d in BROKER_CONFIGS}
TOPIC_CONFIGS_BY_NAME = {d.name: d for d in TOPIC_CONFIGS}
