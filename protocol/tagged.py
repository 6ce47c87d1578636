"""Unknown tagged fields: a copy of a request body without them, as Kafka skips them.

Kafka's readers keep a tag they do not know as an "unknown tagged field" and go on; kio 0.6.5's
native reader refuses one with a KeyError. When that reader fails, the codec asks
``without_unknown_tags`` for a copy of the body with every unknown tag dropped (the tagged-field
counts, and the sizes of known tagged fields holding a dropped one, rewritten to match), and
reads that copy instead. A body with no unknown tag gives None: its failure was something else.

The walk follows kio's field metadata the way ``guard.py`` does, and only runs after
``check_lengths`` has proved every length fits the frame, so it allocates nothing a declared
length asks for. It is not on the path of a well-formed request.
"""

from __future__ import annotations

import struct
from dataclasses import Field, fields
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

from .errors import MalformedFrame
from .guard import FIXED_WIDTHS, kafka_type
from .header import write_uvarint

__all__ = ["without_unknown_tags"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def without_unknown_tags(request_type: type, frame: bytes | memoryview,
                         offset: int) -> bytes | None:
    """``frame`` with the body at ``offset`` copied without its unknown tagged fields, or None
    when it has none. Raises ``MalformedFrame`` when the body does not walk."""
    copier = _Copier(frame)
    out = bytearray()
    try:
        end = copier.struct(request_type, offset, out)
    except (IndexError, struct.error):
        raise MalformedFrame(f"{request_type.__name__} runs past the end of the frame") from None
    except RecursionError:
        raise MalformedFrame(f"{request_type.__name__} nests too deeply") from None
    if not copier.dropped:
        return None
    return bytes(frame[:offset]) + bytes(out) + bytes(frame[end:])


class _Copier:
    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = buf
        self.dropped = 0
        """Unknown tagged fields left out so far."""

    def uvarint(self, pos: int) -> tuple[int, int]:
        value = shift = 0
        for _ in range(5):
            byte = self.buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, pos
            shift += 7
        raise MalformedFrame("varint is longer than 5 bytes")

    def copy(self, pos: int, size: int, out: bytearray) -> int:
        if size < 0 or pos + size > len(self.buf):
            raise IndexError(pos + size)
        out += self.buf[pos : pos + size]
        return pos + size

    def struct(self, cls: type, pos: int, out: bytearray) -> int:
        tagged: dict[int, Field[Any]] = {}
        for field in fields(cls):
            tag = get_field_tag(field)
            if tag is None:
                pos = self.field(field, bool(cls.__flexible__), pos, out)  # type: ignore[attr-defined]
            else:
                tagged[int(tag)] = field
        if cls.__flexible__:  # type: ignore[attr-defined]
            pos = self.tagged_fields(tagged, pos, out)
        return pos

    def tagged_fields(self, known: dict[int, Field[Any]], pos: int, out: bytearray) -> int:
        count, pos = self.uvarint(pos)
        kept = bytearray()
        kept_count = 0
        for _ in range(count):
            tag, pos = self.uvarint(pos)
            size, pos = self.uvarint(pos)
            field = known.get(tag)
            if field is None:  # Kafka keeps it as an unknown tagged field: skipped here
                if pos + size > len(self.buf):
                    raise IndexError(pos + size)
                pos += size
                self.dropped += 1
                continue
            value = bytearray()
            end = self.field(field, True, pos, value)
            if end != pos + size:
                raise MalformedFrame(f"tagged field {field.name} (tag {tag}) does not take the "
                                     "size it declares")
            pos = end
            write_uvarint(kept, tag)
            write_uvarint(kept, len(value))
            kept += value
            kept_count += 1
        write_uvarint(out, kept_count)
        out += kept
        return pos

    def field(self, field: Field[Any], flexible: bool, pos: int, out: bytearray) -> int:
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            return self.primitive(kafka_type(field), flexible, pos, out)
        if isinstance(kind, EntityField):
            if is_optional(field):  # KIP-893: an int8 marker, -1 for null
                marker = self.buf[pos]
                pos = self.copy(pos, 1, out)
                return pos if marker == 0xFF else self.struct(kind.type_, pos, out)
            return self.struct(kind.type_, pos, out)
        if isinstance(kind, PrimitiveTupleField | EntityTupleField):
            if flexible:  # compact: uvarint count + 1, 0 for null
                start = pos
                count, pos = self.uvarint(pos)
                out += self.buf[start:pos]
                count -= 1
            else:
                (count,) = _INT32.unpack_from(self.buf, pos)
                pos = self.copy(pos, 4, out)
            for _ in range(max(count, 0)):
                if isinstance(kind, EntityTupleField):
                    pos = self.struct(kind.type_, pos, out)
                else:
                    pos = self.primitive(kafka_type(field), flexible, pos, out)
            return pos
        raise MalformedFrame(f"cannot walk {field.name}")  # pragma: no cover

    def primitive(self, kafka_type: str, flexible: bool, pos: int, out: bytearray) -> int:
        width = FIXED_WIDTHS.get(kafka_type)
        if width is not None:
            return self.copy(pos, width, out)
        if flexible:  # compact: uvarint length + 1, 0 for null
            start = pos
            length, pos = self.uvarint(pos)
            out += self.buf[start:pos]
            return self.copy(pos, max(length - 1, 0), out)
        if kafka_type == "string":  # int16 length, -1 for null
            (length,) = _INT16.unpack_from(self.buf, pos)
            pos = self.copy(pos, 2, out)
        else:  # bytes, records: int32 length, -1 for null
            (length,) = _INT32.unpack_from(self.buf, pos)
            pos = self.copy(pos, 4, out)
        return self.copy(pos, max(length, 0), out)
