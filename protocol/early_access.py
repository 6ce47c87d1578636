"""Kafka 4.0's early-access v0 of the share APIs (KIP-932), which kio no longer generates.

Kafka 4.1 made v1 the first stable version and dropped v0 from its schemas, but 4.0's
KafkaShareConsumer speaks only v0. v0 of ShareGroupHeartbeat, ShareGroupDescribe and
ShareAcknowledge has exactly v1's fields; v0 of ShareFetch differs in three fields (Kafka's
``ShareFetchRequest.json``: ``PartitionMaxBytes`` is ``"versions": "0"``, ``MaxRecords`` and
``BatchSize`` are ``"1+"``; the 4.0 ``ShareFetchResponse`` has no ``AcquisitionLockTimeoutMs``).
So each v0 class is derived from kio's generated v1 class: same fields (nested types
re-pointed at the derived classes), version 0, and those three fields dropped or added.

The derived classes live in modules of their own (``protocol.early_access.<api>.<kind>``,
registered in ``sys.modules``) so that lookups by module, as handlers do for nested structs,
find them.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import operator
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from kio.static.constants import EntityType
from kio.static.primitive import i16, i32

from .apikeys import ApiKey

FieldSpec = tuple[str, str, Any, dict[str, Any]]
"""(name of the field it follows, name, type, dataclasses.field keyword arguments)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """How a v0 class differs from its v1 class."""

    drop: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    add: Mapping[str, Sequence[FieldSpec]] = dataclasses.field(default_factory=dict)


_SAME = Change()

_SHARE_FETCH_REQUEST = Change(
    drop={"ShareFetchRequest": frozenset({"max_records", "batch_size"})},
    add={"FetchPartition": (("partition_index", "partition_max_bytes", i32,
                             {"metadata": {"kafka_type": "int32"}}),)})
_SHARE_FETCH_RESPONSE = Change(
    drop={"ShareFetchResponse": frozenset({"acquisition_lock_timeout"})})

V0: dict[int, tuple[str, Change, Change]] = {
    ApiKey.SHARE_GROUP_HEARTBEAT: ("share_group_heartbeat", _SAME, _SAME),
    ApiKey.SHARE_GROUP_DESCRIBE: ("share_group_describe", _SAME, _SAME),
    ApiKey.SHARE_FETCH: ("share_fetch", _SHARE_FETCH_REQUEST, _SHARE_FETCH_RESPONSE),
    ApiKey.SHARE_ACKNOWLEDGE: ("share_acknowledge", _SAME, _SAME),
}
"""api key -> (kio's module name, request change, response change): the v0 we derive."""


def _retyped(annotation: Any, renamed: Mapping[type, type]) -> Any:
    """``annotation`` with the v1 classes in it replaced by their v0 counterparts."""
    if isinstance(annotation, type) and annotation in renamed:
        return renamed[annotation]
    origin = typing.get_origin(annotation)
    if origin is tuple:
        args = typing.get_args(annotation)
        return tuple[(_retyped(args[0], renamed), *args[1:])]  # type: ignore[misc]
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, (_retyped(a, renamed)
                                               for a in typing.get_args(annotation)))
    return annotation


def _field_args(f: dataclasses.Field[Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"metadata": dict(f.metadata)}
    if f.default is not dataclasses.MISSING:
        args["default"] = f.default
    if f.default_factory is not dataclasses.MISSING:
        args["default_factory"] = f.default_factory
    return args


def derive(source: types.ModuleType, name: str, change: Change, version: int = 0,
           extra: Sequence[type] = ()) -> types.ModuleType:
    """A module ``name`` (registered in ``sys.modules``) with ``source``'s classes changed by
    ``change`` and given ``version``; ``extra`` are nested classes of its own (made for this
    module: their ``__module__`` is ``name``) that the added fields may use."""
    module = types.ModuleType(name, f"v{version} of {source.__name__}, derived")
    for cls in extra:
        setattr(module, cls.__name__, cls)
    renamed: dict[type, type] = {}
    # kio defines nested classes before the classes that hold them: derive in that order
    for cls in vars(source).values():
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)
                and cls.__module__ == source.__name__):
            continue
        dropped = change.drop.get(cls.__name__, frozenset())
        spec: list[tuple[str, Any, Any]] = []
        for f in dataclasses.fields(cls):
            if f.name not in dropped:
                spec.append((f.name, _retyped(f.type, renamed),
                             dataclasses.field(**_field_args(f))))
            for after, added, kind, args in change.add.get(cls.__name__, ()):
                if after == f.name:
                    spec.append((added, kind, dataclasses.field(**args)))
        namespace = {key: getattr(cls, key) for key in
                     ("__type__", "__flexible__", "__api_key__", "__header_schema__")}
        namespace["__version__"] = i16(version)
        namespace["__module__"] = name
        derived = dataclasses.make_dataclass(cls.__name__, spec, namespace=namespace,
                                             frozen=True, slots=True, kw_only=True)
        renamed[cls] = derived
        setattr(module, cls.__name__, derived)
    sys.modules[name] = module
    return module


@functools.cache
def classes(api_key: int) -> tuple[type, type] | None:
    """The (request, response) classes of v0 of ``api_key``, or None if we derive none."""
    found = V0.get(api_key)
    if found is None:
        return None
    api, request_change, response_change = found
    out = []
    for kind, change in (("request", request_change), ("response", response_change)):
        source = importlib.import_module(f"kio.schema.{api}.v1.{kind}")
        module = derive(source, f"{__name__}.{api}.{kind}", change)
        entity = EntityType.request if kind == "request" else EntityType.response
        out.append(next(c for c in vars(module).values()
                        if isinstance(c, type) and getattr(c, "__type__", None) is entity))
    return out[0], out[1]
