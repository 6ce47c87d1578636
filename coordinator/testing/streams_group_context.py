"""A virtual-time context for streams group handler tests (KIP-1071): ``ShardContext`` (a shard,
a manual clock, every result's records replayed through the record codec, timers fired in
virtual time) with topics, the streams group environment, a manual offloader and the
StreamsGroupHeartbeat handler at hand. No asyncio, no files.

    ctx = StreamsGroupContext()
    ctx.create_topic("input", 4)
    ctx.topology = topology(subtopology("0", ("input",)))
    a = ctx.client("a")                  # a member that behaves like the 4.3 client
    a.join()                             # epoch 0; its tasks come in the response
    a.heartbeat()                        # steady heartbeats report what it owns

``heartbeat`` sends one request as the API layer would build it (and validates it the same
way first); ``client`` gives a ``StreamsClient`` that keeps its epoch, the tasks it owns and
its endpoint epoch, revokes what a response no longer lists and reports its owned task lists
when they changed, as the real client does (spec §1.8). ``create_topic`` and friends change the
topics and tell the shard's streams groups, as the runtime's topic-change listener does, so
that MISSING_SOURCE_TOPICS / MISSING_INTERNAL_TOPICS → ready can be simulated.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coordinator.groups.common import group_configs
from coordinator.groups.common.offload import chunks
from coordinator.groups.streams import env as streams_env
from coordinator.groups.streams.env import StreamsGroupEnv, StreamsGroupSettings
from coordinator.groups.streams.heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    refresh_subscription_metadata,
    validate,
)
from coordinator.groups.streams.model import (
    Endpoint,
    StreamsGroup,
    StreamsGroupMember,
    Tasks,
    TasksTuple,
)
from coordinator.groups.streams.topology import (
    CopartitionGroup,
    InternalTopic,
    Subtopology,
    TopicInfo,
    Topology,
    validate_topic_names,
)
from coordinator.runtime import CoordinatorError

from .consumer_group_context import ManualOffloader, Topic, Topics
from .shard_context import ShardContext

G = "app"
"""The default group id (a Kafka Streams ``application.id``)."""

_UNSET: Any = object()


# --- building topologies and tasks ---------------------------------------------------------------
def subtopology(sid: str, sources: Sequence[str] = (), *, sinks: Sequence[str] = (),
                repartition: Sequence[str | TopicInfo] = (),
                changelogs: Sequence[str | TopicInfo] = (),
                copartition: Sequence[CopartitionGroup] = (),
                regex: Sequence[str] = ()) -> Subtopology:
    """A subtopology as the real client sends it: source topics, repartition sinks it writes,
    repartition sources it reads (a name: partition count not fixed) and changelogs."""

    def info(t: str | TopicInfo) -> TopicInfo:
        return TopicInfo(t) if isinstance(t, str) else t

    return Subtopology(sid, source_topics=tuple(sources), source_topic_regex=tuple(regex),
                       state_changelog_topics=tuple(info(t) for t in changelogs),
                       repartition_sink_topics=tuple(sinks),
                       repartition_source_topics=tuple(info(t) for t in repartition),
                       copartition_groups=tuple(copartition))


def topology(*subtopologies: Subtopology, epoch: int = 0) -> Topology:
    return Topology(epoch, tuple(subtopologies))


def tasks(by_subtopology: Mapping[str, Iterable[int]] | None = None) -> Tasks:
    """``{"0": [0, 1]}`` as task partitions by subtopology (empty lists dropped)."""
    return {s: frozenset(p) for s, p in (by_subtopology or {}).items() if p}


def plain(tasks_tuple: TasksTuple | None) -> dict[str, dict[str, set[int]]] | None:
    """A task tuple as plain sets by role, for readable assertions (epochs left out)."""
    if tasks_tuple is None:
        return None
    return {role: {s: set(p) for s, p in getattr(tasks_tuple, role).items()}
            for role in ("active", "standby", "warmup")}


def active_tasks(response: HeartbeatResponse) -> dict[str, set[int]] | None:
    """The active tasks a response carries as plain sets; None when it carries no tasks."""
    if response.tasks is None:
        return None
    return {s: set(p) for s, p in response.tasks.active.items()}


# --- the context ---------------------------------------------------------------------------------
class StreamsGroupContext(ShardContext):
    def __init__(self, settings: StreamsGroupSettings | None = None, *,
                 now_ms: int = 1_000_000, overrides: Mapping[str, Any] | None = None,
                 offload: bool = False, topics: Topics | None = None) -> None:
        """``settings``: the broker's streams group configs; by default Kafka's, except no
        initial rebalance delay, no assignment interval and no offload, so that a target is
        computed by the heartbeat that makes it due (tests of seed 000 pass their own).
        ``offload``: runs go to a :class:`ManualOffloader` (the settings' and the group's
        ``assignor_offload`` still decide whether a run is offloaded)."""
        super().__init__(overrides, now_ms=now_ms)
        self.topics = topics if topics is not None else Topics()
        self.offloader = ManualOffloader() if offload else None
        self.env = StreamsGroupEnv(
            settings or StreamsGroupSettings(initial_rebalance_delay_ms=0,
                                             assignment_interval_ms=0, assignor_offload=False),
            self.topics, self.offloader)
        streams_env.install(self.env)  # load hooks and timers read the installed environment
        self.topology: Topology | None = None
        """What ``heartbeat`` and clients send on join when not given one."""
        self.responses: list[HeartbeatResponse] = []
        """Every successful heartbeat response, in order."""

    # --- topics --------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        """Create a topic and tell the groups (their topology is configured again on the next
        heartbeat, as after Kafka's metadata update)."""
        topic_id = uuid.UUID(int=max((t.topic_id.int for t in self.topics.by_name.values()),
                                     default=0) + 1)
        self.topics.by_name[name] = Topic(name, topic_id, partitions)
        self.topic_changed(name)
        return topic_id

    def create_internal_topics(self, topics: Iterable[InternalTopic]) -> list[str]:
        """What KafkaApis does with a heartbeat's ``internal_topics``: create those missing,
        with the partition counts asked for. Returns the names created."""
        created = []
        for topic in topics:
            if self.topics.topic(topic.name) is None:
                self.create_topic(topic.name, topic.partitions)
                created.append(topic.name)
        return created

    def add_partitions(self, name: str, partitions: int) -> None:
        old = self.topics.by_name[name]
        self.topics.by_name[name] = Topic(name, old.topic_id, partitions)
        self.topic_changed(name)

    def delete_topic(self, name: str) -> None:
        del self.topics.by_name[name]
        self.topic_changed(name)

    def topic_changed(self, name: str) -> None:
        """The topic-change write event of the runtime's listener."""
        self.run(lambda shard, now: refresh_subscription_metadata(shard, now, self.env, name))

    # --- group configs -------------------------------------------------------------------------
    def set_group_config(self, group_id: str = G, **configs: Any) -> None:
        """Store the group's overrides (what IncrementalAlterConfigs writes to the metadata);
        names with ``_`` for ``.``: ``set_group_config(streams_num_standby_replicas=1)``.
        Replaces all overrides."""
        stored = {name.replace("_", "."): str(value).lower() if isinstance(value, bool)
                  else str(value) for name, value in configs.items()}
        group_configs.validate(stored, self.config)
        self.set_group_configs(group_id, stored)

    # --- offload -------------------------------------------------------------------------------
    def pending_runs(self) -> int:
        return 0 if self.offloader is None else len(self.offloader.runs)

    def finish_runs(self, count: int | None = None, *, error: BaseException | None = None
                    ) -> int:
        """Finish the oldest ``count`` (default: all) offloaded runs: each job is run here (or
        fails with ``error``) and its result installed chunk by chunk, one write event each, at
        the current time, as the executor's callback does. Returns how many finished."""
        assert self.offloader is not None, "the context was made without offload=True"
        runs = self.offloader.runs
        todo = runs[:len(runs) if count is None else count]
        del runs[:len(todo)]
        for _, run in todo:
            outcome = error if error is not None else run.runner(run.prepared.job)
            for part in chunks(outcome):
                self.apply(run.installer(self.shard, self.now, run, outcome, part))
        return len(todo)

    # --- requests ------------------------------------------------------------------------------
    def heartbeat(self, member_id: str = "m1", member_epoch: int = 0, *, group_id: str = G,
                  topology: Topology | None = _UNSET, active: Mapping[str, Iterable[int]]
                  | None = _UNSET, standby: Mapping[str, Iterable[int]] | None = _UNSET,
                  warmup: Mapping[str, Iterable[int]] | None = _UNSET,
                  process_id: str | None = _UNSET, rack_id: str | None = None,
                  rebalance_timeout_ms: int = _UNSET, user_endpoint: Endpoint | None = None,
                  client_tags: Mapping[str, str] | None = _UNSET,
                  endpoint_epoch: int = -1, shutdown: bool = False,
                  instance_id: str | None = None, task_offsets: bool = False,
                  task_end_offsets: bool = False, client_id: str = "client",
                  client_host: str = "/127.0.0.1") -> HeartbeatResponse:
        """One heartbeat, validated as the API layer does it; raises ``CoordinatorError`` like
        the handler. On epoch 0 the fields default the way the 4.3 client sends them (the
        context's topology, empty task lists, rebalance timeout 300000, process id
        ``process-<member>``, no tags); otherwise they default to null / -1."""
        joining = member_epoch == 0

        def pick(value: Any, on_join: Any, otherwise: Any = None) -> Any:
            if value is not _UNSET:
                return value
            return on_join if joining else otherwise

        def task_list(value: Any) -> Tasks | None:
            value = pick(value, {})
            return None if value is None else tasks(value)

        tags = pick(client_tags, {})
        request = HeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=member_epoch,
            endpoint_information_epoch=endpoint_epoch, instance_id=instance_id,
            rack_id=rack_id, rebalance_timeout_ms=pick(rebalance_timeout_ms, 300000, -1),
            topology=pick(topology, self.topology),
            active_tasks=task_list(active), standby_tasks=task_list(standby),
            warmup_tasks=task_list(warmup),
            process_id=pick(process_id, f"process-{member_id}"), user_endpoint=user_endpoint,
            client_tags=None if tags is None else tuple(sorted(tags.items())),
            task_offsets=task_offsets, task_end_offsets=task_end_offsets,
            shutdown_application=shutdown, client_id=client_id, client_host=client_host)
        return self.send(request)

    def send(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """Validate ``request`` as the API layer does, then run the handler as a write."""
        if request.topology is not None:
            validate_topic_names(request.topology)
        validate(request)
        response: HeartbeatResponse = self.run(
            lambda shard, now: heartbeat(shard, now, self.env, request))
        self.responses.append(response)
        return response

    def error_of(self, *args: Any, **kwargs: Any) -> CoordinatorError:
        """The error a heartbeat fails with (AssertionError if it does not fail)."""
        try:
            self.heartbeat(*args, **kwargs)
        except CoordinatorError as exc:
            return exc
        raise AssertionError("the heartbeat did not fail")

    def client(self, member_id: str, *, process_id: str | None = None, group_id: str = G,
               topology: Topology | None = None, user_endpoint: Endpoint | None = None,
               rack_id: str | None = None, rebalance_timeout_ms: int = 300000
               ) -> StreamsClient:
        return StreamsClient(self, member_id, process_id or f"process-{member_id}", group_id,
                             topology, user_endpoint, rack_id, rebalance_timeout_ms)

    def converge(self, *clients: StreamsClient, rounds: int = 20) -> int:
        """Heartbeat every client in turn until a whole round changes nothing (no record,
        every client's owned tasks reported); returns the rounds it took."""
        for n in range(1, rounds + 1):
            mark = self.mark()
            for c in clients:
                c.heartbeat()
            if self.mark() == mark and not any(c.dirty for c in clients):
                return n
        raise AssertionError(f"no convergence in {rounds} rounds")

    # --- reads ---------------------------------------------------------------------------------
    def group(self, group_id: str = G) -> StreamsGroup:
        group = self.shard.groups[group_id]
        assert isinstance(group, StreamsGroup), f"{group_id} is a {type(group).__name__}"
        return group

    def member(self, member_id: str, group_id: str = G) -> StreamsGroupMember:
        member = self.group(group_id).member(member_id)
        assert member is not None, f"{member_id} is not a member of {group_id}"
        return member

    def restarted(self, *, advance_ms: int = 0) -> StreamsGroupContext:
        """A new context whose shard is rebuilt by replaying every record written here (a
        server restart), loaded ``advance_ms`` later with the same topics and settings.
        In-memory state (configured topology, endpoint epoch, timers, runs) is gone."""
        other = StreamsGroupContext(self.env.settings, now_ms=self.now + advance_ms,
                                    overrides=self.overrides, offload=self.offloader is not None,
                                    topics=self.topics)
        other.topology = self.topology
        other.keep_group_configs(self)
        for record in self.written:
            other.shard.replay(record.offset, record.key, record.value)
            other.written.append(record)
        other.load()
        return other


class StreamsClient:
    """A streams group member driven like the Kafka 4.3 client (spec §1.8): it joins with its
    process id (and endpoint), keeps the epoch and endpoint epoch it was given, takes a
    response's task lists as its complete assignment (revoking what is gone at once), reports
    its owned task lists on the next heartbeat whenever they changed, and rejoins with epoch 0
    and the same member id after FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID (``rejoin``)."""

    def __init__(self, ctx: StreamsGroupContext, member_id: str, process_id: str,
                 group_id: str, topology: Topology | None, user_endpoint: Endpoint | None,
                 rack_id: str | None, rebalance_timeout_ms: int) -> None:
        self.ctx = ctx
        self.member_id = member_id
        self.process_id = process_id
        self.group_id = group_id
        self.topology = topology
        self.user_endpoint = user_endpoint
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch = 0
        self.endpoint_epoch = -1
        self.owned = TasksTuple()
        self.dirty = False
        """The owned tasks changed since the client last reported them."""
        self.last: HeartbeatResponse | None = None
        self.shutdown = False

    def join(self) -> HeartbeatResponse:
        self.epoch = 0
        self.owned = TasksTuple()
        self.dirty = False
        return self._take(self.ctx.heartbeat(
            self.member_id, 0, group_id=self.group_id,
            topology=self.topology if self.topology is not None else self.ctx.topology,
            process_id=self.process_id, user_endpoint=self.user_endpoint, rack_id=self.rack_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            endpoint_epoch=self.endpoint_epoch, shutdown=self.shutdown))

    def heartbeat(self, *, hold: bool = False) -> HeartbeatResponse:
        """A steady heartbeat (a join while the client has no epoch). ``hold``: the client has
        not finished revoking yet, so it does not report its owned tasks."""
        if self.epoch == 0:
            return self.join()
        report = self.dirty and not hold
        owned = self.owned
        response = self.ctx.heartbeat(
            self.member_id, self.epoch, group_id=self.group_id,
            active=owned.active if report else None,
            standby=owned.standby if report else None,
            warmup=owned.warmup if report else None,
            endpoint_epoch=self.endpoint_epoch, shutdown=self.shutdown)
        if report:
            self.dirty = False
        return self._take(response)

    def leave(self) -> HeartbeatResponse:
        response = self.ctx.heartbeat(self.member_id, -1, group_id=self.group_id,
                                      endpoint_epoch=self.endpoint_epoch,
                                      shutdown=self.shutdown)
        self.epoch, self.owned, self.dirty = 0, TasksTuple(), False
        return response

    def rejoin(self) -> HeartbeatResponse:
        """What the client does after FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID."""
        return self.join()

    def _take(self, response: HeartbeatResponse) -> HeartbeatResponse:
        self.last = response
        self.epoch = response.member_epoch
        self.endpoint_epoch = response.endpoint_information_epoch
        if response.tasks is not None:
            new = TasksTuple(dict(response.tasks.active), dict(response.tasks.standby),
                             dict(response.tasks.warmup))
            if not new.same_tasks(self.owned):
                self.owned = new
                self.dirty = True
        return response

    @property
    def active(self) -> dict[str, set[int]]:
        return {s: set(p) for s, p in self.owned.active.items()}

    @property
    def standby(self) -> dict[str, set[int]]:
        return {s: set(p) for s, p in self.owned.standby.items()}

    def statuses(self) -> list[int]:
        return [code for code, _ in (self.last.statuses if self.last else [])]


__all__ = ["G", "StreamsClient", "StreamsGroupContext", "active_tasks", "plain", "subtopology",
           "tasks", "topology"]
