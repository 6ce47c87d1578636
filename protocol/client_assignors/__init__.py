"""The KIP-848 draft's client-side assignor protocol, which no Kafka release has (seed 003).

* ConsumerGroupHeartbeat carries the member's client-side assignors (request) and the "compute
  the assignment" signal (response) as tagged fields numbered far outside Kafka's own (which
  start at 0), so a real client neither sends nor reads them and a Kafka broker would skip
  them: ``CLIENT_ASSIGNORS_TAG`` and ``SHOULD_COMPUTE_ASSIGNMENT_TAG``. Versions 0 and 1 are
  kio's classes derived with that one field more (``early_access.derive``); with the field
  absent, the bytes are Kafka's.
* ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment get API keys Kafka does not
  use (``PREPARE_ASSIGNMENT_KEY``, ``INSTALL_ASSIGNMENT_KEY``), with the draft's schemas
  (``consumer_group_prepare_assignment``, ``consumer_group_install_assignment``).
"""


import dataclasses
import functools
import importlib
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16

from ..early_access import Change, derive
from . import consumer_group_install_assignment, consumer_group_prepare_assignment

PREPARE_ASSIGNMENT_KEY = int(consumer_group_prepare_assignment.API_KEY)
"""ConsumerGroupPrepareAssignment's API key: 8480 (Kafka's keys end below 100)."""
INSTALL_ASSIGNMENT_KEY = int(consumer_group_install_assignment.API_KEY)
"""ConsumerGroupInstallAssignment's API key: 8481."""
CLIENT_ASSIGNORS_TAG = 8480
"""ConsumerGroupHeartbeatRequest's tag of ``ClientAssignors``."""
SHOULD_COMPUTE_ASSIGNMENT_TAG = 8480
"""ConsumerGroupHeartbeatResponse's tag of ``ShouldComputeAssignment``."""

INVALID_ASSIGNMENT = 8480
"""The draft's INVALID_ASSIGNMENT error code (ConsumerGroupInstallAssignment): Kafka has no
such error, so it takes a code far above Kafka's (which end below 200)."""

HEARTBEAT_KEY = 68
_HEARTBEAT_VERSIONS = (0, 1)
_DRAFT = {PREPARE_ASSIGNMENT_KEY: consumer_group_prepare_assignment,
          INSTALL_ASSIGNMENT_KEY: consumer_group_install_assignment}


def draft_versions(api_key: int) -> range | None:
    """The versions of a draft API (``range(0, 1)``), or None for any other key."""
    return range(0, 1) if api_key in _DRAFT else None


def _assignor_class(module_name: str) -> type:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Assignor:
        __type__: ClassVar = EntityType.nested
        __version__: ClassVar[i16] = i16(0)
        __flexible__: ClassVar[bool] = True
        __api_key__: ClassVar[i16] = i16(HEARTBEAT_KEY)
        __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
        name: str = dataclasses.field(metadata={"kafka_type": "string"})
        """The unique name of the assignor."""
        minimum_version: i16 = dataclasses.field(metadata={"kafka_type": "int16"})
        """The minimum version of the metadata schema supported by this assignor."""
        maximum_version: i16 = dataclasses.field(metadata={"kafka_type": "int16"})
        """The maximum version of the metadata schema supported by this assignor."""
        reason: i8 = dataclasses.field(metadata={"kafka_type": "int8"})
        """The reason why the metadata was updated."""
        version: i16 = dataclasses.field(metadata={"kafka_type": "int16"})
        """The version used to encode the metadata."""
        metadata: bytes = dataclasses.field(metadata={"kafka_type": "bytes"})
        """The metadata provided by the consumer for this assignor."""

    Assignor.__module__ = module_name
    Assignor.__qualname__ = "Assignor"
    return Assignor


def _heartbeat(version: int) -> tuple[type, type]:
    out = []
    for kind in ("request", "response"):
        source = importlib.import_module(f"kio.schema.consumer_group_heartbeat.v{version}.{kind}")
        name = f"{__name__}.consumer_group_heartbeat.v{version}.{kind}"
        if kind == "request":
            assignor = _assignor_class(name)
            change = Change(add={"ConsumerGroupHeartbeatRequest": (
                ("topic_partitions", "client_assignors", tuple[assignor, ...] | None,  # type: ignore[valid-type]
                 {"metadata": {"tag": CLIENT_ASSIGNORS_TAG}, "default": None}),)})
            extra: tuple[type, ...] = (assignor,)
        else:
            change = Change(add={"ConsumerGroupHeartbeatResponse": (
                ("assignment", "should_compute_assignment", bool,
                 {"metadata": {"kafka_type": "bool", "tag": SHOULD_COMPUTE_ASSIGNMENT_TAG},
                  "default": False}),)})
            extra = ()
        module = derive(source, name, change, version, extra)
        entity = EntityType.request if kind == "request" else EntityType.response
        out.append(next(c for c in vars(module).values()
                        if isinstance(c, type) and getattr(c, "__type__", None) is entity))
    return out[0], out[1]


@functools.cache
def classes(api_key: int, version: int) -> tuple[type, type] | None:
    """The (request, response) classes of a draft API, or of ConsumerGroupHeartbeat with the
    draft's tagged fields; None for any other key and version."""
    if api_key == HEARTBEAT_KEY and version in _HEARTBEAT_VERSIONS:
        return _heartbeat(version)
    module = _DRAFT.get(api_key)
    if module is None or version != 0:
        return None
    name = module.__name__.rsplit(".", 1)[1]
    title = "".join(part.capitalize() for part in name.split("_"))
    return getattr(module, f"{title}Request"), getattr(module, f"{title}Response")
