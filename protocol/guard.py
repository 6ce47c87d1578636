"""A cheap walk over a request body that proves every declared length fits in the frame.

kio's native reader reserves memory for an array's declared element count before it reads a
single element, so a 17-byte frame declaring 2**32 - 2 elements makes it allocate tens of
gigabytes, and the allocation failure aborts the whole process. ``check_lengths`` runs first:
it walks the body the way kio will read it (kio's field metadata: ``kafka_type``, ``tag``,
nullability, ``__flexible__``), reading only lengths and advancing a position, and raises
``MalformedFrame`` as soon as a length cannot fit in what is left of the frame.

One walker is compiled per request class: Python source generated once and cached, with runs
of fixed-width fields collapsed into one position increment, arrays of fixed-width items
checked as ``count * width`` without a loop, and nested structs inlined.

Checks, all against the bytes left in the frame at that point:

* array element counts: ``count * smallest possible element`` must fit (an element of a
  flexible struct takes at least one byte, its tagged-field count);
* tagged fields: ``count * 2`` must fit (tag and size take a byte each), every size must fit,
  and a known tag's field must take exactly the size it declares;
* string and bytes lengths: the position moves past them and any read after that, and the
  final position, are bounds-checked (nothing is allocated on the way, so the check can wait);
* varints longer than 5 bytes, negative lengths other than -1 (null) are refused, as kio does;
  so is null for an array that is not nullable (kio would read None, Kafka refuses it).

Unknown tags are skipped by their size, as Kafka's protocol says (kio 0.6.5 itself refuses them
with a KeyError: the codec then reads a copy without them, ``tagged.py``).
"""

from __future__ import annotations

import struct
from dataclasses import Field, fields
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.static.protocol import Entity

from .errors import MalformedFrame

__all__ = ["FIXED_WIDTHS", "body_end", "check_lengths", "kafka_type", "walker_source"]

# Widths of the fixed-width kafka types, as kio's writers and readers use them.
_FIXED = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_VARIABLE = frozenset({"string", "bytes", "records"})
FIXED_WIDTHS = _FIXED
"""Bytes each fixed-width kafka type takes on the wire."""

Walker = Any  # (buf, pos, end) -> pos


def _uvarint_tail(buf: Any, pos: int, value: int) -> tuple[int, int]:
    """The rest of an unsigned varint whose first byte (``value``, high bit set) is read."""
    value &= 0x7F
    shift = 7
    for _ in range(4):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise MalformedFrame("varint is too long, the high bit of its 5th byte is set")


def _too_long(what: str, declared: int, remaining: int) -> MalformedFrame:
    return MalformedFrame(f"{what} declares {declared}, only {max(remaining, 0)} bytes remain")


def _bad(what: str) -> MalformedFrame:
    return MalformedFrame(what)


def _nullable_array(field: Field[Any]) -> bool:
    """Whether an array field may be null (``tuple[...] | None``; ``is_optional`` answers for
    its elements)."""
    return get_origin(field.type) in (UnionType, Union) and NoneType in get_args(field.type)


def kafka_type(field: Field[Any]) -> str:
    """A field's Kafka type, as kio's metadata names it ("?" when it has none)."""
    value = field.metadata.get("kafka_type")
    return value if isinstance(value, str) else "?"


def _fixed_struct_size(cls: type[Entity], path: frozenset[type] = frozenset()) -> int | None:
    """Bytes every instance of ``cls`` takes on the wire, or None when that varies."""
    if cls.__flexible__ or cls in path:
        return None
    total = 0
    for field in fields(cls):
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            width = _FIXED.get(kafka_type(field))
            if width is None:
                return None
            total += width
        elif isinstance(kind, EntityField) and not is_optional(field):
            size = _fixed_struct_size(kind.type_, path | {cls})
            if size is None:
                return None
            total += size
        else:
            return None
    return total


def _min_struct_size(cls: type[Entity], path: frozenset[type] = frozenset()) -> int:
    """The fewest bytes an instance of ``cls`` can take on the wire."""
    flexible = bool(cls.__flexible__)
    total = 1 if flexible else 0  # the tagged-field count
    if cls in path:
        return total
    for field in fields(cls):
        if get_field_tag(field) is not None:
            continue
        kind = classify_field(field)
        if isinstance(kind, PrimitiveTupleField | EntityTupleField):
            total += 1 if flexible else 4
        elif isinstance(kind, EntityField):
            total += 1 if is_optional(field) else _min_struct_size(kind.type_, path | {cls})
        else:
            total += _min_primitive_size(kafka_type(field), flexible)
    return total


