"""A consumer group's subscription: the topics its members subscribe to (by name and through
their regexes' resolutions), its subscription metadata, and the next group epoch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from coordinator.groups.modern import subscription as modern_subscription

from . import regex as consumer_regex
from .env import ConsumerGroupEnv
from .model import ConsumerGroup, ConsumerGroupMember, SubscribedTopic


def subscription_metadata(names: Iterable[str], env: ConsumerGroupEnv,
                          current: Mapping[str, SubscribedTopic] | None = None
                          ) -> Mapping[str, SubscribedTopic]:
    """The subscribed topics that exist (``modern.subscription``)."""
    return modern_subscription.subscription_metadata(names, env.topics, current)


def subscription_after(group: ConsumerGroup, removed: Sequence[ConsumerGroupMember],
                       added: Sequence[ConsumerGroupMember], env: ConsumerGroupEnv,
                       resolution: consumer_regex.Resolved | None = None
                       ) -> Mapping[str, SubscribedTopic]:
    """The group's subscription metadata once ``removed`` left and ``added`` joined. When no
    regex is involved and every topic of a leaving member keeps a subscriber and every topic
    of a joining one has one already, the subscribed names do not change and neither does the
    metadata (topic changes reach it through the topic listener): a member of a large group
    joining or leaving then costs its own topics, not a pass over the group's."""
    if not group.subscribed_regex_counts and not any(
            m.subscribed_topic_regex for m in (*removed, *added)):
        counts = group.subscribed_topic_counts
        if all((counts.get(name, 0) > 0) == (counts.get(name, 0) + change > 0)
               for name, change in _subscriber_changes(removed, added).items()):
            return group.subscription_metadata
    return subscription_metadata(names_after(group, removed, added, resolution), env,
                                 group.subscription_metadata)


def _subscriber_changes(removed: Iterable[ConsumerGroupMember],
                        added: Iterable[ConsumerGroupMember]) -> Counter[str]:
    """How many subscribers each topic gains (or loses) when ``removed`` leave and ``added``
    join."""
    delta: Counter[str] = Counter()
    for member in removed:
        delta.subtract(member.subscribed_topic_names)
    for member in added:
        delta.update(member.subscribed_topic_names)
    return delta


def names_after(group: ConsumerGroup, removed: Iterable[ConsumerGroupMember],
                 added: Iterable[ConsumerGroupMember],
                 resolution: consumer_regex.Resolved | None = None) -> list[str]:
    """The topic names the group subscribes to (by name or through a regex's ``resolution``,
    the group's by default) once ``removed`` left and ``added`` joined. Only the members'
    own topics are counted again, not the group's whole table."""
    removed, added = list(removed), list(added)
    counts = group.subscribed_topic_counts
    names = set(counts)
    for name, change in _subscriber_changes(removed, added).items():
        if counts.get(name, 0) + change > 0:
            names.add(name)
        else:
            names.discard(name)
    if resolution is None:
        resolution = consumer_regex.resolved_topics(group)
    for regex in consumer_regex.regex_counts_after(group, removed, added):
        names |= resolution.get(regex, frozenset())
    return sorted(names)


