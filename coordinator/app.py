"""Wiring: config -> broker -> dispatcher -> listeners, and an orderly shutdown."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coordinator.background.executor import BackgroundExecutor
from coordinator.cluster import BrokerNode, Cluster, Endpoint
from coordinator.cluster import state_file as cluster_state
from coordinator.cluster.racks import partition_racks
from coordinator.config.cluster import BrokerSpec, broker_specs
from coordinator.groups import metrics_view, timeline_records
from coordinator.groups.common.offload import ExecutorOffloader
from coordinator.groups.consumer import env as consumer_env
from coordinator.groups.legacy_configs import LegacyConfigMigration
from coordinator.groups.replay import new_shard
from coordinator.groups.share import env as share_env
from coordinator.groups.streams import env as streams_env
from coordinator.groups.topic_changes import TopicChangeListener, refreshers
from coordinator.metadata.broker import Broker
from coordinator.metadata.config_resources import GROUP
from coordinator.metadata.image import MetadataImage
from coordinator.metadata.log import MetadataLog
from coordinator.metadata.meta_properties import load_or_create
from coordinator.observability import stack_dump
from coordinator.observability.logs import get_logger
from coordinator.runtime.clock import SystemClock
from coordinator.runtime.compactor import Compactor
from coordinator.runtime.gc_pauses import GcPauseGuard
from coordinator.security import acl_records
from coordinator.security.authorizer import StandardAuthorizer
from coordinator.security.credentials import ScramCredentials, ScramSeed
from coordinator.security.credentials import record as scram_record
from coordinator.security.limits import ConnectionQuotas
from coordinator.security.listeners import listener_security

from . import telemetry, topiclog
from .apis import build_registry, write_txn_markers
from .config import ServerConfig
from .config.server_config import check_control_listener
from .control.faults import FaultInjector
from .dispatch import BrokerDispatcher, Dispatcher
from .observability import collector as observability
from .observability import timeline
from .runtime import CoordinatorRuntime
from .server import KafkaServer
from .telemetry import ClientTelemetry
from .telemetry.subscriptions import Subscriptions
from .topiclog import TopicLogs
from .topiclog import attach as attach_topic_logs

if TYPE_CHECKING:
    from .control.http import ControlServer

log = get_logger("coordinator.app")


class App:
    def __init__(self, config: ServerConfig, scram_seeds: Sequence[ScramSeed] = ()) -> None:
        """``scram_seeds``: SCRAM credentials to add at start unless the user already has one
        for the mechanism (``serve --add-scram``, as Kafka's ``kafka-storage format``)."""
        self.config = config
        Path(config.log_dir).mkdir(parents=True, exist_ok=True)
        cluster_id = load_or_create(config.log_dir, config["node.id"])
        clock = SystemClock()
        image = MetadataImage()
        self.authorizer = StandardAuthorizer.from_config(config)
        authorizer = self.authorizer
        self.scram_credentials = ScramCredentials()
        credentials = self.scram_credentials

        self.subscriptions = Subscriptions.from_config(config, image.configs)

        def replay_other(key: Any, value: Any) -> None:
            if not credentials.replay(key, value) and authorizer is not None:
                acl_records.replay(authorizer, key, value)

        self.metadata_log = MetadataLog.open(config.log_dir, image, clock, replay_other)
        self._scram_seeds = list(scram_seeds)
        if authorizer is not None:
            log.info("authorizer enabled", acls=len(authorizer),
                     super_users=sorted(authorizer.super_users),
                     allow_everyone_if_no_acl_found=authorizer.allow_everyone_if_no_acl_found)
        max_bytes = config["coordinator.log.max.bytes"]
        group_configs = image.configs.of_type(GROUP)
        self.runtime = CoordinatorRuntime(
            Path(config.log_dir), config["offsets.topic.num.partitions"],
            lambda partition: new_shard(partition, config, group_configs), clock,
            segment_bytes=config["offsets.topic.segment.bytes"],
            max_bytes=None if max_bytes < 0 else max_bytes,
            flush_interval_ms=config["coordinator.log.flush.interval.ms"],
            snapshot_max_bytes=config["coordinator.log.max.record.bytes.between.snapshots"],
            snapshot_interval_ms=config["coordinator.log.max.snapshot.interval.ms"],
            tombstone_retention_ms=config["log.cleaner.delete.retention.ms"])
        self.config_migration = LegacyConfigMigration(self.runtime, image.configs,
                                                      self.metadata_log)
        """Moves an older store's group configs (1001 records) to the metadata log."""
        self.compactor = Compactor(self.runtime, clock, config["log.cleaner.backoff.ms"],
                                   config["log.cleaner.delete.retention.ms"])
        self.broker = Broker(config, cluster_id, image, self.metadata_log, self.runtime, clock,
                             authorizer=self.authorizer,
                             scram_credentials=self.scram_credentials)
        self.broker.internal_topics.install_created()
        self.topic_logs = TopicLogs(Path(config.log_dir), image, config, clock)
        self.topic_logs.runtime = self.runtime  # the internal topics' partitions
        self.runtime.on_durable = self.topic_logs.notify_internal_appended
        attach_topic_logs(self.broker, self.topic_logs)
        runtime_partitions = self.runtime.partitions
        self.telemetry = ClientTelemetry(
            self.subscriptions, config["telemetry.max.bytes"], config["telemetry.max.clients"],
            config["telemetry.staleness.ms"], clock.now_ms,
            lambda: [p.shard for p in runtime_partitions if p.shard is not None])
        telemetry.attach(self.broker, self.telemetry)
        self.client_events = self.telemetry.events.events
        """Client metrics of a group for its timeline (``observability.timeline``)."""
        self.executor = BackgroundExecutor.from_config(config)
        self.offloader = ExecutorOffloader(self.executor, self.runtime)
        consumers = consumer_env.ConsumerGroupEnv(
            consumer_env.ConsumerGroupSettings.from_config(config), image,
            offloader=self.offloader,
            log_offsets=lambda topic, partition: topiclog.log_offsets(self.broker, topic,
                                                                     partition))
        consumer_env.install(consumers)
        shares = share_env.ShareGroupEnv(
            share_env.ShareGroupSettings.from_config(config), image,
            share_env.DataPlaneLogs(self.topic_logs), offloader=self.offloader)
        share_env.install(shares)
        self.share_env = shares
        streams = streams_env.StreamsGroupEnv(
            streams_env.StreamsGroupSettings.from_config(config), image,
            offloader=self.offloader)
        streams_env.install(streams)
        self.topic_changes = TopicChangeListener(self.runtime, image,
                                                 refreshers(consumers, shares, streams))
        self.observability = observability.install(
            self, view_group=metrics_view.view,
            view_share_partitions=lambda shard: metrics_view.share_partitions(
                shard, lambda topic_id: getattr(image.topic_by_id(topic_id), "name", None)),
            log_end_offset=lambda topic, partition: topiclog.log_end_offset(self.broker, topic,
                                                                            partition))
        self.observability.registry.prometheus.register(self.telemetry.collector())
        self.timeline = timeline.install(
            self.runtime, timeline_records.start, timeline_records.GROUP_OF,
            max_entries=config["timeline.max.events.per.group"],
            topic_name=lambda topic_id: getattr(image.topic_by_id(topic_id), "name", None))
        self.registry = build_registry(config["legacy.request.versions.enable"],
                                       config["group.consumer.client.assignors.enable"])
        # the control endpoint (fault injection, forced rebalances, the timeline over HTTP)
        self.faults: FaultInjector | None = None
        self.control_server: ControlServer | None = None
        if config["control.listener"]:  # (its HTTP server imported only then)
            from .control import rebalance as control_groups
            from .control.http import ControlServer
            from .control.routes import Control

            host, port = check_control_listener(config["control.listener"])
            runtime = self.runtime
            self.faults = FaultInjector(
                lambda group, member: control_groups.settled_without(runtime, group, member),
                lambda group, member: control_groups.member_present(runtime, group, member))
            self.control_server = ControlServer(Control(self, self.faults), host, port)
        self.dispatcher = Dispatcher(self.broker, self.registry, self.faults)
        self.servers: list[KafkaServer] = []
        listeners = config.listeners
        # cluster.brokers > 1: the brokers, each with its dispatcher and listeners
        self.broker_specs: dict[int, BrokerSpec] = {}
        self.dispatchers: dict[int, Dispatcher] = {}
        self.broker_servers: dict[int, list[KafkaServer]] = {}
        if config["cluster.brokers"] > 1:
            self._build_cluster()
        # the rack-aware assignors see each partition's replicas' racks (None: no broker rack)
        consumers.partition_racks = partition_racks(self.broker.cluster, self.broker.rack)
        # TLS contexts, SASL users and limits are read now, so a bad one stops the start
        self.listener_security = [listener_security(config, listener, self.scram_credentials)
                                  for listener in listeners]
        self.quotas = ConnectionQuotas.from_config(config, [item.name for item in listeners])
        self._stopped = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []

    def _build_cluster(self) -> None:
        config = self.config
        specs = broker_specs(config)
        self.broker_specs = {spec.node_id: spec for spec in specs}
        nodes = [BrokerNode(specs[0].node_id, specs[0].rack, self.broker.endpoints)]
        nodes += [BrokerNode(spec.node_id, spec.rack,
                             {ad.name: Endpoint(ad.host or "127.0.0.1", ad.port)
                              for ad in spec.advertised}) for spec in specs[1:]]
        cluster = Cluster(nodes, config["offsets.topic.num.partitions"],
                          config["offsets.topic.replication.factor"])
        cluster_state.load(config.log_dir, cluster)
        self.broker.cluster = cluster
        self.dispatchers = {spec.node_id: BrokerDispatcher(self.broker, self.registry,
                                                           self.faults, spec.node_id)
                            for spec in specs}
        self.dispatcher = self.dispatchers[specs[0].node_id]

    async def listen(self, node_id: int) -> list[KafkaServer]:
        """Start broker ``node_id``'s listeners (cluster.brokers > 1); the ports they bound
        are what it advertises where it advertises port 0, and what it binds again after a
        stop."""
        spec = self.broker_specs[node_id]
        node = self.broker.cluster.broker(node_id) if self.broker.cluster else None
        servers = []
        for security, listener in zip(self.listener_security, spec.listeners, strict=True):
            server = KafkaServer(
                self.dispatchers[node_id], listener, self.config["socket.request.max.bytes"],
                self.config["connections.max.idle.ms"], security, self.quotas,
                self.config["connection.failed.authentication.delay.ms"],
                self.config.for_listener(listener.name, "sasl.server.max.receive.size"))
            port = await server.start()
            servers.append(server)
            if listener.port == 0:  # bound again on the same port after a stop
                spec = self.broker_specs[node_id] = replace(spec, listeners=tuple(
                    replace(item, port=port) if item.name == listener.name else item
                    for item in spec.listeners))
            advertised = node.endpoints.get(listener.name) if node else None
            if advertised is not None and advertised.port == 0:
                advertised.port = port
            log.info("listening", listener=listener.name, host=listener.host, port=port,
                     security_protocol=listener.security_protocol, node_id=node_id,
                     sasl_mechanisms=security.sasl_mechanisms or None,
                     advertised_host=advertised.host if advertised else None,
                     advertised_port=advertised.port if advertised else None)
        self.broker_servers[node_id] = servers
        if node_id == self.broker.node_id:
            self.servers[:] = servers
        return servers

    async def unlisten(self, node_id: int) -> None:
        """Close broker ``node_id``'s listeners and drop its connections."""
        for server in self.broker_servers.pop(node_id, []):
            await server.stop()
            if server in self.servers:
                self.servers.remove(server)

    async def start(self) -> None:
        await self.runtime.start()  # the partitions load in the background from here
        # the workers start with the server only if a group type offloads by default, in the
        # background: the listeners do not wait for the forkserver's imports
        await self.executor.start(eager=any(
            self.config[f"group.{kind}.assignor.offload.enable"]
            for kind in ("consumer", "share", "streams")), wait=False)
        self.topic_logs.start()
        if self.broker.cluster is not None:  # batches (markers too) carry the kept epochs
            for (topic, index), state in self.broker.cluster.partitions.items():
                plog = self.topic_logs.get(topic, index)
                if plog is not None:
                    plog.leader_epoch = state.leader_epoch
        # aborts timed-out transactions, completes those a restart left in doubt
        self._background.append(asyncio.create_task(write_txn_markers.of(self.broker).run()))
        # client telemetry: stale clients' series leave /metrics
        self._background.append(asyncio.create_task(self.telemetry.run()))
        # an older store's group configs become cluster metadata once its partitions loaded
        self._background.append(asyncio.create_task(self.config_migration.run()))
        # no garbage collection while the partitions load (see GcPauseGuard)
        self._background.append(asyncio.create_task(
            GcPauseGuard().run(self.runtime.wait_loaded())))
        if self.config["log.cleaner.enable"]:
            self._background.append(asyncio.create_task(self.compactor.run()))
        await self._seed_scram_credentials()
        for node_id in self.broker_specs:
            await self.listen(node_id)
        for security in self.listener_security if not self.broker_specs else ():
            listener = security.listener
            server = KafkaServer(
                self.dispatcher, listener, self.config["socket.request.max.bytes"],
                self.config["connections.max.idle.ms"], security, self.quotas,
                self.config["connection.failed.authentication.delay.ms"],
                self.config.for_listener(listener.name, "sasl.server.max.receive.size"))
            port = await server.start()
            self.broker.bound_to(port, listener.name)
            self.servers.append(server)
            advertised = self.broker.endpoint_for(listener.name)
            log.info("listening", listener=listener.name, host=listener.host, port=port,
                     security_protocol=listener.security_protocol,
                     sasl_mechanisms=security.sasl_mechanisms or None,
                     advertised_host=advertised.host, advertised_port=advertised.port)
        metrics_url = self.config["metrics.listener"]
        if metrics_url:
            host, port = self.observability.start_exporter(metrics_url)
            log.info("metrics exporter listening", host=host, port=port)
        if self.control_server is not None:
            self.control_server.control.loop = asyncio.get_running_loop()
            host, port = self.control_server.start()
            log.info("control listening", host=host, port=port)
        log.info("started", node_id=self.broker.node_id, cluster_id=self.broker.cluster_id,
                 log_dir=self.config.log_dir)

    async def _seed_scram_credentials(self) -> None:
        records = []
        for name, mechanism, credential in self._scram_seeds:
            if self.scram_credentials.get(name, mechanism) is not None:
                log.info("scram credential kept", user=name, mechanism=mechanism.mechanism_name)
                continue
            records.append(scram_record(name, mechanism, credential))
            log.info("scram credential added", user=name, mechanism=mechanism.mechanism_name,
                     iterations=credential.iterations)
        if records:
            async with self.metadata_log.lock:
                await self.metadata_log.write(list(records))
                for key, value in records:
                    self.scram_credentials.replay(key, value)

    def request_stop(self) -> None:
        self._stopped.set()

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        stack_dump.install(loop)
        await self.start()
        await self._stopped.wait()
        log.info("stopping")
        if self.control_server is not None:
            await asyncio.to_thread(self.control_server.stop)
        for server in self.servers:
            await server.stop()
        for node_id in list(self.broker_servers):
            await self.unlisten(node_id)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.topic_changes.close()
        await self.offloader.close()
        await self.executor.stop()
        await self.runtime.stop()
        await self.topic_logs.stop()
        self.metadata_log.close()
        stack_dump.uninstall(loop)
        log.info("stopped")
