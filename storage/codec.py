"""Schema-driven binary codec for coordinator record structs.

A record struct is a frozen, keyword-only dataclass whose fields carry a *kind* (see
``INT32``, ``STRING``, ``Array(...)``, ...) in their metadata, declared with :func:`f`.
The :func:`codec` decorator compiles, once per class, a specialised encoder and decoder
(generated Python source, so a record is encoded with a handful of ``struct`` calls and no
per-field dispatch at run time), when the class is first encoded or decoded. The wire layout
is described in ``storage/FORMAT.md``.

This module knows nothing about record type ids; ``storage.records`` builds on it.
"""

from __future__ import annotations

import base64
import dataclasses
import struct
import types
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast, dataclass_transform, overload

from storage.errors import RecordDecodeError

__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NBYTES",
    "NSTRING",
    "NUUID",
    "STRING",
    "STRING_MAP",
    "UINT16",
    "UUID",
    "Array",
    "Kind",
    "NStruct",
    "Struct",
    "codec",
    "compiled",
    "f",
    "field_decoder",
    "kafka_uuid_str",
    "record",
    "struct_from_json",
    "struct_to_json",
]

T = TypeVar("T")


class Kind:
    """A field type. Fixed-size kinds carry a ``struct`` format character."""

    fmt: str | None = None

    def __init__(self, name: str, fmt: str | None = None) -> None:
        self.name = name
        self.fmt = fmt

    def __repr__(self) -> str:
        return self.name


INT8 = Kind("int8", "b")
INT16 = Kind("int16", "h")
INT32 = Kind("int32", "i")
INT64 = Kind("int64", "q")
UINT16 = Kind("uint16", "H")
BOOL = Kind("bool", "?")
FLOAT64 = Kind("float64", "d")
STRING = Kind("string")
NSTRING = Kind("nullable string")
BYTES = Kind("bytes")
NBYTES = Kind("nullable bytes")
UUID = Kind("uuid")
NUUID = Kind("nullable uuid")
STRING_MAP = Kind("map<string,string>")


class Array(Kind):
    """A non-null array of ``elem`` (a primitive kind or a :class:`Struct`); decodes to a tuple."""

    def __init__(self, elem: Kind) -> None:
        super().__init__(f"[]{elem!r}")
        self.elem = elem


class Struct(Kind):
    """A nested struct (a class decorated with :func:`codec`)."""

    def __init__(self, cls: type[Any]) -> None:
        super().__init__(cls.__name__)
        self.cls = cls


class NStruct(Struct):
    """A nullable nested struct."""


_META = "storage.codec"


