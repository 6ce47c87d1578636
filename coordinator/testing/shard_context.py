"""A virtual-time context for pure handler tests, with no runtime, no asyncio and no files
(Kafka's ``GroupMetadataManagerTestContext``).

``ShardContext`` holds a ``CoordinatorShard`` and a ``ManualClock`` and does what the runtime does
with a handler's ``Result``: its records are written (through the record codec, so what is
replayed is what a reload would read) and replayed into the shard at increasing offsets, then its
``effect`` runs, then its completions answer the requests still waiting (``Pending`` keys).
``advance(ms)`` moves the clock and runs the timers that came due, each as a write event.

    ctx = ShardContext({"group.initial.rebalance.delay.ms": 0})
    response = ctx.run(lambda shard, now: classic_protocol.join(shard, request, now))
    ctx.advance(10_000)                      # session timeouts fire
    ctx.answer(classic.join_key("g", m1))    # what a waiting JoinGroup was answered
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.config import ServerConfig
from coordinator.groups.replay import new_shard
from coordinator.metadata.config_resources import GROUP, ConfigResources
from coordinator.runtime import Pending, Result
from coordinator.runtime.clock import ManualClock
from storage.records import decode_record, encode_record

from .group_configs import store as store_group_configs

Handler = Callable[[Any, int], Result]


@dataclass(frozen=True, slots=True)
class Written:
    """One record as the shard replayed it."""

    offset: int
    key: Any
    value: Any | None
    timestamp_ms: int

    @property
    def tombstone(self) -> bool:
        return self.value is None


class ShardContext:
    def __init__(self, overrides: Mapping[str, Any] | None = None, *, now_ms: int = 0,
                 partition: int = 0, codec: bool = True) -> None:
        """``overrides``: broker configs by Kafka's names; ``codec``: send every record through
        encode/decode before replaying it, as a reload from the log would."""
        self.overrides = dict(overrides or {})
        self.config = ServerConfig.from_sources(self.overrides)
        self.clock = ManualClock(now_ms)
        self.partition = partition
        self.codec = codec
        self.group_configs = ConfigResources()
        """The metadata's group configs the shard reads (``set_group_configs``)."""
        self.shard = new_shard(partition, self.config, self.group_configs.of_type(GROUP))
        self.written: list[Written] = []
        self.completed: dict[Hashable, Any] = {}  # answers given to waiting requests, by key
        self.completion_log: list[tuple[Hashable, Any]] = []  # every completion, in order
        self.pending: set[Hashable] = set()  # requests waiting for an answer
        self.superseded: list[Hashable] = []  # waiting requests replaced by a newer one

    # --- time --------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def advance(self, ms: int) -> list[Hashable]:
        """Move the clock by ``ms`` and run every timer due by then, in deadline order (timers
        a fired timer schedules within the window run too); returns the fired keys."""
        target = self.now + ms
        fired: list[Hashable] = []
        while True:
            deadline = self.shard.timers.next_deadline()
            if deadline is None or deadline > target:
                break
            self.clock.advance(max(0, deadline - self.now))
            for key, action in self.shard.timers.poll(self.now):
                self.apply(action(self.shard, self.now))
                fired.append(key)
        self.clock.advance(target - self.now)
        return fired

    def advance_to(self, time_ms: int) -> list[Hashable]:
        return self.advance(time_ms - self.now)

    # --- events ------------------------------------------------------------------------------
    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replace the group's overrides in the metadata (what IncrementalAlterConfigs
        writes), unvalidated."""
        store_group_configs(self.group_configs, group_id, configs)

    def keep_group_configs(self, before: ShardContext) -> None:
        """The group configs of ``before`` (cluster metadata, which a coordinator's restart
        keeps)."""
        for group_id in before.group_configs.names(GROUP):
            self.set_group_configs(group_id, before.group_configs.configs(GROUP, group_id))

    def run(self, handler: Handler) -> Any:
        """Run a write handler at the current time, as one event; returns its response
        (a ``Pending`` when the request waits)."""
        return self.apply(handler(self.shard, self.now))

    def read(self, handler: Callable[[Any, int], Any]) -> Any:
        """Run a read handler (no records)."""
        return handler(self.shard, self.now)

    def apply(self, result: Result) -> Any:
        """What the runtime does with a result: write and replay, effect, completions."""
        assert isinstance(result, Result), f"handler returned {type(result)}"
        for key, value in result.records:
            if self.codec:
                key, value = decode_record(*encode_record(key, value))
            offset = len(self.written)
            self.shard.replay(offset, key, value)
            self.written.append(Written(offset, key, value, self.now))
        if result.effect is not None:
            result.effect()
        for key, response in result.completions:
            self.completion_log.append((key, response))
            if key in self.pending:
                self.pending.discard(key)
                self.completed[key] = response
        if isinstance(result.response, Pending):
            if result.response.key in self.pending:
                self.superseded.append(result.response.key)
            self.pending.add(result.response.key)
            self.completed.pop(result.response.key, None)
        return result.response

    def answer(self, key: Hashable) -> Any:
        """The answer a waiting request got (AssertionError if it is still waiting)."""
        assert key not in self.pending, f"{key} is still waiting"
        assert key in self.completed, f"{key} was never answered"
        return self.completed[key]

    def take(self, key: Hashable) -> Any:
        """``answer`` and forget it, so the same key can wait again."""
        response = self.answer(key)
        del self.completed[key]
        return response

    def is_pending(self, key: Hashable) -> bool:
        return key in self.pending

    def load(self) -> None:
        """The end of loading: the shard's load hooks (timers re-armed) run at ``now``."""
        self.shard.on_loaded(self.now)

    def restarted(self, *, advance_ms: int = 0) -> ShardContext:
        """A new context whose shard is rebuilt by replaying every record written here (a
        server restart), loaded ``advance_ms`` later. In-memory state (join phases, timers,
        waiting requests) is gone, as after a restart."""
        other = ShardContext(self.overrides, now_ms=self.now + advance_ms,
                             partition=self.partition, codec=self.codec)
        other.keep_group_configs(self)
        for record in self.written:
            other.shard.replay(record.offset, record.key, record.value)
            other.written.append(record)
        other.load()
        return other

    # --- records -----------------------------------------------------------------------------
    def records(self, key_type: type | None = None, *, since: int = 0) -> list[Written]:
        """Records written from offset ``since`` on, of one key type if given."""
        return [r for r in self.written[since:]
                if key_type is None or isinstance(r.key, key_type)]

    def tombstones(self, key_type: type | None = None, *, since: int = 0) -> list[Written]:
        return [r for r in self.records(key_type, since=since) if r.tombstone]

    def mark(self) -> int:
        """The next offset: pass it as ``since`` to see only what is written after now."""
        return len(self.written)

    def last(self, key_type: type | None = None) -> Written:
        found = self.records(key_type)
        assert found, f"no {key_type.__name__ if key_type else ''} record written"
        return found[-1]

    def last_value(self, key_type: type) -> Any:
        """The value of the last record of ``key_type`` (AssertionError for a tombstone)."""
        record = self.last(key_type)
        assert record.value is not None, f"the last {key_type.__name__} is a tombstone"
        return record.value
