"""The coordinator's metrics: what ``metrics/`` exports, read from the runtime and the shards.

Two kinds of metrics, all named as the JMX exporter names Kafka's
(``kafka.server:type=group-coordinator-metrics,name=X,tag=v`` ->
``kafka_server_group_coordinator_metrics_X{tag="v"}``):

* **State, read at scrape time** by a collector: ``group-count{protocol}``,
  ``consumer-group-count{state}``, ``classic-group-count{state}``, ``share-group-count{state}``,
  ``streams-group-count{state}``, ``partition-count{state}``,
  ``event-queue-size``, ``partition-load-time-max/-avg``, ``offset-count``,
  ``target-assignment-epoch{group}``, ``group-epoch{group}``,
  ``consumer-lag{group,topic,partition}`` (log end offset minus committed offset, for the
  partitions the data plane holds), and seed 000's ``background-*`` metrics from the
  background executor's statistics.
* **Sensors fed by events** (the hooks of :mod:`coordinator.observability.sensors`, called from
  the coordinator's code): ``event-queue-time-ms-*``, ``event-processing-time-ms-*``,
  ``thread-idle-ratio-min/-avg``, ``offset-commit-*``, ``offset-expired-*``,
  ``offset-deletion-*``, ``consumer-group-rebalance-*``, ``assignor-run-time-ms{group,assignor}``
  (histogram), ``partitions-moved{group}`` (histogram), ``faults-injected-total{kind,api}``
  (the control endpoint's fault injection).

Thread safety: Prometheus scrapes on the exporter's thread, while the shards live on the event
loop. A scrape therefore asks the loop for a snapshot (``call_soon_threadsafe``) and waits at
most ``snapshot_timeout_s``; if the loop is busy longer (an inline assignor run blocking it, the
very thing seed 000 measures), the scrape serves the previous snapshot and counts a
``stale-scrape-count``. Sensors are thread-safe themselves.

This module imports only ``metrics`` and the standard library: what it reads of groups (their
type, state and epochs) and of the data plane (log end offsets) is handed to it by the wiring
(``coordinator.app``), so that the packages it observes never form a cycle with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from metrics import (
    COUNT_BUCKETS,
    Measurement,
    MetricName,
    MetricsRegistry,
    WindowConfig,
)
from metrics import start_exporter as _start_exporter

from . import sensors

CONSUMER_GROUP_STATES = ("empty", "assigning", "reconciling", "stable", "dead")
CLASSIC_GROUP_STATES = ("empty", "preparingrebalance", "completingrebalance", "stable", "dead")
PARTITION_STATES = ("loading", "active", "failed")
SHARE_GROUP_STATES = ("empty", "stable", "dead")
STREAMS_GROUP_STATES = ("empty", "notready", "assigning", "reconciling", "stable", "dead")
PROTOCOLS = ("classic", "consumer", "share", "streams")
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                      "CompleteAbort")  # Kafka's names, as ListTransactions gives them
SHARE_METRICS = "kafka.server:type=ShareGroupMetrics"
SHARE_PARTITION_METRICS = "kafka.server:type=SharePartitionMetrics"
"""The MBean type of Kafka's broker-side share group metrics."""
BACKGROUND_SUFFIXES = ("p50", "p95", "p99", "p999", "max")
EVENT_BATCH = 512
EVENT_FLUSH_S = 0.2
"""Event times are recorded into their sensors in batches of at most this many, at least this
often (``Observability.on_event``)."""

@dataclass(frozen=True, slots=True)
class GroupView:
    """What the metrics read of one group: its protocol (``classic``, ``consumer``, ...), its
    state in lower case, and for consumer groups (KIP-848) its group and target assignment
    epochs."""

    protocol: str
    state: str
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    held_partitions: int | None = None
    """Consumer groups: partitions held by deferred resolution (seed 004, Design II)."""


@dataclass(frozen=True, slots=True)
class SharePartitionView:
    """What the metrics read of one share partition (KIP-932): its in-flight and acquired
    records."""

    group: str
    topic: str
    partition: int
    in_flight: int
    acquired: int