def _min_primitive_size(kafka_type: str, flexible: bool) -> int:
    if kafka_type in _FIXED:
        return _FIXED[kafka_type]
    if flexible:
        return 1
    return 2 if kafka_type == "string" else 4


class _Lazy:
    """A walker for a struct nested in itself, compiled on first use."""

    __slots__ = ("cls", "fn")

    def __init__(self, cls: type[Entity]) -> None:
        self.cls = cls
        self.fn: Walker = None

    def __call__(self, buf: Any, pos: int, end: int) -> int:
        if self.fn is None:
            self.fn = _compile(self.cls)
        return self.fn(buf, pos, end)


class _Gen:
    def __init__(self, root: type) -> None:
        self.root = root
        self.lines: list[str] = []
        self.pending = 0  # fixed-width bytes not yet added to pos
        self.counter = 0
        self.namespace: dict[str, Any] = {
            "_uv": _uvarint_tail,
            "_i32": struct.Struct(">i").unpack_from,
            "_too_long": _too_long,
            "_bad": _bad,
        }

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def flush(self, indent: int) -> None:
        if self.pending:
            self.emit(indent, f"pos += {self.pending}")
            self.pending = 0

    def advance(self, indent: int, width: int) -> None:
        """Move pos past the pending fixed-width bytes and ``width`` more, just read."""
        self.emit(indent, f"pos += {self.pending + width}")
        self.pending = 0

    def pos_plus(self, extra: int) -> str:
        """The expression for pos, past the pending fixed-width bytes and ``extra`` more."""
        skip = self.pending + extra
        return f"pos + {skip}" if skip else "pos"

    def at(self) -> str:
        """The expression for the next byte, with pending fixed-width bytes skipped."""
        return f"buf[{self.pos_plus(0)}]"

    def uvarint(self, indent: int, var: str) -> None:
        # The pending fixed-width bytes are folded into the read and the one increment.
        self.emit(indent, f"{var} = {self.at()}")
        self.advance(indent, 1)
        self.emit(indent, f"if {var} > 127:")
        self.emit(indent + 1, f"{var}, pos = _uv(buf, pos, {var})")

    # -- structs --------------------------------------------------------------------------

    def struct(self, cls: type[Entity], indent: int, path: tuple[type, ...]) -> None:
        """Code advancing pos over one (non-null) instance of ``cls``."""
        if cls in path:
            ref = self.name("W")
            self.namespace[ref] = _Lazy(cls)
            self.flush(indent)
            self.emit(indent, f"pos = {ref}(buf, pos, end)")
            return
        path = (*path, cls)
        flexible = bool(cls.__flexible__)
        tagged: list[tuple[int, Field[Any]]] = []
        for field in fields(cls):
            tag = get_field_tag(field)
            if tag is not None:
                tagged.append((int(tag), field))
                continue
            self.field(cls, field, flexible, False, indent, path)
        if flexible:
            self.tagged_fields(cls, sorted(tagged, key=lambda item: item[0]), indent, path)

    def tagged_fields(
        self,
        cls: type[Entity],
        tagged: list[tuple[int, Field[Any]]],
        indent: int,
        path: tuple[type, ...],
    ) -> None:
        count, tag, size, start = (self.name(p) for p in ("t", "g", "z", "s"))
        where = f"{cls.__qualname__} tagged fields"
        # Nearly always there are none: one byte read and one increment in that case.
        skip = self.pending + 1
        self.emit(indent, f"if {self.at()}:")
        body = indent + 1
        self.uvarint(body, count)
        self.emit(body, f"if {count} * 2 > end - pos:")
        self.emit(body + 1, f"raise _too_long({where!r}, {count}, end - pos)")
        self.emit(body, f"for _ in range({count}):")
        loop = body + 1
        self.uvarint(loop, tag)
        self.uvarint(loop, size)
        self.emit(loop, f"if {size} > end - pos:")
        self.emit(loop + 1, f"raise _too_long({where!r} + ' size', {size}, end - pos)")
        keyword = "if"
        for number, field in tagged:
            self.emit(loop, f"{keyword} {tag} == {number}:")
            keyword = "elif"
            what = f"{cls.__qualname__}.{field.name} (tag {number})"
            width = self.fixed_width(field, flexible=True, tagged=True)
            if width is not None:
                self.emit(loop + 1, f"if {size} != {width}:")
                self.emit(loop + 2, f"raise _bad({what + ' has the wrong size'!r})")
                self.emit(loop + 1, f"pos += {width}")
                continue
            self.emit(loop + 1, f"{start} = pos")
            self.field(cls, field, True, True, loop + 1, path)
            self.flush(loop + 1)
            self.emit(loop + 1, f"if pos - {start} != {size}:")
            self.emit(loop + 2, f"raise _bad({what + ' does not take the size it declares'!r})")
        if tagged:
            self.emit(loop, "else:")
            self.emit(loop + 1, f"pos += {size}")
        else:
            self.emit(loop, f"pos += {size}")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"pos += {skip}")

    def fixed_width(self, field: Field[Any], flexible: bool, tagged: bool) -> int | None:
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            return _FIXED.get(kafka_type(field))
        if isinstance(kind, EntityField) and not is_optional(field):
            return _fixed_struct_size(kind.type_)
        return None

    # -- fields ---------------------------------------------------------------------------

    def field(
        self,
        cls: type[Entity],
        field: Field[Any],
        flexible: bool,
        tagged: bool,
        indent: int,
        path: tuple[type, ...],
    ) -> None:
        what = f"{cls.__qualname__}.{field.name}"
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            self.primitive(kafka_type(field), flexible, indent, what)
        elif isinstance(kind, EntityField):
            if is_optional(field):  # KIP-893: an int8 marker, -1 for null
                marker = self.name("m")
                self.emit(indent, f"{marker} = {self.at()}")
                self.advance(indent, 1)
                self.emit(indent, f"if {marker} != 255:")
                mark = len(self.lines)
                self.struct(kind.type_, indent + 1, path)
                self.flush(indent + 1)
                if len(self.lines) == mark:
                    self.emit(indent + 1, "pass")
            else:
                self.struct(kind.type_, indent, path)
        elif isinstance(kind, PrimitiveTupleField):
            self.array(
                flexible, indent, what, item_type=kafka_type(field), item_cls=None, path=path,
                nullable=_nullable_array(field),
            )
        elif isinstance(kind, EntityTupleField):
            self.array(flexible, indent, what, item_type=None, item_cls=kind.type_, path=path,
                       nullable=_nullable_array(field))
        else:  # pragma: no cover - classify_field knows no other kind
            self.unsupported(indent, what)

    def unsupported(self, indent: int, what: str) -> None:
        # Without knowing how wide this field is, nothing after it can be located: refuse.
        self.flush(indent)
        self.emit(indent, f"raise _bad({'cannot check the lengths of ' + what!r})")

    def primitive(self, kafka_type: str, flexible: bool, indent: int, what: str) -> None:
        width = _FIXED.get(kafka_type)
        if width is not None:
            self.pending += width
            return
        if kafka_type not in _VARIABLE:
            self.unsupported(indent, f"{what} ({kafka_type})")
            return
        n = self.name("n")
        if flexible:  # compact: uvarint length + 1, 0 for null
            self.uvarint(indent, n)
            self.emit(indent, f"if {n} > 1:")
            self.emit(indent + 1, f"pos += {n} - 1")
        elif kafka_type == "string":  # int16 length, -1 for null
            high, low = self.pos_plus(0), self.pos_plus(1)
            self.emit(indent, f"{n} = buf[{high}] << 8 | buf[{low}]")
            self.advance(indent, 2)
            self.emit(indent, f"if {n} < 32768:")
            self.emit(indent + 1, f"pos += {n}")
            self.emit(indent, f"elif {n} != 65535:")
            self.emit(indent + 1, f"raise _bad({what + ': negative string length'!r})")
        else:  # bytes, records: int32 length, -1 for null
            self.emit(indent, f"{n} = _i32(buf, {self.pos_plus(0)})[0]")
            self.advance(indent, 4)
            self.emit(indent, f"if {n} > 0:")
            self.emit(indent + 1, f"pos += {n}")
            self.emit(indent, f"elif {n} < -1:")
            self.emit(indent + 1, f"raise _bad({what + ': negative bytes length'!r})")

    def array(
        self,
        flexible: bool,
        indent: int,
        what: str,
        item_type: str | None,
        item_cls: type[Entity] | None,
        path: tuple[type, ...],
        nullable: bool = True,
    ) -> None:
        n = self.name("n")
        # Kafka: "non-nullable field ... was serialized as null" (kio would read None)
        null = what + ": null for a non-nullable array"
        if flexible:  # compact: uvarint count + 1, 0 for null
            self.uvarint(indent, n)
            if not nullable:
                self.emit(indent, f"if not {n}:")
                self.emit(indent + 1, f"raise _bad({null!r})")
            self.emit(indent, f"if {n} > 1:")
            self.emit(indent + 1, f"{n} -= 1")
        else:  # int32 count, -1 for null
            self.emit(indent, f"{n} = _i32(buf, {self.pos_plus(0)})[0]")
            self.advance(indent, 4)
            self.emit(indent, f"if {n} > 0:")
        body = indent + 1
        empty = False
        if item_cls is not None:
            width = _fixed_struct_size(item_cls)
            empty = width == 0
            if empty:
                # Items that take no bytes: nothing in the frame bounds their count, so bound
                # it by the bytes left anyway (no request schema has such an array).
                width = None
            least = _min_struct_size(item_cls) or 1
        elif item_type in _FIXED:
            width = least = _FIXED[item_type]
        elif item_type in _VARIABLE:
            width, least = None, _min_primitive_size(item_type, flexible)
        else:
            self.unsupported(body, f"{what} ({item_type})")
            return
        step = width or least
        size = f"{n} * {step}" if step > 1 else n
        self.emit(body, f"if {size} > end - pos:")
        self.emit(body + 1, f"raise _too_long({what + ' array length'!r}, {n}, end - pos)")
        if width is not None:
            self.emit(body, f"pos += {size}")
        elif empty:
            pass  # nothing to walk: the count is bounded, which is all that matters
        else:
            self.emit(body, f"for _ in range({n}):")
            if item_cls is not None:
                self.struct(item_cls, body + 1, path)
            else:
                assert item_type is not None
                self.primitive(item_type, flexible, body + 1, what)
            self.flush(body + 1)
        if not flexible:
            self.emit(indent, f"elif {n} < {-1 if nullable else 0}:")
            self.emit(body, f"raise _bad({what + ': negative array length'!r})")

    def source(self) -> str:
        self.struct(self.root, 1, ())
        self.flush(1)
        head = "def walk(buf, pos, end):"
        return "\n".join([head, *self.lines, "    return pos", ""])


