"""A compiled encoder for kio message classes: the same bytes as kio's writer, several times faster.

kio decodes in Rust but encodes with generic Python closures, one call per field. For each entity
class, ``compile_writer`` generates (once, cached) the source of a ``write(buf, value)`` function
specialised to that class and ``exec``s it: runs of fixed-width fields are packed by a single
precompiled ``struct.Struct``, strings and arrays are inlined with one-byte fast paths for their
varint lengths, arrays of integers are packed in one call, and nested entities are inlined (a
few levels deep; deeper ones call their own compiled writers). ``buf`` is a ``bytearray`` that
the function appends to.

kio's ``entity_writer`` is the reference semantics (see kio/serial/_serialize.py and writers.py);
tests check byte-for-byte equality over every request and response class kio knows. A class
with a field kind this module does not know gets kio's own writer, wrapped to append to the
``bytearray``, so the output is never wrong, only slower.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import IO, Any, cast

from kio.serial import entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial.errors import OutOfBoundValue
from kio.static.constants import uuid_zero
from kio.static.protocol import Entity

from .header import uvarint as _uvarint_bytes
from .header import write_uvarint as _write_uvarint

__all__ = ["BufferWriter", "compile_writer", "encode", "is_compiled", "stream_writer", "write"]

BufferWriter = Callable[[bytearray, Any], None]

# Arrays of integers up to this length are packed with a precompiled Struct; longer ones build
# their format (struct caches compiled formats internally).
_ARRAY_STRUCTS = 64
# Nested entities this deep or deeper call their own writer instead of being inlined.
_INLINE_DEPTH = 3


class Unsupported(Exception):
    """A field kind the compiler does not handle; the class falls back to kio's writer."""


def _legacy_string_too_long(length: int) -> OutOfBoundValue:
    return OutOfBoundValue(f"String is too long for legacy string format ({length} > 32767)")


def _array_structs(code: str) -> tuple[struct.Struct, ...]:
    return tuple(struct.Struct(f">{n}{code}") for n in range(_ARRAY_STRUCTS))


# Helpers every generated function can see.
_BASE_NAMESPACE: dict[str, Any] = {
    "_uv": _write_uvarint,
    "_pack": struct.pack,
    "_i16": struct.Struct(">h").pack,
    "_i32": struct.Struct(">i").pack,
    "_u2": struct.Struct(">BB").pack,
    "_UZ": uuid_zero.bytes,
    "_too_long": _legacy_string_too_long,
    "isinstance": isinstance,
    "len": len,
    "round": round,
    "str": str,
}

# kafka type -> (struct code, expression template for a value named {v}). ``None`` in the
# template slot means the value is packed as it is (an int, an IntEnum, a float or a bool).
_FIXED: dict[str, tuple[str, str | None]] = {
    "int8": ("b", None),
    "int16": ("h", None),
    "int32": ("i", None),
    "int64": ("q", None),
    "uint8": ("B", None),
    "uint16": ("H", None),
    "uint32": ("I", None),
    "uint64": ("Q", None),
    "float64": ("d", None),
    "bool": ("?", None),
    # ErrorCode is an IntEnum: struct packs its value (kio writes ``error_code.value``).
    "error_code": ("h", None),
    "timedelta_i32": ("i", "round({v}.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round({v}.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round({v}.timestamp() * 1000)"),
}
_INT_ARRAY_CODES = frozenset("bhiqBHIQ")
_STRINGISH = frozenset({"string", "bytes", "records"})


class _Fixed:
    """A fixed-width value: merged with its neighbours into one Struct.pack call."""

    __slots__ = ("code", "expr")

    def __init__(self, code: str, expr: str | None) -> None:
        self.code = code
        self.expr = expr  # None for a pad byte ("x")