@overload
def f(kind: Kind, *, default: T, name: str | None = None, since: int = 0) -> T: ...
@overload
def f(kind: Kind, *, name: str | None = None, since: int = 0) -> Any: ...
def f(
    kind: Kind,
    *,
    default: Any = dataclasses.MISSING,
    name: str | None = None,
    since: int = 0,
) -> Any:
    """Declare a record field of ``kind``.

    ``name`` is the Kafka field name (default: the attribute in CamelCase, or lowerCamelCase
    with ``@codec(lower_camel=True)``). ``since`` is the value version that added the field;
    older versions decode it as ``default``.

    For type checkers this is a field specifier of :func:`record` (the field's type is its
    annotation; with ``default=`` the field is optional, and the default must fit the type).
    """
    meta = {_META: (kind, name, since)}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    if isinstance(default, list | dict | set):
        raise TypeError("mutable defaults are not allowed; use a tuple")
    return dataclasses.field(default=default, metadata=meta)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(f,))
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, slots=True, kw_only=True)``, the form of every record struct.

    Declared with ``dataclass_transform`` so that type checkers see the dataclass (its
    keyword-only ``__init__``, frozen fields) and read :func:`f` as its field specifier.
    """
    return dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    attr: str
    kafka_name: str
    kind: Kind
    since: int
    default: Any


def _camel(attr: str, lower: bool) -> str:
    parts = attr.split("_")
    out = "".join(p[:1].upper() + p[1:] for p in parts)
    return out[:1].lower() + out[1:] if lower else out


class _Compiled(Protocol):
    """The class attributes :func:`codec` adds to a record class."""

    _codec_fields: tuple[FieldSpec, ...]
    # def _enc(o, out) -> None: appends o's fields to bytearray out
    _codec_encode_body: Callable[[Any, bytearray], None]
    # def _dec(buf, pos, version) -> (obj, new_pos)
    _codec_decode_body: Callable[[bytes, int, int], tuple[Any, int]]


def fields_of(cls: type) -> tuple[FieldSpec, ...]:
    specs: tuple[FieldSpec, ...] = cls.__dict__["_codec_fields"]
    return specs


# ---------------------------------------------------------------------------------------
# varints (unsigned LEB128), used for lengths and counts


def uvarint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def uvarint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """Continue decoding a varint whose first byte ``first`` (>= 0x80) was read at pos-1."""
    result = first & 0x7F
    shift = 7
    while True:
        if pos >= len(buf):
            raise RecordDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise RecordDecodeError("varint too long")


_uuid_new = object.__new__
_uuid_set_int = uuid.UUID.__dict__["int"].__set__
_uuid_set_safe = uuid.UUID.__dict__["is_safe"].__set__
_uuid_unknown = uuid.SafeUUID.unknown
_from_bytes = int.from_bytes


def uuid_from_bytes(b: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=b)`` for 16 bytes, without its argument checks (3x faster)."""
    u: uuid.UUID = _uuid_new(uuid.UUID)
    _uuid_set_int(u, _from_bytes(b, "big"))
    _uuid_set_safe(u, _uuid_unknown)
    return u


# ---------------------------------------------------------------------------------------
# code generation


