"""Subscriptions by regular expression (KIP-848's ``SubscribedTopicRegex``).

Kafka compiles them with RE2/J and matches whole topic names (``Matcher.matches``); here the
RE2 binding (``google-re2``) does the same. The group resolves every regex its members
subscribe to against the non-internal topic names and records each resolution as a
ConsumerGroupRegularExpression record (type 16); the topics a regex resolves to count as
subscribed by each member using it.

As Kafka's GroupMetadataManager does, the resolution runs off the request path: when a member
brings a regex the group has not resolved yet, when topics are created or deleted (the metadata
image listener), and on a heartbeat once ``group.consumer.regex.refresh.interval.ms`` passed,
the group's regexes go to the background executor together (``resolve_all``, at most one
resolution in flight per group, another one after it if topics changed meanwhile); the result
comes back as a write event (``resolution_installed``) that records each regex, updates the
subscription metadata and bumps the group epoch if the topics changed, which starts a new
target (``pacing``). Until then an unresolved regex subscribes to nothing, so a member that
subscribes to a regex and a topic name gets the named topic's partitions first and the matched
ones at a later heartbeat, as with Kafka. Without an offloader (handler tests) the resolution
runs inline in the heartbeat, as it did before.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import re2

from coordinator.metadata.topic_names import INTERNAL_TOPICS
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record
from protocol import ErrorCode
from storage.records import ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue

from .model import interned_topic_names

Resolved = Mapping[str, frozenset[str]]
"""Regex -> the topic names it resolves to."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

log = get_logger("coordinator.groups.consumer.regex")

_resolution_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """A ConsumerGroupRegularExpression record's value."""

    topics: frozenset[str]
    version: int
    timestamp: int


@functools.lru_cache(maxsize=1024)
def _compile(regex: str) -> Any:
    return re2.compile(regex, _OPTIONS)


def check(regex: str) -> None:
    """INVALID_REGULAR_EXPRESSION unless RE2 compiles ``regex`` (Kafka's message)."""
    try:
        _compile(regex)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) \
            else str(exc)
        raise CoordinatorError(
            ErrorCode.invalid_regular_expression,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
            f"{detail}.") from None


def topic_names(topics: Any) -> list[str]:
    """The non-internal topic names of a topic lookup (``MetadataImage`` or the test one)."""
    listing = topics.topics() if hasattr(topics, "topics") else ()
    return [t.name for t in listing if t.name not in INTERNAL_TOPICS]


def resolve(regex: str, names: Iterable[str]) -> frozenset[str]:
    pattern = _compile(regex)
    return frozenset(name for name in names if pattern.fullmatch(name) is not None)


def record(group_id: str, regex: str, topics: Iterable[str], version: int,
           timestamp: int) -> Record:
    return (ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
            ConsumerGroupRegularExpressionValue(topics=tuple(sorted(topics)), version=version,
                                                timestamp=timestamp))


def tombstone(group_id: str, regex: str) -> Record:
    return (ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None)


def regex_counts_after(group: Any, removed: Iterable[Any], added: Iterable[Any]
                       ) -> Counter[str]:
    """How many members subscribe to each regex once ``removed`` left and ``added`` joined."""
    counts = Counter(group.subscribed_regex_counts)
    for member in removed:
        if member.subscribed_topic_regex:
            counts[member.subscribed_topic_regex] -= 1
    for member in added:
        if member.subscribed_topic_regex:
            counts[member.subscribed_topic_regex] += 1
    return +counts


def resolved_topics(group: Any) -> dict[str, frozenset[str]]:
    return {regex: r.topics for regex, r in group.resolved_regexes.items()}


def refresh(group: Any, regexes: Iterable[str], topics: Any, now_ms: int, *,
            everything: bool, rewrite: bool = False
            ) -> tuple[list[Record], dict[str, frozenset[str]]]:
    """(records, resolution after them) for ``regexes`` (the ones the group will subscribe to):
    the unresolved ones are resolved, and all of them when ``everything``. A record is written
    for a regex whose topics changed or that was never resolved, and for every resolved one
    when ``rewrite`` (the periodic refresh: its timestamp moves on, as in Kafka); regexes no
    member uses any more get a tombstone."""
    wanted = set(regexes)
    current = resolved_topics(group)
    out: list[Record] = [tombstone(group.group_id, regex)
                         for regex in sorted(current) if regex not in wanted]
    resolution = {regex: topics_ for regex, topics_ in current.items() if regex in wanted}
    todo = sorted(wanted if everything else wanted - set(current))
    if todo:
        names = topic_names(topics)
        version = int(getattr(topics, "version", 0))
        for regex in todo:
            found = resolve(regex, names)
            if rewrite or regex not in current or current[regex] != found:
                out.append(record(group.group_id, regex, found, version, now_ms))
            resolution[regex] = found
    return out, resolution


def known(group: Any, regexes: Iterable[str]) -> tuple[list[Record], dict[str, frozenset[str]]]:
    """(tombstones of regexes no member uses any more, the known resolution of ``regexes``):
    what a heartbeat writes and sees when resolutions run in the background; a regex not
    resolved yet is absent (it subscribes to nothing)."""
    wanted = set(regexes)
    current = resolved_topics(group)
    out: list[Record] = [tombstone(group.group_id, regex)
                         for regex in sorted(current) if regex not in wanted]
    return out, {regex: topics_ for regex, topics_ in current.items() if regex in wanted}


# ------------------------------------------------------------------------------ background
def offloads(env: Any) -> bool:
    """Whether regexes are resolved in the background (an offloader that runs tasks)."""
    return env.offloader is not None and hasattr(env.offloader, "submit_task")


