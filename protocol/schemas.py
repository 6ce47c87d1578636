"""Where the message classes come from: kio, generated from Kafka's own message schemas (and,
for the v0 share APIs kio no longer has, ``early_access``, derived from kio's v1; for the KIP-848
draft's client-side assignor protocol, ``client_assignors``).

One cached ``Schema`` per (api key, version) holds the request and response classes and their
compiled readers and writers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pkgutil import resolve_name
from typing import IO, Any

from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader
from kio.static.constants import EntityType

from . import client_assignors, early_access
from .apikeys import ApiKey
from .errors import UnknownApi, UnknownSchema
from .fastwrite import BufferWriter, compile_writer, stream_writer

Reader = Callable[[bytes | memoryview, int], tuple[Any, int]]
Writer = Callable[[IO[bytes], Any], None]


@dataclass(frozen=True, slots=True)
class Schema:
    api_key: int
    version: int
    flexible: bool
    request_type: type
    response_type: type
    read_request: Reader
    write_request: Writer
    read_response: Reader
    write_response: Writer
    append_request: BufferWriter
    append_response: BufferWriter

    def request_writer(self, body: Any) -> BufferWriter:
        """The writer of ``body``: this schema's, or (a body of kio's own class where the
        schema's class is derived from it, ``client_assignors``) its class's."""
        cls = type(body)
        if cls is self.request_type:
            return self.append_request
        return compile_writer(cls)  # type: ignore[arg-type]  # classes hash: mypy#11470

    def response_writer(self, body: Any) -> BufferWriter:
        cls = type(body)
        if cls is self.response_type:
            return self.append_response
        return compile_writer(cls)  # type: ignore[arg-type]  # classes hash: mypy#11470

    @property
    def request_header_version(self) -> int:
        return 2 if self.flexible else 1

    @property
    def response_header_version(self) -> int:
        # ApiVersions responses always use header v0, so that a client that sent a version the
        # broker does not know can still read the answer.
        if self.api_key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.flexible else 0


def known_versions(api_key: int) -> range:
    """The contiguous range of versions the codec has schemas for (empty if none)."""
    draft = client_assignors.draft_versions(api_key)
    if draft is not None:
        return draft
    name = api_key_map.get(api_key)
    if name is None:
        return range(0)
    versions = sorted(schema_name_map[name])
    if early_access.classes(api_key) is not None:
        versions.insert(0, 0)
    return range(versions[0], versions[-1] + 1)


@cache
def schema(api_key: int, version: int) -> Schema:
    name = api_key_map.get(api_key)
    draft = client_assignors.draft_versions(api_key)
    if name is None and draft is None:
        raise UnknownApi(f"unknown api key {api_key}")
    if draft is not None and version not in draft:
        raise UnknownSchema(f"no schema for api key {api_key} version {version}")
    # the draft's APIs and heartbeat fields (seed 003), then Kafka 4.0's v0 share APIs
    derived = client_assignors.classes(api_key, version) or (
        early_access.classes(api_key) if version == 0 else None)
    request_type: Any
    response_type: Any
    if derived is not None:
        request_type, response_type = derived
    else:
        try:
            assert name is not None  # a draft API always has derived classes
            paths = schema_name_map[name][version]
        except KeyError:
            raise UnknownSchema(
                f"no schema for api key {api_key} version {version}") from None
        request_type = resolve_name(paths[EntityType.request])
        response_type = resolve_name(paths[EntityType.response])
    return Schema(
        api_key=api_key,
        version=version,
        flexible=bool(request_type.__flexible__),
        request_type=request_type,
        response_type=response_type,
        read_request=entity_reader(request_type),
        write_request=stream_writer(request_type),
        read_response=entity_reader(response_type),
        write_response=stream_writer(response_type),
        append_request=compile_writer(request_type),
        append_response=compile_writer(response_type),
    )