class EncodedOnce(tuple):
    """A tuple of structs, for an array field, that keeps its encoding after it is first
    encoded: an array written again and again unchanged (a consumer group member's partitions,
    at each epoch bump) is encoded once. Equal to, and decoded as, a plain tuple."""

    encoded: bytes | None = None


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "_uv": uvarint,
            "_uvt": uvarint_tail,
            "_UUID": uuid_from_bytes,
            "_unpack_from": struct.unpack_from,
            "_pack": struct.pack,
            "_Err": RecordDecodeError,
            "_tuple": tuple,
            "_Once": EncodedOnce,
        }
        self.counter = 0

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def const(self, value: Any, prefix: str = "c") -> str:
        name = self.tmp(prefix)
        self.env[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _enc_len(g: _Gen, ind: int, expr: str) -> None:
    n = g.tmp("n")
    g.emit(ind, f"{n} = {expr}")
    g.emit(ind, f"if {n} < 128: out.append({n})")
    g.emit(ind, f"else: out += _uv({n})")


def _enc_value(g: _Gen, ind: int, kind: Kind, expr: str) -> None:
    """Emit code appending the encoding of ``expr`` (of ``kind``) to ``out``."""
    if kind.fmt is not None:
        s = g.const(struct.Struct(">" + kind.fmt), "S")
        g.emit(ind, f"out += {s}.pack({expr})")
    elif kind is STRING or kind is BYTES:
        b = g.tmp("b")
        g.emit(ind, f"{b} = {expr}.encode()" if kind is STRING else f"{b} = {expr}")
        _enc_len(g, ind, f"len({b})")
        g.emit(ind, f"out += {b}")
    elif kind is NSTRING or kind is NBYTES:
        v = g.tmp("v")
        g.emit(ind, f"{v} = {expr}")
        g.emit(ind, f"if {v} is None: out.append(0)")
        g.emit(ind, "else:")
        b = g.tmp("b")
        g.emit(ind + 1, f"{b} = {v}.encode()" if kind is NSTRING else f"{b} = {v}")
        _enc_len(g, ind + 1, f"len({b}) + 1")
        g.emit(ind + 1, f"out += {b}")
    elif kind is UUID:
        g.emit(ind, f"out += {expr}.bytes")
    elif kind is NUUID:
        v = g.tmp("v")
        g.emit(ind, f"{v} = {expr}")
        g.emit(ind, f"if {v} is None: out.append(0)")
        g.emit(ind, f"else: out.append(1); out += {v}.bytes")
    elif kind is STRING_MAP:
        m = g.tmp("m")
        k = g.tmp("k")
        v = g.tmp("v")
        g.emit(ind, f"{m} = {expr}")
        _enc_len(g, ind, f"len({m})")
        g.emit(ind, f"for {k}, {v} in {m}.items():")
        _enc_value(g, ind + 1, STRING, k)
        _enc_value(g, ind + 1, STRING, v)
    elif isinstance(kind, Array):
        seq = g.tmp("seq")
        g.emit(ind, f"{seq} = {expr}")
        if kind.elem.fmt is not None:
            _enc_len(g, ind, f"len({seq})")
            g.emit(ind, f"out += _pack('>%d{kind.elem.fmt}' % len({seq}), *{seq})")
        else:
            e = g.tmp("e")
            start = g.tmp("start")
            g.emit(ind, f"if type({seq}) is _Once and {seq}.encoded is not None:")
            g.emit(ind + 1, f"out += {seq}.encoded")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{start} = len(out)")
            _enc_len(g, ind + 1, f"len({seq})")
            g.emit(ind + 1, f"for {e} in {seq}:")
            _enc_value(g, ind + 2, kind.elem, e)
            g.emit(ind + 1, f"if type({seq}) is _Once: {seq}.encoded = bytes(out[{start}:])")
    elif isinstance(kind, NStruct):
        enc = g.const(compiled(kind.cls)._codec_encode_body, "enc")
        v = g.tmp("v")
        g.emit(ind, f"{v} = {expr}")
        g.emit(ind, f"if {v} is None: out.append(0)")
        g.emit(ind, f"else: out.append(1); {enc}({v}, out)")
    elif isinstance(kind, Struct):
        enc = g.const(compiled(kind.cls)._codec_encode_body, "enc")
        g.emit(ind, f"{enc}({expr}, out)")
    else:  # pragma: no cover - all kinds handled above
        raise TypeError(f"unknown kind {kind!r}")


def _dec_len(g: _Gen, ind: int, target: str) -> None:
    g.emit(ind, f"{target} = buf[pos]; pos += 1")
    g.emit(ind, f"if {target} >= 128: {target}, pos = _uvt(buf, pos, {target})")


def _dec_value(g: _Gen, ind: int, kind: Kind, target: str, keep: bool = True) -> None:
    """Emit code decoding a ``kind`` at ``pos`` of ``buf`` into variable ``target``. Not
    ``keep``: bytes or a UUID is skipped, not built (``target`` unset); a string is still
    decoded, so bad UTF-8 fails as it fails a full decode."""
    if kind.fmt is not None:
        s = g.const(struct.Struct(">" + kind.fmt), "S")
        g.emit(ind, f"{target}, = {s}.unpack_from(buf, pos); pos += {s}.size")
    elif kind is STRING or kind is BYTES:
        n = g.tmp("n")
        _dec_len(g, ind, n)
        g.emit(ind, f"end = pos + {n}")
        g.emit(ind, "if end > len(buf): raise _Err('truncated')")
        conv = "buf[pos:end].decode()" if kind is STRING else "bytes(buf[pos:end])"
        g.emit(ind, f"{target} = {conv}; pos = end" if keep or kind is STRING else "pos = end")
    elif kind is NSTRING or kind is NBYTES:
        n = g.tmp("n")
        _dec_len(g, ind, n)
        g.emit(ind, f"if {n} == 0: {target} = None")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"end = pos + {n} - 1")
        g.emit(ind + 1, "if end > len(buf): raise _Err('truncated')")
        conv = "buf[pos:end].decode()" if kind is NSTRING else "bytes(buf[pos:end])"
        g.emit(ind + 1, f"{target} = {conv}; pos = end" if keep or kind is NSTRING
               else "pos = end")
    elif kind is UUID:
        g.emit(ind, "end = pos + 16")
        g.emit(ind, "if end > len(buf): raise _Err('truncated')")
        g.emit(ind, f"{target} = _UUID(buf[pos:end]); pos = end" if keep else "pos = end")
    elif kind is NUUID:
        g.emit(ind, "flag = buf[pos]; pos += 1")
        g.emit(ind, f"if flag == 0: {target} = None")
        g.emit(ind, "else:")
        _dec_value(g, ind + 1, UUID, target, keep)
    elif kind is STRING_MAP:
        n = g.tmp("n")
        k = g.tmp("k")
        v = g.tmp("v")
        _dec_len(g, ind, n)
        g.emit(ind, f"{target} = {{}}")
        g.emit(ind, f"for _ in range({n}):")
        _dec_value(g, ind + 1, STRING, k)
        _dec_value(g, ind + 1, STRING, v)
        g.emit(ind + 1, f"{target}[{k}] = {v}")
    elif isinstance(kind, Array):
        n = g.tmp("n")
        _dec_len(g, ind, n)
        if kind.elem.fmt is not None:
            size = struct.calcsize(">" + kind.elem.fmt)
            g.emit(ind, f"{target} = _unpack_from('>%d{kind.elem.fmt}' % {n}, buf, pos)")
            g.emit(ind, f"pos += {n} * {size}")
        else:
            lst = g.tmp("l")
            e = g.tmp("e")
            g.emit(ind, f"{lst} = []")
            g.emit(ind, f"for _ in range({n}):")
            _dec_value(g, ind + 1, kind.elem, e)
            g.emit(ind + 1, f"{lst}.append({e})")
            g.emit(ind, f"{target} = _tuple({lst})")
    elif isinstance(kind, NStruct):
        dec = g.const(compiled(kind.cls)._codec_decode_body, "dec")
        g.emit(ind, "flag = buf[pos]; pos += 1")
        g.emit(ind, f"if flag == 0: {target} = None")
        g.emit(ind, f"else: {target}, pos = {dec}(buf, pos, version)")
    elif isinstance(kind, Struct):
        dec = g.const(compiled(kind.cls)._codec_decode_body, "dec")
        g.emit(ind, f"{target}, pos = {dec}(buf, pos, version)")
    else:  # pragma: no cover
        raise TypeError(f"unknown kind {kind!r}")


