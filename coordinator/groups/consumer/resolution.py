"""Regex resolution in the background (Kafka's ``refreshRegularExpressions``): the effect that
sends a consumer group's regexes to the executor, and the write event that installs what it
found (``regex`` resolves them; this module applies a resolution to the group)."""

from __future__ import annotations

import itertools
from typing import Any

from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import records
from .model import ConsumerGroup
from .offload import bump_epoch
from .regex import resolve_all, resolved_topics, topic_names
from .subscription import names_after, subscription_metadata

log = get_logger("coordinator.groups.consumer.regex")


_resolution_ids = itertools.count(1)


def start_resolution(shard: Any, env: Any, group_id: str, now_ms: int, *,
                     stale: bool = False) -> Any:
    """The effect that sends the group's regexes (as they are once the event's records are
    applied) to the background executor; with one in flight, none starts, and ``stale``
    (topics changed) marks that another must follow it."""
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
        out.append(records.regex_record(gid, regex, topics, version, started_ms))
    metadata = subscription_metadata(
        names_after(group, [], [], resolution), env, group.subscription_metadata)
    if metadata != group.subscription_metadata:
        out.append(records.subscription_metadata(gid, metadata.values()))
        changed = True
    if changed:
        out.append(bump_epoch(shard, env, group, now_ms, "regular expressions resolved"))
    again = group.regex_rerun or any(regex not in found for regex in wanted)
    return Result(out, effect=start_resolution(shard, env, gid, now_ms) if again else None)
