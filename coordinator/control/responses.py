"""An error answer for any request, built from the response's kio schema.

Kafka puts an error at the highest level the response has an error code: the top level when
there is one (Heartbeat, JoinGroup, ...); otherwise each entity the request named gets it
(OffsetCommit: every partition of every topic; DescribeGroups and OffsetFetch v8+: every group;
FindCoordinator v4+: every key; Produce: every partition). The entities are mirrored from the
request: a response array is paired with the request array of the same name, or with the one
array of the request left over (``topic_data`` -> ``responses``, ``coordinator_keys`` ->
``coordinators``), and the fields that name the entity (``name``, ``partition_index``,
``group_id``, ``key``, ...) are copied from the request's.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any

from protocol import ErrorCode, make

_ERROR_FIELDS = frozenset({"error_code", "error_message"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    names: frozenset[str]
    scalars: dict[str, tuple[str, bool]]
    """Field name -> (kafka type, nullable) of the fields that are not arrays of entities."""
    arrays: dict[str, type | None]
    """Field name -> entity class of its items (None for an array of primitives)."""


@cache
def _shape(cls: type) -> _Shape:
    scalars: dict[str, tuple[str, bool]] = {}
    arrays: dict[str, type | None] = {}
    for f in dataclasses.fields(cls):
        kind = f.type
        args = typing.get_args(kind)
        if typing.get_origin(kind) is tuple or (
                args and any(typing.get_origin(a) is tuple for a in args)):
            inner = next((a for a in args if typing.get_origin(a) is tuple), kind)
            item = typing.get_args(inner)[0] if typing.get_args(inner) else None
            arrays[f.name] = item if isinstance(item, type) and dataclasses.is_dataclass(item) \
                else None
        else:
            scalars[f.name] = (f.metadata.get("kafka_type", ""), type(None) in args)
    return _Shape(frozenset(scalars) | frozenset(arrays), scalars, arrays)


def error_body(response_type: type, request: Any, code: ErrorCode,
               message: str | None = None) -> Any:
    """A response of ``response_type`` answering ``request`` with ``code`` (and ``message``
    where the response has an error message)."""
    return _build(response_type, request, code, message, top=True)


def _build(cls: type, source: Any, code: ErrorCode, message: str | None, *,
           top: bool = False) -> Any:
    shape = _shape(cls)
    values: dict[str, Any] = {} if top else _identity(shape, source)
    if "error_code" in shape.names:
        values["error_code"] = code
        if "error_message" in shape.names:
            values["error_message"] = message
        return make(cls, **values)
    for name, (item_cls, items) in _pairs(shape, source).items():
        values[name] = tuple(_build(item_cls, item, code, message) for item in items)
    return make(cls, **values)


def _pairs(shape: _Shape, source: Any) -> dict[str, tuple[type, tuple[Any, ...]]]:
    """Each entity array of the response with the request items it mirrors."""
    if not _is_entity(source):
        return {}
    source_shape = _shape(_class_of(source))
    wanted = [name for name, item in shape.arrays.items() if item is not None]
    out: dict[str, tuple[type, tuple[Any, ...]]] = {}
    left = [name for name in source_shape.arrays]
    for name in wanted:
        if name in source_shape.arrays:
            out[name] = (typing.cast(type, shape.arrays[name]), getattr(source, name) or ())
            left.remove(name)
    rest = [name for name in wanted if name not in out]
    if rest and len(left) == 1:
        out[rest[0]] = (typing.cast(type, shape.arrays[rest[0]]), getattr(source, left[0]) or ())
    return out


def _identity(shape: _Shape, source: Any) -> dict[str, Any]:
    """The fields naming the entity, from the request's entity (same name, same type) or from
    the request's primitive item (the first field of its type: ``group_id``, ``key``, ...)."""
    if _is_entity(source):
        source_shape = _shape(_class_of(source))
        out = {}
        for name, (kind, nullable) in shape.scalars.items():
            if name in _ERROR_FIELDS or name not in source_shape.scalars:
                continue
            if source_shape.scalars[name][0] != kind:
                continue
            value = getattr(source, name)
            if value is not None or nullable:
                out[name] = value
        return out
    kind = _primitive_kind(source)
    for name, (field_kind, _) in shape.scalars.items():
        if name not in _ERROR_FIELDS and field_kind == kind:
            return {name: source}
    return {}


def _is_entity(value: Any) -> bool:
    return not isinstance(value, type) and dataclasses.is_dataclass(value)


def _primitive_kind(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int32"
    return type(value).__name__


def _class_of(value: Any) -> Any:
    return type(value)  # Any: classes hash, though mypy does not know it (mypy#11470)
