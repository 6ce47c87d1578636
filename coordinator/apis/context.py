"""What a handler gets: the request header, the schema of its version, and the broker."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from coordinator.metadata.broker import Broker
from protocol import RequestHeader, Schema, make


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    schema: Schema
    broker: Broker
    connection_id: str

    @property
    def version(self) -> int:
        return self.header.api_version

    def respond(self, **fields: Any) -> Any:
        """The response of this request's version, from every field the handler knows."""
        return make(self.schema.response_type, **fields)

    def nested(self, struct: str | tuple[str, ...], /, **fields: Any) -> Any:
        """A nested response struct (e.g. ``MetadataResponseTopic``) of this version. Kafka
        renamed some structs between versions: give every name and the one present is used."""
        module = sys.modules[self.schema.response_type.__module__]
        for name in (struct,) if isinstance(struct, str) else struct:
            cls = getattr(module, name, None)
            if cls is not None:
                return make(cls, **fields)
        raise AttributeError(f"{module.__name__} has none of {struct}")
