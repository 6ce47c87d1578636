"""The loop the per-partition topic APIs share (DeleteRecords, DescribeProducers, ListOffsets):
each requested topic is authorized once for the API's operation, and each requested partition
gets the API's answer, or TOPIC_AUTHORIZATION_FAILED / UNKNOWN_TOPIC_OR_PARTITION in the API's
own partition struct, in the order asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from coordinator.metadata.image import TopicImage
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

T = TypeVar("T")  # a requested topic
P = TypeVar("P")  # a requested partition


def answer_partitions(ctx: RequestContext, operation: AclOperation, topics: Sequence[T],
                      name: Callable[[T], str], partitions: Callable[[T], Iterable[P]],
                      answer: Callable[[TopicImage, P], Any],
                      refuse: Callable[[P, ErrorCode], Any],
                      topic_answer: Callable[[str, tuple[Any, ...]], Any]) -> tuple[Any, ...]:
    """``topic_answer(name, partition answers)`` for each of ``topics``: ``answer(topic, p)``
    for a partition of an existing topic the principal may do ``operation`` on, else
    ``refuse(p, error)``."""
    allowed = ctx.authorized(operation, ResourceType.TOPIC, (name(t) for t in topics))
    out = []
    for wanted in topics:
        topic_name = name(wanted)
        topic = ctx.broker.image.topic(topic_name)
        answers = []
        for p in partitions(wanted):
            if topic_name not in allowed:
                answers.append(refuse(p, ErrorCode.topic_authorization_failed))
            elif topic is None:
                answers.append(refuse(p, ErrorCode.unknown_topic_or_partition))
            else:
                answers.append(answer(topic, p))
        out.append(topic_answer(topic_name, tuple(answers)))
    return tuple(out)
