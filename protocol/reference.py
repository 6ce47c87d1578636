"""kafka-python 3's protocol classes by (api key, is request): the independent implementation
our codec is cross-checked against in tests and compared with in ``bench codec``."""

from __future__ import annotations

from functools import cache
from typing import TypeVar

import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer  # noqa: F401  (imports register the message classes)
from kafka.protocol.api_message import ApiMessage

T = TypeVar("T")


def _subclasses(cls: type[T]) -> list[type[T]]:
    found: list[type[T]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


@cache
def kafka_python_classes() -> dict[tuple[int, bool], type[ApiMessage]]:
    classes: dict[tuple[int, bool], type[ApiMessage]] = {}
    for cls in _subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            classes[(cls.API_KEY, cls.is_request())] = cls
    return classes


def kafka_python_versions(api_key: int, request: bool) -> range:
    cls = kafka_python_classes().get((api_key, request))
    if cls is None:
        return range(0)
    low, high = cls.valid_versions
    return range(low, high + 1)