def walker_source(cls: type[Entity]) -> str:
    """The generated walker's source for ``cls`` (for reading and debugging)."""
    return _Gen(cls).source()


def _compile(cls: type[Entity]) -> Walker:
    gen = _Gen(cls)
    source = gen.source()
    code = compile(source, f"<guard {cls.__module__}.{cls.__qualname__}>", "exec")
    exec(code, gen.namespace)
    return gen.namespace["walk"]


_WALKERS: dict[type, Walker] = {}


def check_lengths(request_type: type, frame: bytes | memoryview, offset: int) -> None:
    """Raise ``MalformedFrame`` unless every length in the body at ``offset`` fits the frame.

    ``request_type`` is the kio class the body is read as. Bytes after the body are allowed.
    """
    body_end(request_type, frame, offset)


def body_end(request_type: type, frame: bytes | memoryview, offset: int) -> int:
    """Where the body at ``offset`` ends, as kio will read it; ``check_lengths`` otherwise."""
    walk = _WALKERS.get(request_type)
    if walk is None:
        walk = _WALKERS[request_type] = _compile(request_type)
    if type(frame) is memoryview and frame.format != "B":
        frame = frame.cast("B")
    end = len(frame)
    try:
        pos = walk(frame, offset, end)
    except (IndexError, struct.error):
        raise MalformedFrame(f"{request_type.__name__} runs past the end of the frame") from None
    except RecursionError:
        raise MalformedFrame(f"{request_type.__name__} nests too deeply") from None
    if pos > end:
        raise MalformedFrame(f"{request_type.__name__} runs past the end of the frame")
    return pos