def resolve_all(payload: tuple[tuple[str, ...], tuple[str, ...]]
                ) -> tuple[dict[str, tuple[str, ...]], float]:
    """The background task (Kafka's ``refreshRegularExpressions``): each regex's matching
    topic names, and how long it took (ms). Regexes were checked when members brought them;
    one that does not compile here matches nothing."""
    began = time.perf_counter()
    regexes, names = payload
    compiled = []
    for regex in regexes:
        try:
            compiled.append((regex, _compile(regex)))
        except re2.error:
            pass
    found: dict[str, list[str]] = {regex: [] for regex in regexes}
    for regex, pattern in compiled:
        matches = found[regex]
        match = pattern.fullmatch
        for name in names:
            if match(name) is not None:
                matches.append(name)
    return ({regex: tuple(topics) for regex, topics in found.items()},
            (time.perf_counter() - began) * 1000.0)


def start_resolution(shard: Any, env: Any, group_id: str, now_ms: int, *,
                     stale: bool = False) -> Any:
    """The effect that sends the group's regexes (as they are once the event's records are
    applied) to the background executor; with one in flight, none starts, and ``stale``
    (topics changed) marks that another must follow it."""
    from .model import ConsumerGroup

    def effect() -> None:
        group = shard.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return
        if group.regex_resolution is not None:
            group.regex_rerun = group.regex_rerun or stale
            return
        regexes = tuple(sorted(group.subscribed_regex_counts))
        if not regexes:
            return
        names = tuple(topic_names(env.topics))
        version = int(getattr(env.topics, "version", 0))
        run_id = next(_resolution_ids)
        group.regex_resolution = run_id
        group.regex_rerun = False

        def write(outcome: Any) -> Any:
            return lambda shard, now: resolution_installed(shard, now, env, group, run_id,
                                                           outcome, version, now_ms)

        try:
            env.offloader.submit_task(shard.partition, resolve_all, (regexes, names), write,
                                      group_id)
        except Exception:
            group.regex_resolution = None
            log.exception("could not resolve the regular expressions in the background",
                          group_id=group_id)

    return effect


def resolution_installed(shard: Any, now_ms: int, env: Any, group: Any, run_id: int,
                         outcome: Any, version: int, started_ms: int) -> Result:
    """The write event of a finished resolution (Kafka's ``handleRegularExpressionsResult``):
    a record per regex the group still uses (its timestamp: when the resolution started), the
    subscription metadata, and a group epoch bump when the topics changed (``pacing`` starts
    the run it makes due). Discarded if the group is gone or reloaded."""
    from . import heartbeat, records

    gid = group.group_id
    if shard.groups.get(gid) is not group or group.regex_resolution != run_id:
        return Result()
    group.regex_resolution = None
    if isinstance(outcome, BaseException):
        log.error("regular expression resolution failed", group_id=gid, error=repr(outcome))
        return Result()
    found, took_ms = outcome
    log.info("resolved regular expressions", group_id=gid, regexes=len(found),
             resolve_ms=round(took_ms, 2))
    wanted = group.subscribed_regex_counts
    resolution = {regex: topics for regex, topics in resolved_topics(group).items()
                  if regex in wanted}
    out: list[Record] = []
    changed = False
    for regex, names in found.items():
        if not wanted.get(regex):
            continue  # no member uses it any more
        topics = frozenset(names)
        changed |= resolution.get(regex) != topics
        resolution[regex] = topics
        out.append(record(gid, regex, topics, version, started_ms))
    metadata = heartbeat.subscription_metadata(
        heartbeat._names_after(group, [], [], resolution), env, group.subscription_metadata)
    if metadata != group.subscription_metadata:
        out.append(records.subscription_metadata(gid, metadata.values()))
        changed = True
    if changed:
        epoch = heartbeat._next_group_epoch(group)
        out.append(records.group_epoch(gid, epoch))
        log.info("bumped group epoch", group_id=gid, group_epoch=epoch,
                 reason="regular expressions resolved")
        heartbeat.sensors.record_rebalance(gid)
        heartbeat.arm_after_bump(shard, env, group, now_ms)
    again = group.regex_rerun or any(regex not in found for regex in wanted)
    return Result(out, effect=start_resolution(shard, env, gid, now_ms) if again else None)


def refresh_due(group: Any, now_ms: int, interval_ms: int) -> bool:
    """``group.consumer.regex.refresh.interval.ms`` passed since the last resolution."""
    return bool(group.resolved_regexes) and now_ms >= group.regex_refresh_ms + interval_ms


def with_regex_topics(member: Any, resolution: Resolved) -> Any:
    """``member`` as the assignor sees it: its names plus the topics its regex resolves to."""
    regex = member.subscribed_topic_regex
    if not regex or not resolution.get(regex):
        return member
    names = interned_topic_names(set(member.subscribed_topic_names) | resolution[regex])
    return replace(member, subscribed_topic_names=names)


# ------------------------------------------------------------------------------ replay
def replay(shard: Any, offset: int, key: ConsumerGroupRegularExpressionKey,
            value: ConsumerGroupRegularExpressionValue | None) -> None:
    from .model import ConsumerGroup

    group = shard.groups.get(key.group_id)
    if not isinstance(group, ConsumerGroup):
        if value is None:
            return
        group = shard.groups[key.group_id] = ConsumerGroup(key.group_id)
    if value is None:
        group.resolved_regexes.pop(key.regular_expression, None)
    else:
        group.resolved_regexes[key.regular_expression] = ResolvedRegex(
            frozenset(value.topics), value.version, value.timestamp)
    # the newest resolution the records hold now, not of every record ever replayed: a load
    # from a snapshot (or a compacted log) replays the latest record per key only
    group.regex_refresh_ms = max((r.timestamp for r in group.resolved_regexes.values()),
                                 default=0)

