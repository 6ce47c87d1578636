"""Build a message of any version from one set of field values.

Kafka's message versions add and drop fields; handlers name every field they know and ``make``
keeps those the target class has, filling the required ones they did not name with neutral
values (0, "", empty array, null where nullable). The same mechanism builds error responses.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

from kio.schema.errors import ErrorCode

T = TypeVar("T")

_ZERO_DELTA = datetime.timedelta(0)
_NEUTRAL_BY_KAFKA_TYPE: dict[str, Any] = {
    "bool": False,
    "bytes": b"",
    "records": None,
    "datetime_i64": None,
    "error_code": ErrorCode.none,
    "float64": 0.0,
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "string": "",
    "timedelta_i32": _ZERO_DELTA,
    "timedelta_i64": _ZERO_DELTA,
    "uuid": uuid.UUID(int=0),
}


def _is_nullable(f: Field[Any]) -> bool:
    return type(None) in get_args(f.type)


def _is_array(f: Field[Any]) -> bool:
    return get_origin(f.type) is tuple


@cache
def _plan(cls: type) -> tuple[frozenset[str], tuple[tuple[str, Any], ...]]:
    """Field names of ``cls`` and, for its required fields, a neutral value each."""
    names = []
    required = []
    for f in fields(cls):
        names.append(f.name)
        if f.default is not MISSING or f.default_factory is not MISSING:
            continue
        if _is_array(f):
            neutral: Any = None if _is_nullable(f) else ()
        elif _is_nullable(f):
            neutral = None
        else:
            neutral = _NEUTRAL_BY_KAFKA_TYPE.get(f.metadata.get("kafka_type", ""), None)
        required.append((f.name, neutral))
    return frozenset(names), tuple(required)


def make(cls: type[T], /, **values: Any) -> T:
    """An instance of ``cls`` from the values it has fields for, neutral values for the rest."""
    names, required = _plan(cls)  # type: ignore[arg-type]  # classes hash: mypy#11470
    kwargs = {name: value for name, value in values.items() if name in names}
    for name, neutral in required:
        if name not in kwargs:
            kwargs[name] = neutral
    return cls(**kwargs)


def has_field(cls: type, name: str) -> bool:
    return name in _plan(cls)[0]


def error_response(cls: type[T], code: ErrorCode, message: str | None = None) -> T:
    """A response of ``cls`` carrying ``code`` at the top level (and its message if it has one)."""
    return make(cls, error_code=code, error_message=message)