GroupViewer = Callable[[Any], GroupView]
SharePartitionViewer = Callable[[Any], Iterable[SharePartitionView]]
"""A shard's share partitions, as views."""
LogEndOffsets = Callable[[str, int], "int | None"]


# ---------------------------------------------------------------------------------- wiring
def install(app: Any, *, view_group: GroupViewer | None = None,
            view_share_partitions: SharePartitionViewer | None = None,
            log_end_offset: LogEndOffsets | None = None,
            config: WindowConfig | None = None) -> Observability:
    """Metrics for ``app`` (a ``coordinator.app.App``): the runtime's event listener, the
    sensors the hooks feed, and the collectors. ``view_group`` tells a group's type and state
    (``coordinator.groups.metrics.view``), ``log_end_offset`` a partition's log end offset for
    the lag metrics. The exporter starts with :meth:`Observability.start_exporter`."""
    observability = Observability(app.runtime, getattr(app, "executor", None),
                                  view_group=view_group,
                                  view_share_partitions=view_share_partitions,
                                  log_end_offset=log_end_offset, config=config)
    app.runtime.event_listener = observability.on_event
    app.runtime.events_listener = observability.on_events
    sensors.attach(observability)
    return observability


def uninstall(observability: Observability) -> None:
    sensors.detach(observability)