def _compile(cls: type, specs: tuple[FieldSpec, ...]) -> None:
    # encoder: def _enc(o, out) -> None; appends fields (no header) to bytearray ``out``.
    g = _Gen()
    g.emit(0, "def _enc(o, out):")
    run: list[FieldSpec] = []

    def flush_run() -> None:
        if run:
            s = g.const(struct.Struct(">" + "".join(r.kind.fmt or "" for r in run)), "S")
            args = ", ".join(f"o.{r.attr}" for r in run)
            g.emit(1, f"out += {s}.pack({args})")
            run.clear()

    for spec in specs:
        if spec.kind.fmt is not None:
            run.append(spec)
            continue
        flush_run()
        _enc_value(g, 1, spec.kind, f"o.{spec.attr}")
    flush_run()
    g.emit(1, "return None")
    encode_body = _exec(g, "_enc", cls)

    # decoder: def _dec(buf, pos, version) -> (obj, pos)
    g = _Gen()
    g.env["_cls"] = cls
    g.emit(0, "def _dec(buf, pos, version):")
    _dec_fields(g, specs, None)
    if all(isinstance(cls.__dict__.get(s.attr), types.MemberDescriptorType) for s in specs):
        # Slotted dataclass: fill the slots directly, 4x faster than the frozen __init__.
        g.env["_new"] = object.__new__
        g.emit(1, "o = _new(_cls)")
        for s in specs:
            setter = g.const(cls.__dict__[s.attr].__set__, "set")
            g.emit(1, f"{setter}(o, a_{s.attr})")
        g.emit(1, "return o, pos")
    else:
        kwargs = ", ".join(f"{s.attr}=a_{s.attr}" for s in specs)
        g.emit(1, f"return _cls({kwargs}), pos")
    decode_body = _exec(g, "_dec", cls)

    compiled = cast(_Compiled, cls)
    compiled._codec_encode_body = encode_body
    compiled._codec_decode_body = decode_body