class _Code:
    """Statements (already indented relative to the function body)."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines


_Op = _Fixed | _Code


class _Compiler:
    """Generates the source of one entity's writer.

    Nested entities are inlined (their fields read through the parent's expression or a loop
    variable) down to ``_INLINE_DEPTH`` levels; deeper ones call their own compiled writer.
    """

    def __init__(self, cls: type[Entity]) -> None:
        self.cls = cls
        self.namespace: dict[str, Any] = dict(_BASE_NAMESPACE)
        self.counter = itertools.count()
        self.constants: dict[int, str] = {}
        self.inlining: list[type[Entity]] = []

    # -- names --------------------------------------------------------------------------------

    def local(self, stem: str) -> str:
        return f"{stem}{next(self.counter)}"

    def constant(self, value: Any, stem: str) -> str:
        key = id(value)
        name = self.constants.get(key)
        if name is None:
            name = self.local(f"_{stem}")
            self.namespace[name] = value  # keeps ``value`` alive, so its id stays unique
            self.constants[key] = name
        return name

    def array_structs(self, code: str) -> str:
        name = f"_A{code}" if code.islower() else f"_AU{code}"
        if name not in self.namespace:
            self.namespace[name] = _array_structs(code)
        return name

    # -- building blocks ----------------------------------------------------------------------

    def fixed_expr(self, kafka_type: str, optional: bool, v: str) -> tuple[str, str] | None:
        """(struct code, expression) for a fixed-width kind, or None if it is not one."""
        if kafka_type == "uuid":
            # kio writes all zeros for None whether or not the field is nullable.
            return "16s", f"(_UZ if {v} is None else {v}.bytes)"
        fixed = _FIXED.get(kafka_type)
        if fixed is None:
            return None
        code, template = fixed
        if optional:
            if kafka_type != "datetime_i64":
                raise Unsupported(f"nullable {kafka_type}")  # kio cannot write these either
            assert template is not None
            return code, f"(-1 if {v} is None else {template.format(v=v)})"
        return code, v if template is None else template.format(v=v)

    @staticmethod
    def uvarint(buf: str, name: str, indent: str) -> list[str]:
        """Append the unsigned varint of the local ``name`` to ``buf``."""
        return [
            f"{indent}if {name} < 128:",
            f"{indent}    {buf}.append({name})",
            f"{indent}elif {name} < 16384:",
            f"{indent}    {buf} += _u2({name} & 127 | 128, {name} >> 7)",
            f"{indent}else:",
            f"{indent}    _uv({buf}, {name})",
        ]

    def string(
        self, kafka_type: str, compact: bool, optional: bool, buf: str, v: str, indent: str
    ) -> list[str]:
        """Statements appending the string/bytes/records value in local ``v`` to ``buf``."""
        lines: list[str] = []
        if optional:
            if compact:
                null = f"{buf}.append(0)"
            elif kafka_type == "string":
                null = f"{buf} += b'\\xff\\xff'"
            else:
                null = f"{buf} += b'\\xff\\xff\\xff\\xff'"
            lines += [f"{indent}if {v} is None:", f"{indent}    {null}", f"{indent}else:"]
            indent += "    "
        else:
            lines += [
                f"{indent}if {v} is None:",
                f"{indent}    raise TypeError('Unexpectedly received None value')",
            ]
        n = self.local("n")
        if compact:
            # kio's compact writer takes str or bytes for every kind.
            lines += [
                f"{indent}if isinstance({v}, str):",
                f"{indent}    {v} = {v}.encode()",
                f"{indent}{n} = len({v}) + 1",
                *self.uvarint(buf, n, indent),
                f"{indent}{buf} += {v}",
            ]
        elif kafka_type == "string":
            lines += [
                f"{indent}{v} = {v}.encode()",
                f"{indent}{n} = len({v})",
                f"{indent}if {n} > 32767:",
                f"{indent}    raise _too_long({n})",
                f"{indent}{buf} += _i16({n})",
                f"{indent}{buf} += {v}",
            ]
        else:
            lines += [f"{indent}{buf} += _i32(len({v}))", f"{indent}{buf} += {v}"]
        return lines

    def array_header(
        self, flexible: bool, buf: str, a: str, indent: str
    ) -> tuple[list[str], str, str]:
        """Length prefix of the array in local ``a``; returns (lines, body indent, length name)."""
        n = self.local("n")
        if flexible:
            m = self.local("m")
            lines = [
                f"{indent}if {a} is None:",
                f"{indent}    {buf}.append(0)",
                f"{indent}else:",
                f"{indent}    {n} = len({a})",
                f"{indent}    {m} = {n} + 1",
                *self.uvarint(buf, m, indent + "    "),
            ]
        else:
            lines = [
                f"{indent}if {a} is None:",
                f"{indent}    {buf} += b'\\xff\\xff\\xff\\xff'",
                f"{indent}else:",
                f"{indent}    {n} = len({a})",
                f"{indent}    {buf} += _i32({n})",
            ]
        return lines, indent + "    ", n

    def nested(self, cls: type[Entity], v: str, buf: str, indent: str) -> list[_Op]:
        """Ops appending the (non-null) entity ``v`` of class ``cls``: inlined or a call."""
        if cls in self.inlining:
            raise Unsupported(f"recursive entity {cls.__qualname__}")
        if len(self.inlining) > _INLINE_DEPTH:
            writer = self.constant(compile_writer(cls), "w")
            return [_Code([f"{indent}{writer}({buf}, {v})"])]
        return self.entity(cls, v, buf, indent)

    # -- entities and fields ------------------------------------------------------------------

    def entity(self, cls: type[Entity], v: str, buf: str, indent: str) -> list[_Op]:
        """Ops appending entity ``v`` (an expression free of side effects) of class ``cls``."""
        self.inlining.append(cls)
        try:
            flexible = bool(cls.__flexible__)
            ops: list[_Op] = []
            tagged: list[tuple[int, Field[Any]]] = []
            for f in fields(cls):
                tag = get_field_tag(f)
                if tag is not None:
                    tagged.append((int(tag), f))
                    continue
                ops += self.field(cls, f, buf, f"{v}.{f.name}", indent, is_tag=False)
            if tagged and not flexible:
                raise Unsupported("tagged fields on a non-flexible entity")
            if flexible:
                tagged.sort(key=lambda pair: pair[0])
                ops += self.tagged(cls, tagged, v, buf, indent)
            return ops
        finally:
            self.inlining.pop()

    def field(
        self, cls: type[Entity], f: Field[Any], buf: str, v: str, indent: str, is_tag: bool
    ) -> list[_Op]:
        """Ops appending field ``f`` of an entity of class ``cls``, whose value is ``v``."""
        flexible = bool(cls.__flexible__)
        # Tagged fields are never written as nullable (kio: absent tag = default).
        optional = False if is_tag else is_optional(f)
        kind = classify_field(f)

        if isinstance(kind, PrimitiveField):
            kafka_type = get_schema_field_type(f)
            if kafka_type in _STRINGISH:
                compact = flexible
                if cls.__name__ == "RequestHeader" and f.name == "client_id":
                    compact, optional = False, True  # Kafka's special case, as kio does
                s = self.local("s")
                lines = [f"{indent}{s} = {v}"]
                lines += self.string(kafka_type, compact, optional, buf, s, indent)
                return [_Code(lines)]
            fixed = self.fixed_expr(kafka_type, optional, v)
            if fixed is None:
                raise Unsupported(f"kafka type {kafka_type!r}")
            return [_Fixed(*fixed)]

        if isinstance(kind, EntityField):
            if not optional:
                return self.nested(kind.type_, v, buf, indent)
            e = self.local("e")
            lines = [
                f"{indent}{e} = {v}",
                f"{indent}if {e} is None:",
                f"{indent}    {buf}.append(255)",
                f"{indent}else:",
                f"{indent}    {buf}.append(1)",
            ]
            inner = indent + "    "
            lines += self.render(self.nested(kind.type_, e, buf, inner), buf, inner)
            return [_Code(lines)]

        a = self.local("a")
        lines = [f"{indent}{a} = {v}"]
        header, body, n = self.array_header(flexible, buf, a, indent)
        lines += header
        item = self.local("it")

        if isinstance(kind, EntityTupleField):
            lines.append(f"{body}for {item} in {a}:")
            inner = body + "    "
            lines += self.render(self.nested(kind.type_, item, buf, inner), buf, inner)
            return [_Code(lines)]

        assert isinstance(kind, PrimitiveTupleField)
        kafka_type = get_schema_field_type(f)
        if kafka_type in _STRINGISH:
            lines.append(f"{body}for {item} in {a}:")
            lines += self.string(kafka_type, flexible, False, buf, item, body + "    ")
            return [_Code(lines)]
        fixed = self.fixed_expr(kafka_type, False, item)
        if fixed is None:
            raise Unsupported(f"array of kafka type {kafka_type!r}")
        code, expr = fixed
        if code in _INT_ARRAY_CODES and expr == item:
            structs = self.array_structs(code)
            lines += [
                f"{body}if {n} < {_ARRAY_STRUCTS}:",
                f"{body}    {buf} += {structs}[{n}].pack(*{a})",
                f"{body}else:",
                f"{body}    {buf} += _pack('>%d{code}' % {n}, *{a})",
            ]
        elif code == "16s":
            lines += [f"{body}for {item} in {a}:", f"{body}    {buf} += {expr}"]
        else:
            packer = self.constant(struct.Struct(">" + code).pack, "p")
            lines += [f"{body}for {item} in {a}:", f"{body}    {buf} += {packer}({expr})"]
        return [_Code(lines)]

    def tagged(
        self, cls: type[Entity], tagged: list[tuple[int, Field[Any]]], v: str, buf: str, indent: str
    ) -> list[_Op]:
        """The tagged-field section of a flexible entity: count, then (tag, size, value)s."""
        if not tagged:
            return [_Fixed("x", None)]  # zero tagged fields
        tb, nt = self.local("tb"), self.local("nt")
        lines = [f"{indent}{tb} = None", f"{indent}{nt} = 0"]
        for tag, f in tagged:
            default = f.default if f.default is not MISSING else get_tagged_field_default(f)
            t = self.local("t")
            lines.append(f"{indent}{t} = {v}.{f.name}")
            # kio skips a tagged field equal to its default (explicit, else implicit).
            if default is None:
                lines.append(f"{indent}if {t} is not None:")
            else:
                lines.append(f"{indent}if not ({t} == {self.constant(default, 'd')}):")
            inner = indent + "    "
            tmp, n = self.local("tmp"), self.local("n")
            lines.append(f"{inner}{tmp} = bytearray()")
            lines += self.render(self.field(cls, f, tmp, t, inner, is_tag=True), tmp, inner)
            lines += [
                f"{inner}if {tb} is None:",
                f"{inner}    {tb} = bytearray()",
                f"{inner}{tb} += {_uvarint_bytes(tag)!r}",
                f"{inner}{n} = len({tmp})",
                *self.uvarint(tb, n, inner),
                f"{inner}{tb} += {tmp}",
                f"{inner}{nt} += 1",
            ]
        lines += [
            f"{indent}if {tb} is None:",
            f"{indent}    {buf}.append(0)",
            f"{indent}else:",
            *self.uvarint(buf, nt, indent + "    "),
            f"{indent}    {buf} += {tb}",
        ]
        return [_Code(lines)]

    def render(self, ops: list[_Op], buf: str, indent: str) -> list[str]:
        """Statements for ``ops``, merging runs of fixed-width values into one pack call."""
        lines: list[str] = []
        run: list[_Fixed] = []

        def flush() -> None:
            if not run:
                return
            exprs = [op.expr for op in run if op.expr is not None]
            if not exprs:
                lines.append(f"{indent}{buf} += {bytes(len(run))!r}")
            else:
                packer = self.constant(
                    struct.Struct(">" + "".join(op.code for op in run)).pack, "S"
                )
                lines.append(f"{indent}{buf} += {packer}({', '.join(exprs)})")
            run.clear()

        for op in ops:
            if isinstance(op, _Fixed):
                run.append(op)
            else:
                flush()
                lines += op.lines
        flush()
        return lines or [f"{indent}pass"]

    def source(self) -> str:
        body = self.render(self.entity(self.cls, "value", "buf", "    "), "buf", "    ")
        return "\n".join(["def write(buf, value):", *body, ""])


class _Sink:
    """A file-like ``write`` onto a bytearray, for kio's writers."""

    __slots__ = ("write",)

    def __init__(self, buf: bytearray) -> None:
        self.write = buf.extend