class Observability:
    def __init__(self, runtime: Any, executor: Any = None, *,
                 view_group: GroupViewer | None = None,
                 view_share_partitions: SharePartitionViewer | None = None,
                 log_end_offset: LogEndOffsets | None = None,
                 config: WindowConfig | None = None, registry: MetricsRegistry | None = None,
                 snapshot_timeout_s: float = 2.0) -> None:
        self.runtime = runtime
        self.executor = executor
        self.view_group = view_group
        self.view_share_partitions = view_share_partitions
        self.log_end_offset = log_end_offset
        self.snapshot_timeout_s = snapshot_timeout_s
        r = self.registry = registry or MetricsRegistry(config=config)
        self.event_queue_time = r.percentiles(
            "event-queue-time-ms", "Time an event waited in its partition's queue, in ms",
            with_avg=True)
        self.event_processing_time = r.percentiles(
            "event-processing-time-ms", "Time an event took to run on its partition, in ms",
            with_avg=True)
        self.thread_idle = r.idle_ratio(
            "thread-idle-ratio", "Share of time the event loop running the coordinator "
            "partitions spent not running their events")
        self.offset_commits = r.meter("offset-commit", "Offsets committed")
        self.offsets_expired = r.meter("offset-expired", "Offsets expired (retention)")
        self.offset_deletions = r.meter("offset-deletion", "Offsets deleted by OffsetDelete")
        self.rebalances = r.meter("consumer-group-rebalance",
                                  "Consumer group rebalances (group epoch bumps)")
        self.share_rebalances = r.meter("share-group-rebalance",
                                        "Share group rebalances (group epoch bumps)")
        self.streams_rebalances = r.meter("streams-group-rebalance",
                                          "Streams group rebalances (group epoch bumps)")
        self.share_acquired = r.meter("RecordsAcquiredPerSec",
                                      "Share records acquired by members", group=SHARE_METRICS)
        self.share_lock_timeouts = r.meter(
            "AcquisitionLockTimeoutPerSec",
            "Acquired share records released because their acquisition lock expired",
            group=SHARE_METRICS)
        self.share_acknowledgements = {
            ack_type: r.meter("RecordAcknowledgementsPerSec",
                              "Share records acknowledged, by acknowledge type",
                              group=SHARE_METRICS, tags={"ackType": ack_type})
            for ack_type in sensors.SHARE_ACK_TYPES}
        self.faults_injected = LabelledCount(
            "faults-injected-total", "Faults the control endpoint injected, by kind and API",
            ("kind", "api"))
        r.collector(self.faults_injected.measure)
        self.transactions_completed = LabelledCount(
            "transactions-completed-total", "Transactions completed (markers written), by result",
            ("result",))
        r.collector(self.transactions_completed.measure)
        self.cluster_moves = LabelledCount(
            "cluster-moves-total", "Leadership moves between the brokers of cluster.brokers > 1 "
            "(kind: partition-leader, coordinator; reason: moved, broker-stopped) and broker "
            "stops and starts (kind: broker-stopped, broker-started)", ("kind", "reason"))
        r.collector(self.cluster_moves.measure)
        # registered before the histograms: a scrape takes the snapshot (which feeds the
        # background histograms) before it reads them
        r.collector(self._measure_state)
        self.assignor_runs = r.histogram(
            "assignor-run-time-ms", "Duration of server-side assignor runs, in ms",
            labels=("group", "assignor"))
        self.partitions_moved = r.histogram(
            "partitions-moved", "Partitions given to a member whose target did not have them, "
            "per target assignment", labels=("group",), buckets=COUNT_BUCKETS)
        self.background_queue_histogram = r.histogram(
            "background-queue-time-ms", "Background executor queue time, in ms")
        self.background_processing_histogram = r.histogram(
            "background-processing-time-ms", "Background executor processing time, in ms")
        self._background_seen = 0
        self._queue_ms: list[float] = []
        self._processing_ms: list[float] = []
        self._flush_armed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._last: list[Measurement] = []
        self._stale = 0
        self._snapshot_lock = threading.Lock()

    # --- lifecycle -----------------------------------------------------------------------------
    def bind_loop(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Scrapes read shard state on this loop (the one running the runtime)."""
        self._loop = loop or asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def start_exporter(self, url: str) -> tuple[str, int]:
        """Bind the running loop and serve ``/metrics`` at ``url``; (host, port) bound."""
        self.bind_loop()
        return _start_exporter(url, self.registry.prometheus)

    # --- the runtime's event listener ----------------------------------------------------------
    def on_event(self, partition: int, queue_ms: float, processing_ms: float) -> None:
        """Called for every event: the times are only gathered here, and recorded into the
        sensors in batches (``flush_events``: every ``EVENT_BATCH`` events, every
        ``EVENT_FLUSH_S`` on the event loop, and before a scrape reads them)."""
        self._queue_ms.append(queue_ms)
        self._processing_ms.append(processing_ms)
        if len(self._queue_ms) >= EVENT_BATCH:
            self.flush_events()
        elif not self._flush_armed:
            self._arm_flush()

    def on_events(self, count: int, processing_ms: float) -> None:
        """``count`` events run in one batch, none of which waited in a queue, each taking
        ``processing_ms`` (the batch's mean): steady heartbeats answered from a
        connection's shortcuts (``CoordinatorRuntime.ran_now``)."""
        self._queue_ms += [0.0] * count
        self._processing_ms += [processing_ms] * count
        if len(self._queue_ms) >= EVENT_BATCH:
            self.flush_events()
        elif not self._flush_armed:
            self._arm_flush()

    def flush_events(self) -> None:
        """Record the event times gathered since the last flush."""
        queued, processing = self._queue_ms, self._processing_ms
        if not queued:
            return
        self._queue_ms, self._processing_ms = [], []
        self.event_queue_time.record_many(queued)
        self.event_processing_time.record_many(processing)
        self.thread_idle.record_busy_ms(sum(processing))

    def _arm_flush(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test feeding events by hand): batches and reads flush
        self._flush_armed = True
        loop.call_later(EVENT_FLUSH_S, self._flush_later)

    def _flush_later(self) -> None:
        self._flush_armed = False
        self.flush_events()

    # --- scrape-time state ---------------------------------------------------------------------
    def _measure_state(self) -> list[Measurement]:
        loop = self._loop
        if loop is None or self._loop_thread == threading.get_ident() or loop.is_closed():
            snapshot = self.snapshot()  # no loop to ask, or we are on it
        else:
            future: concurrent.futures.Future[list[Measurement]] = concurrent.futures.Future()

            def run() -> None:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(self.snapshot())
                except BaseException as exc:
                    future.set_exception(exc)

            try:
                loop.call_soon_threadsafe(run)
                snapshot = future.result(self.snapshot_timeout_s)
            except (concurrent.futures.TimeoutError, RuntimeError):
                future.cancel()
                with self._snapshot_lock:
                    self._stale += 1
                    snapshot = list(self._last)
        with self._snapshot_lock:
            self._last = snapshot
            stale = self._stale
        return [*snapshot, _m("stale-scrape-count", stale,
                              "Scrapes answered with the previous snapshot because the event "
                              "loop was busy for longer than the snapshot timeout")]

    def snapshot(self) -> list[Measurement]:
        """Every state metric, read now (on the event loop)."""
        self.flush_events()
        out: list[Measurement] = []
        out += self._partition_metrics()
        out += self._group_metrics()
        out += self._background_metrics()
        return out

    def _partition_metrics(self) -> list[Measurement]:
        partitions = list(self.runtime.partitions)
        states = dict.fromkeys(PARTITION_STATES, 0)
        queued = 0
        load_times: list[float] = []
        for partition in partitions:
            state = partition.state.value
            if state in states:
                states[state] += 1
            queued += partition.queue.qsize()
            if partition.load_time_ms is not None:
                load_times.append(partition.load_time_ms)
        out = [_m("partition-count", n, "Coordinator partitions by state", state=s)
               for s, n in states.items()]
        out.append(_m("event-queue-size", queued, "Events waiting in the partitions' queues"))
        out.append(_m("partition-load-time-max", max(load_times, default=0.0),
                      "Longest time a partition took to load, in ms"))
        out.append(_m("partition-load-time-avg",
                      sum(load_times) / len(load_times) if load_times else 0.0,
                      "Average time a partition took to load, in ms"))
        return out

    def _group_metrics(self) -> list[Measurement]:
        protocols = dict.fromkeys(PROTOCOLS, 0)
        states = {"consumer": dict.fromkeys(CONSUMER_GROUP_STATES, 0),
                  "classic": dict.fromkeys(CLASSIC_GROUP_STATES, 0),
                  "share": dict.fromkeys(SHARE_GROUP_STATES, 0),
                  "streams": dict.fromkeys(STREAMS_GROUP_STATES, 0)}
        per_group: list[Measurement] = []
        lags: list[Measurement] = []
        offsets = 0
        transactions = dict.fromkeys(TRANSACTION_STATES, 0)
        pending_offsets = 0
        for partition in list(self.runtime.partitions):
            shard = partition.shard
            if shard is None or partition.state.value != "active":
                continue
            if self.view_group is not None:
                for group_id, group in list(shard.groups.items()):
                    view = self.view_group(group)
                    protocols[view.protocol] = protocols.get(view.protocol, 0) + 1
                    by_state = states.get(view.protocol)
                    if by_state is not None:
                        by_state[view.state] = by_state.get(view.state, 0) + 1
                    if view.assignment_epoch is not None:
                        per_group.append(_m("target-assignment-epoch", view.assignment_epoch,
                                            "The consumer group's target assignment epoch",
                                            group=group_id))
                    if view.group_epoch is not None:
                        per_group.append(_m("group-epoch", view.group_epoch,
                                            "The consumer group's group epoch", group=group_id))
                    if view.held_partitions is not None:
                        per_group.append(_m("held-partitions", view.held_partitions,
                                            "Partitions of members that left, held unassigned "
                                            "by deferred resolution", group=group_id))
            if self.view_share_partitions is not None:
                per_group += self._share_partition_metrics(shard)
            for group_id in list(shard.offsets.groups()):
                committed = shard.offsets.group(group_id)
                offsets += len(committed)
                lags += self._lags(group_id, committed)
            for meta in getattr(shard, "transactions", ()):
                state = meta.state.kafka_name
                transactions[state] = transactions.get(state, 0) + 1
            pending_offsets += getattr(shard.offsets, "pending_count", lambda: 0)()
        out = [_m("group-count", n, "Groups by protocol", protocol=p)
               for p, n in protocols.items()]
        out += [_m("consumer-group-count", n, "Consumer groups by state", state=s)
                for s, n in states["consumer"].items()]
        out += [_m("classic-group-count", n, "Classic groups by state", state=s)
                for s, n in states["classic"].items()]
        out += [_m("share-group-count", n, "Share groups by state", state=s)
                for s, n in states["share"].items()]
        out += [_m("streams-group-count", n, "Streams groups by state", state=s)
                for s, n in states["streams"].items()]
        out.append(_m("offset-count", offsets, "Committed offsets held"))
        out += [_m("transaction-count", n, "Transactional ids by the state of their transaction",
                   state=st) for st, n in transactions.items()]
        out.append(_m("pending-transactional-offset-count", pending_offsets,
                      "Transactional offsets waiting for their transaction's marker"))
        return out + per_group + lags

    def _share_partition_metrics(self, shard: Any) -> list[Measurement]:
        assert self.view_share_partitions is not None
        out = []
        for v in self.view_share_partitions(shard):
            tags = {"group": v.group, "topic": v.topic, "partition": str(v.partition)}
            out.append(Measurement(MetricName("InFlightMessageCount", SHARE_PARTITION_METRICS,
                                              tags), float(v.in_flight),
                                   "Records in flight in the share partition"))
            out.append(Measurement(MetricName("AcquiredRecordCount", SHARE_PARTITION_METRICS,
                                              tags), float(v.acquired),
                                   "Records of the share partition acquired by members now"))
        return out

    def _lags(self, group_id: str, committed: Mapping[tuple[str, int], Any]
              ) -> list[Measurement]:
        if self.log_end_offset is None:
            return []
        out = []
        for (topic, partition), offset in committed.items():
            end = self.log_end_offset(topic, partition)
            if end is None or offset.offset < 0:
                continue
            out.append(_m("consumer-lag", max(0, end - offset.offset),
                          "Log end offset minus the group's committed offset",
                          group=group_id, topic=topic, partition=str(partition)))
        return out

    def _background_metrics(self) -> list[Measurement]:
        """Seed 000's metrics from the background executor's statistics; zeros (and an idle
        ratio of 1) when there is no executor."""
        stats = getattr(self.executor, "stats", None)
        values: dict[str, float] = stats.snapshot() if stats is not None else {}
        names = ["background-thread-idle-ratio-avg"] + [
            f"background-{kind}-time-ms-{suffix}" for kind in ("queue", "processing")
            for suffix in BACKGROUND_SUFFIXES]
        out = [_m(name, values.get(name, 1.0 if "idle" in name else 0.0),
                  "Background executor (seed 000): " + name) for name in names]
        out += [_m(name, value, "Background executor (seed 000): " + name)
                for name, value in values.items() if name not in names]
        if stats is not None:
            self._feed_background_histograms(stats)
        return out

    def _feed_background_histograms(self, stats: Any) -> None:
        """Observe the tasks finished since the last snapshot (their samples are the newest in
        the executor's windows) into the cumulative histograms."""
        new = stats.tasks - self._background_seen
        self._background_seen = stats.tasks
        if new <= 0:
            return
        for window, histogram in ((stats.queue_ms, self.background_queue_histogram),
                                  (stats.processing_ms, self.background_processing_histogram)):
            for value in window.values()[-new:]:
                histogram.observe(value)


class LabelledCount:
    """A count per combination of label values (``record("error", "OffsetCommit")``), read at
    scrape time as one gauge per combination seen; thread-safe."""

    def __init__(self, name: str, description: str, labels: tuple[str, ...]) -> None:
        self.name = name
        self.description = description
        self.labels = labels
        self._counts: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()

    def record(self, *values: str) -> None:
        with self._lock:
            self._counts[values] = self._counts.get(values, 0) + 1

    def count(self, *values: str) -> int:
        with self._lock:
            return self._counts.get(values, 0)

    def measure(self) -> list[Measurement]:
        with self._lock:
            counts = list(self._counts.items())
        return [_m(self.name, n, self.description, **dict(zip(self.labels, values, strict=True)))
                for values, n in counts]


def _m(name: str, value: float, description: str, **tags: str) -> Measurement:
    return Measurement(MetricName(name, tags=tags), float(value), description)