def field_decoder(cls: type, attrs: Sequence[str]) -> Callable[[bytes, int, int],
                                                              tuple[tuple[Any, ...], int]]:
    """A decoder of ``cls``'s bytes (as its ``_codec_decode_body``: ``(buf, pos, version)``,
    the same checks and errors) that returns the values of ``attrs`` only, as a tuple in that
    order, instead of an object: a reader that needs a few fields of many records (a
    partition's load) builds neither the objects nor the UUIDs and bytes it does not read."""
    specs = fields_of(cls)
    unknown = set(attrs) - {s.attr for s in specs}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)}")
    g = _Gen()
    g.env["_cls"] = cls
    g.emit(0, "def _decf(buf, pos, version):")
    _dec_fields(g, specs, frozenset(attrs))
    values = "".join(f"a_{attr}, " for attr in attrs)
    g.emit(1, f"return ({values}), pos")
    return _exec(g, "_decf", cls)


def _dec_fields(g: _Gen, specs: tuple[FieldSpec, ...], keep: frozenset[str] | None) -> None:
    """Emit the decoding of every field into ``a_<attr>`` (of those in ``keep`` only, the
    others parsed and skipped; None: all), in a ``try`` that turns any failure into
    ``RecordDecodeError``."""
    g.emit(1, "try:")
    fixed: list[FieldSpec] = []

    def flush_fixed() -> None:
        if fixed:
            s = g.const(struct.Struct(">" + "".join(r.kind.fmt or "" for r in fixed)), "S")
            names = ", ".join(f"a_{r.attr}" for r in fixed)
            g.emit(2, f"{names}, = {s}.unpack_from(buf, pos); pos += {s}.size")
            fixed.clear()

    for spec in specs:
        kept = keep is None or spec.attr in keep
        if spec.since > 0:
            flush_fixed()
            dflt = g.const(spec.default, "d")
            g.emit(2, f"if version < {spec.since}: a_{spec.attr} = {dflt}")
            g.emit(2, "else:")
            _dec_value(g, 3, spec.kind, f"a_{spec.attr}", kept)
            continue
        if spec.kind.fmt is not None:
            fixed.append(spec)
            continue
        flush_fixed()
        _dec_value(g, 2, spec.kind, f"a_{spec.attr}", kept)
    flush_fixed()
    g.emit(2, "pass")  # a struct with no fields (RemoveAccessControlEntryValue)
    g.emit(1, "except (IndexError, UnicodeDecodeError, ValueError, TypeError) as exc:")
    g.emit(2, "if isinstance(exc, _Err): raise")
    g.emit(2, "raise _Err(f'cannot decode {_cls.__name__}: {exc}') from exc")
    g.emit(1, "except __import__('struct').error as exc:")
    g.emit(2, "raise _Err(f'cannot decode {_cls.__name__}: {exc}') from exc")