def _kio_fallback(cls: type[Entity]) -> BufferWriter:
    kio_write = entity_writer(cls)

    def write(buf: bytearray, value: Any) -> None:
        # kio's writers call nothing but ``write`` on their stream
        kio_write(cast("IO[bytes]", _Sink(buf)), value)

    write.__fastwrite_fallback__ = True  # type: ignore[attr-defined]  # a marker on a function
    return write


def _nullable(write_entity: BufferWriter) -> BufferWriter:
    def write(buf: bytearray, value: Any) -> None:
        if value is None:
            buf.append(0xFF)
        else:
            buf.append(1)
            write_entity(buf, value)

    return write


@cache
def source_of(cls: type[Entity]) -> str:
    """The generated source of ``cls``'s writer (raises ``Unsupported``), for debugging."""
    return _Compiler(cls).source()


@cache
def compile_writer(cls: type[Entity], nullable: bool = False) -> BufferWriter:
    """``write(buf, value)`` appending the wire encoding of ``value`` (a ``cls``) to ``buf``.

    Byte-for-byte kio's ``entity_writer(cls, nullable)``; ``nullable`` adds the KIP-893 marker
    byte (-1 for None, 1 before a present entity). Classes with a field kind the compiler does
    not know get kio's writer instead.
    """
    if nullable:
        return _nullable(compile_writer(cls))
    compiler = _Compiler(cls)
    try:
        source = compiler.source()
        namespace = compiler.namespace
        code = compile(source, f"<fastwrite {cls.__module__}.{cls.__qualname__}>", "exec")
        exec(code, namespace)
    except Exception:  # Unsupported, or anything kio's own introspection refuses
        return _kio_fallback(cls)
    writer: BufferWriter = namespace["write"]
    writer.__qualname__ = writer.__name__ = f"write_{cls.__name__}"
    return writer


