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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import re2

from coordinator.metadata.topic_names import INTERNAL_TOPICS
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError
from coordinator.runtime.result import Record
from protocol import ErrorCode
from storage.records import ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue

from . import records
from .model import interned_topic_names
from .regex_job import compile_regex as _compile
from .regex_job import resolve_all as resolve_all  # the task (bench, tests)

Resolved = Mapping[str, frozenset[str]]
"""Regex -> the topic names it resolves to."""


log = get_logger("coordinator.groups.consumer.regex")


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """A ConsumerGroupRegularExpression record's value."""

    topics: frozenset[str]
    version: int
    timestamp: int


@functools.lru_cache(maxsize=1024)
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
    out: list[Record] = [records.regex_tombstone(group.group_id, regex)
                         for regex in sorted(current) if regex not in wanted]
    resolution = {regex: topics_ for regex, topics_ in current.items() if regex in wanted}
    todo = sorted(wanted if everything else wanted - set(current))
    if todo:
        names = topic_names(topics)
        version = int(getattr(topics, "version", 0))
        for regex in todo:
            found = resolve(regex, names)
            if rewrite or regex not in current or current[regex] != found:
                out.append(records.regex_record(group.group_id, regex, found, version, now_ms))
            resolution[regex] = found
    return out, resolution


def known(group: Any, regexes: Iterable[str]) -> tuple[list[Record], dict[str, frozenset[str]]]:
    """(tombstones of regexes no member uses any more, the known resolution of ``regexes``):
    what a heartbeat writes and sees when resolutions run in the background; a regex not
    resolved yet is absent (it subscribes to nothing)."""
    wanted = set(regexes)
    current = resolved_topics(group)
    out: list[Record] = [records.regex_tombstone(group.group_id, regex)
                         for regex in sorted(current) if regex not in wanted]
    return out, {regex: topics_ for regex, topics_ in current.items() if regex in wanted}


# ------------------------------------------------------------------------------ background
def offloads(env: Any) -> bool:
    """Whether regexes are resolved in the background (an offloader that runs tasks)."""
    return env.offloader is not None and hasattr(env.offloader, "submit_task")


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