def _compile_on_first_use(cls: type, specs: tuple[FieldSpec, ...]) -> None:
    """Give ``cls`` an encoder and a decoder that generate the real ones when first called:
    a process pays for the code generation of the record types it uses only (a server's start
    decodes a few of the ~80). Thread-safe: two threads may both generate, with one result."""

    def compile_now() -> None:
        if cls.__dict__["_codec_decode_body"] is decode:
            _compile(cls, specs)

    def encode(o: Any, out: bytearray) -> None:
        compile_now()
        compiled(cls)._codec_encode_body(o, out)

    def decode(buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        compile_now()
        return compiled(cls)._codec_decode_body(buf, pos, version)

    target = cast(_Compiled, cls)
    target._codec_encode_body = encode
    target._codec_decode_body = decode
    _pending[cls] = compile_now


_pending: dict[type, Callable[[], None]] = {}
"""Record classes whose codec is not generated yet (see :func:`compiled`)."""


def compiled(cls: type[T]) -> type[_Compiled]:
    """``cls`` with its encoder and decoder generated (what is captured, by another record's
    generated code or a decoder table, must be the real ones, not the first-use stubs)."""
    compile_now = _pending.get(cls)
    if compile_now is not None:
        compile_now()  # (generates, unless done: by another thread too, then again here)
        _pending.pop(cls, None)
    return cast(type[_Compiled], cls)


def _exec(g: _Gen, fn: str, cls: type) -> Callable[..., Any]:
    src = "\n".join(g.lines)
    ns = dict(g.env)
    code = compile(src, f"<codec {cls.__name__}{fn}>", "exec")
    exec(code, ns)
    func: Callable[..., Any] = ns[fn]
    func.__doc__ = src  # handy when debugging: print(Cls._codec_decode_body.__doc__)
    return func


@overload
def codec(cls: type[T], *, lower_camel: bool = False) -> type[T]: ...
@overload
def codec(cls: None = None, *, lower_camel: bool = False) -> Callable[[type[T]], type[T]]: ...
def codec(
    cls: type[T] | None = None, *, lower_camel: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """Class decorator: compile the encoder/decoder of a frozen dataclass declared with f()."""

    def wrap(c: type[T]) -> type[T]:
        if not dataclasses.is_dataclass(c):
            raise TypeError(f"{c.__name__} must be a dataclass")
        specs = []
        for fld in dataclasses.fields(c):
            meta = fld.metadata.get(_META)
            if meta is None:
                raise TypeError(f"{c.__name__}.{fld.name} is not declared with f()")
            kind, name, since = meta
            if since > 0 and fld.default is dataclasses.MISSING:
                raise TypeError(f"{c.__name__}.{fld.name}: a field with since>0 needs a default")
            specs.append(
                FieldSpec(
                    attr=fld.name,
                    kafka_name=name or _camel(fld.name, lower_camel),
                    kind=kind,
                    since=since,
                    default=fld.default,
                )
            )
        field_specs = tuple(specs)
        cast(_Compiled, c)._codec_fields = field_specs
        _compile_on_first_use(c, field_specs)
        return c

    if cls is not None:
        return wrap(cls)
    return wrap


def encode_struct(obj: Any, out: bytearray) -> None:
    """Append ``obj``'s fields (no header) to ``out``."""
    type(obj)._codec_encode_body(obj, out)


def decode_struct(cls: type[T], buf: bytes, pos: int, version: int) -> tuple[T, int]:
    """Decode a ``cls`` at ``pos`` of ``buf`` written with ``version``; returns (obj, new_pos)."""
    result: tuple[T, int] = cast(_Compiled, cls)._codec_decode_body(buf, pos, version)
    return result


# ---------------------------------------------------------------------------------------
# JSON view (Kafka field names), as Kafka's generated JSON converters print records


def kafka_uuid_str(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def kafka_uuid_parse(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def _to_json(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is UUID or kind is NUUID:
        return kafka_uuid_str(value)
    if kind is BYTES or kind is NBYTES:
        return base64.b64encode(value).decode()
    if kind is STRING_MAP:
        return dict(value)
    if isinstance(kind, Array):
        return [_to_json(kind.elem, v) for v in value]
    if isinstance(kind, Struct):
        return struct_to_json(value)
    return value


def struct_to_json(obj: Any) -> dict[str, Any]:
    """A dict of ``obj``'s fields under their Kafka names (uuids and bytes as Kafka prints them)."""
    return {s.kafka_name: _to_json(s.kind, getattr(obj, s.attr)) for s in fields_of(type(obj))}


def _from_json(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is UUID or kind is NUUID:
        return kafka_uuid_parse(value)
    if kind is BYTES or kind is NBYTES:
        return base64.b64decode(value)
    if kind is STRING_MAP:
        return dict(value)
    if isinstance(kind, Array):
        return tuple(_from_json(kind.elem, v) for v in value)
    if isinstance(kind, Struct):
        return struct_from_json(kind.cls, value)
    return value


def struct_from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """Inverse of :func:`struct_to_json` (missing fields take their defaults)."""
    kwargs = {
        s.attr: _from_json(s.kind, data[s.kafka_name])
        for s in fields_of(cls)
        if s.kafka_name in data
    }
    return cls(**kwargs)
