"""A virtual-time context for consumer group handler tests: a shard, a manual clock, topics,
and the replay of every result's records (through the record codec), as the runtime does.
No asyncio, no files."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from coordinator.groups.common.offload import AssignorRun, WriteOf, chunks, run_inline
from coordinator.groups.consumer.env import ConsumerGroupEnv, ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    validate,
)
from coordinator.groups.consumer.model import Assignment, ConsumerGroup, ConsumerGroupMember
from coordinator.groups.replay import new_shard
from coordinator.metadata.config_resources import GROUP, ConfigResources
from coordinator.runtime import CoordinatorError, Result
from storage.records import decode_record, encode_record

from .group_configs import store as store_group_configs


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int


class Topics:
    def __init__(self) -> None:
        self.by_name: dict[str, Topic] = {}

    def topic(self, name: str) -> Topic | None:
        return self.by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)

    def topics(self) -> list[Topic]:
        return sorted(self.by_name.values(), key=lambda t: t.name)


class ManualOffloader:
    """Keeps offloaded runs until the test finishes them (``ConsumerGroupContext.finish_runs``)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, AssignorRun]] = []
        self.tasks: list[tuple[Callable[[Any], Any], Any, WriteOf]] = []

    def submit(self, partition: int, run: AssignorRun) -> None:
        self.runs.append((partition, run))

    def submit_task(self, partition: int, task: Callable[[Any], Any], payload: Any,
                    write: WriteOf, group_id: str) -> None:
        self.tasks.append((task, payload, write))


class ConsumerGroupContext:
    def __init__(self, settings: ConsumerGroupSettings | None = None, now_ms: int = 1_000_000,
                 *, offload: bool = False, replay_as_written: bool = False) -> None:
        """``offload``: runs go to a :class:`ManualOffloader` (the settings' and the group's
        ``assignor_offload`` still decide whether a run is offloaded). Records are encoded and
        replayed decoded again, as a load replays them; ``replay_as_written`` replays the
        objects the handler built, as the runtime does after appending them."""
        self.replay_as_written = replay_as_written
        self.group_configs = ConfigResources()
        """The metadata's group configs the shard reads (``set_group_configs``)."""
        self.shard = new_shard(0, group_configs=self.group_configs.of_type(GROUP))
        self.topics = Topics()
        self.offloader = ManualOffloader() if offload else None
        self.env = ConsumerGroupEnv(settings or ConsumerGroupSettings(), self.topics,
                                    self.offloader)
        self.now = now_ms
        self.written: list[tuple[Any, Any]] = []

    # --- topics ------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.UUID(int=len(self.topics.by_name) + 1)
        self.topics.by_name[name] = Topic(name, topic_id, partitions)
        return topic_id

    def add_partitions(self, name: str, partitions: int) -> None:
        old = self.topics.by_name[name]
        self.topics.by_name[name] = Topic(name, old.topic_id, partitions)

    def delete_topic(self, name: str) -> None:
        del self.topics.by_name[name]

    def tid(self, name: str) -> uuid.UUID:
        return self.topics.by_name[name].topic_id

    # --- time and records --------------------------------------------------------------------
    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replace the group's overrides in the metadata (what IncrementalAlterConfigs
        writes), unvalidated."""
        store_group_configs(self.group_configs, group_id, configs)

    def apply(self, result: Result) -> Any:
        for key, value in result.records:
            encoded = encode_record(key, value)
            if not self.replay_as_written:
                key, value = decode_record(*encoded)
            self.shard.replay(len(self.written), key, value)
            self.written.append((key, value))
        if result.effect is not None:
            result.effect()
        return result.response

    def finish_runs(self, count: int | None = None) -> int:
        """Finish the oldest ``count`` (default: all) offloaded runs: each is run here and its
        result installed as a write event at the current time. Returns how many finished."""
        assert self.offloader is not None, "the context was made without offload=True"
        runs = self.offloader.runs
        todo = runs[:len(runs) if count is None else count]
        del runs[:len(todo)]
        for _, run in todo:
            outcome = run_inline(run.prepared)
            for part in chunks(outcome):
                self.apply(run.installer(self.shard, self.now, run, outcome, part))
        return len(todo)

    def finish_tasks(self) -> int:
        """Run the background tasks submitted so far (regex resolutions) here, each outcome
        applied as a write event at the current time. Returns how many finished."""
        assert self.offloader is not None, "the context was made without offload=True"
        todo, self.offloader.tasks = self.offloader.tasks, []
        for task, payload, write in todo:
            self.apply(write(task(payload))(self.shard, self.now))
        return len(todo)

    def pending_runs(self) -> int:
        return 0 if self.offloader is None else len(self.offloader.runs)

    def advance(self, ms: int) -> list[Any]:
        """Move the clock and run the timers that came due, as write events."""
        self.now += ms
        fired = []
        for key, action in self.shard.timers.poll(self.now):
            self.apply(action(self.shard, self.now))
            fired.append(key)
        return fired

    # --- requests ----------------------------------------------------------------------------
    def heartbeat(self, group_id: str = "g", member_id: str = "m1", member_epoch: int = 0,
                  *, topics: Sequence[str] | None = None, owned: Mapping[str, Iterable[int]]
                  | None = None, rebalance_timeout_ms: int = -1, instance_id: str | None = None,
                  assignor: str | None = None, rack_id: str | None = None,
                  regex: str | None = None, client_assignors: Sequence[Any] | None = None,
                  client_id: str = "client") -> HeartbeatResponse:
        """One heartbeat; raises CoordinatorError like the handler. On epoch 0 the full request
        fields default the way a client sends them."""
        if member_epoch == 0:
            rebalance_timeout_ms = 300000 if rebalance_timeout_ms == -1 else rebalance_timeout_ms
            owned = {} if owned is None else owned
            if topics is None and regex is None:
                topics = ()
        request = HeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=member_epoch,
            instance_id=instance_id, rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=None if topics is None else tuple(topics),
            subscribed_topic_regex=regex, server_assignor=assignor,
            owned=None if owned is None else tuple(
                (self.tid(name), tuple(parts)) for name, parts in owned.items()),
            client_id=client_id, client_host="/127.0.0.1",
            client_assignors=None if client_assignors is None else tuple(client_assignors))
        validate(request, self.env.settings.assignors)
        return self.apply(heartbeat(self.shard, self.now, self.env, request))

    def error_of(self, **kwargs: Any) -> Any:
        try:
            self.heartbeat(**kwargs)
        except CoordinatorError as exc:
            return exc.code
        raise AssertionError("no error")

    # --- reads -------------------------------------------------------------------------------
    def group(self, group_id: str = "g") -> ConsumerGroup:
        group = self.shard.groups[group_id]
        assert isinstance(group, ConsumerGroup)
        return group

    def member(self, member_id: str, group_id: str = "g") -> ConsumerGroupMember:
        member = self.group(group_id).member(member_id)
        assert member is not None
        return member

    @overload
    def named(self, assignment: Assignment) -> dict[str, set[int]]: ...
    @overload
    def named(self, assignment: Assignment | None) -> dict[str, set[int]] | None: ...

    def named(self, assignment: Assignment | None) -> dict[str, set[int]] | None:
        """An assignment by topic name, for readable assertions."""
        if assignment is None:
            return None
        out = {}
        for topic_id, partitions in assignment.items():
            topic = self.topics.topic_by_id(topic_id)
            out[topic.name if topic else str(topic_id)] = set(partitions)
        return out