def is_compiled(cls: type[Entity]) -> bool:
    """Whether ``cls`` (and every entity inside it) got a compiled writer, not kio's."""
    return not getattr(compile_writer(cls), "__fastwrite_fallback__", False) and all(
        is_compiled(inner) for inner in _nested_entities(cls)
    )


def _nested_entities(cls: type[Entity]) -> list[type[Entity]]:
    found: list[type[Entity]] = []
    for f in fields(cls):
        kind = classify_field(f)
        if isinstance(kind, EntityField | EntityTupleField):
            found.append(kind.type_)
    return found


def write(buf: bytearray, value: Any) -> None:
    """Append the encoding of the kio entity ``value`` to ``buf``."""
    compile_writer(type(value))(buf, value)  # type: ignore[arg-type]  # classes hash: mypy#11470


def encode(value: Any) -> bytes:
    """The encoding of the kio entity ``value``."""
    buf = bytearray()
    compile_writer(type(value))(buf, value)  # type: ignore[arg-type]  # classes hash: mypy#11470
    return bytes(buf)


def stream_writer(cls: type[Entity]) -> Callable[[IO[bytes], Any], None]:
    """A drop-in for kio's ``entity_writer(cls)``: writes to a binary stream."""
    write_buf = compile_writer(cls)

    def write_stream(stream: IO[bytes], value: Any) -> None:
        buf = bytearray()
        write_buf(buf, value)
        stream.write(buf)

    return write_stream
