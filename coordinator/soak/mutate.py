"""Frames to throw at the server: valid requests, the same mutated, and random bytes.

Mutations know the frame's layout: the size prefix, the header's api key and version, and the
body's lengths (int32 counts and sizes, int16 string lengths, compact varints) and tagged-field
sections. Each is chosen by a seeded ``random.Random``, so a run is repeatable.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from protocol.header import uvarint

from .corpus import Served, random_request

__all__ = ["MAX_BYTES", "Frame", "batch", "make_frame"]

MAX_BYTES = 1 << 20
"""``socket.request.max.bytes`` of the fuzzed server: absurd declared sizes stay cheap."""

_SIZE = struct.Struct(">i")
_ABSURD_INT32 = (0x7FFFFFFF, -1, -2, -(2**31), 0x40000000, 0x7FFFFFFE, 0xFFFF, 0x10000, 1000)
_BIG_VARINTS = (b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08",
                b"\xff\xff\xff\xff\xff\xff", b"\xe9\x07", b"\x80\x80\x04")


@dataclass(frozen=True, slots=True)
class Frame:
    """Bytes to send, the correlation id in them (-1 when none), whether they were mutated."""

    data: bytes
    correlation_id: int
    mutated: bool

    @property
    def framed(self) -> bool:
        """Whether the size prefix still frames exactly these bytes."""
        return len(self.data) >= 4 and _SIZE.unpack_from(self.data)[0] == len(self.data) - 4


def _refit(buf: bytearray) -> None:
    if len(buf) >= 4:
        _SIZE.pack_into(buf, 0, len(buf) - 4)


def _tag_garbage(rng: random.Random) -> bytes:
    """A tagged-field section: unknown tags, sizes past the end, counts larger than the
    entries, or a known tag number with content of the wrong size."""
    kind = rng.randrange(4)
    if kind == 0:  # well-formed unknown tags: must be skipped and answered
        count = rng.randint(1, 3)
        return uvarint(count) + b"".join(
            uvarint(rng.choice((7, 99, 1000, 2**20, rng.randrange(2**28))))
            + uvarint(size := rng.choice((0, 1, 5, 40))) + rng.randbytes(size)
            for _ in range(count))
    if kind == 1:  # a size larger than what is left
        return b"\x01" + uvarint(rng.randrange(200)) + rng.choice(_BIG_VARINTS) + b"x"
    if kind == 2:  # more entries declared than there are
        return rng.choice(_BIG_VARINTS) + b"\x05\x00"
    return b"\x01" + uvarint(rng.randrange(4)) + uvarint(rng.randrange(8)) + rng.randbytes(3)


def _mutate(rng: random.Random, buf: bytearray) -> bytearray:
    kind = rng.choice(("flip", "bitflip", "truncate", "truncate-refit", "extend",
                       "extend-refit", "size", "version", "api-key", "int32", "int16", "varint",
                       "insert", "delete", "tags", "tags"))
    position = rng.randrange(10_000)
    byte = rng.randrange(256)
    body = max(len(buf) - 4, 1)
    at = 4 + position % body
    if kind == "flip" and len(buf) > 4:
        buf[min(at, len(buf) - 1)] = byte
    elif kind == "bitflip" and len(buf) > 4:
        buf[min(at, len(buf) - 1)] ^= 1 << (byte % 8)
    elif kind in ("truncate", "truncate-refit"):
        del buf[position % max(len(buf), 1):]
        if kind == "truncate-refit":
            _refit(buf)
    elif kind in ("extend", "extend-refit"):
        buf += rng.randbytes(rng.randint(1, 64))
        if kind == "extend-refit":
            _refit(buf)
    elif kind == "size" and len(buf) >= 4:
        choices = (rng.choice(_ABSURD_INT32), MAX_BYTES + 1, MAX_BYTES,
                   len(buf) - 4 + (byte % 9) - 4, byte % 8, 0)
        _SIZE.pack_into(buf, 0, choices[position % len(choices)])
    elif kind == "version" and len(buf) >= 8:
        struct.pack_into(">h", buf, 6, rng.choice((-1, -2, 20, 32767, -32768,
                                                   rng.randint(-3, 20))))
    elif kind == "api-key" and len(buf) >= 6:
        struct.pack_into(">h", buf, 4, rng.choice((-1, 32767, rng.randint(-3, 100))))
    elif kind == "int32" and len(buf) >= 8:
        absurd = rng.choice(_ABSURD_INT32)
        struct.pack_into(">i" if absurd < 2**31 else ">I", buf,
                         4 + position % (len(buf) - 7), absurd)
    elif kind == "int16" and len(buf) >= 6:
        struct.pack_into(">h", buf, 4 + position % (len(buf) - 5),
                         (-1, -2, 32767, -32768)[byte % 4])
    elif kind == "varint":
        buf[at:at] = rng.choice(_BIG_VARINTS)
        if byte % 2:
            _refit(buf)
    elif kind == "insert":
        buf[at:at] = rng.randbytes(rng.randint(1, 64))
        if byte % 2:
            _refit(buf)
    elif kind == "delete" and len(buf) > 4:
        del buf[at : at + 1 + byte % 16]
        if byte % 2:
            _refit(buf)
    elif kind == "tags" and len(buf) > 12 and buf[-1] == 0:
        # the body's last byte is its top-level tagged-field count (flexible versions)
        buf[-1:] = _tag_garbage(rng)
        _refit(buf)
    return buf


def make_frame(rng: random.Random, corpus: Sequence[Served], correlation_id: int) -> Frame:
    choice = rng.choice(("valid", "valid", "mutated", "mutated", "mutated", "mutated",
                         "random", "random-header"))
    if choice == "random":
        payload = rng.randbytes(rng.randint(0, 300))
        size = len(payload) if rng.random() < 0.5 else rng.randint(-(2**31), 2**31 - 1)
        return Frame(_SIZE.pack(size) + payload, -1, True)
    if choice == "random-header":
        key = rng.choice(sorted({k for k, _ in corpus}))
        payload = struct.pack(">hhi", key, rng.randint(-3, 20), correlation_id)
        payload += rng.randbytes(rng.randint(0, 200))
        return Frame(_SIZE.pack(len(payload)) + payload, correlation_id, True)
    api_key, version = corpus[rng.randrange(len(corpus))]
    data = bytearray(random_request(rng, api_key, version, correlation_id, "fuzz"))
    if choice == "valid":
        return Frame(bytes(data), correlation_id, False)
    for _ in range(rng.choice((1, 1, 2, 3))):
        data = _mutate(rng, data)
    cid = struct.unpack_from(">i", data, 8)[0] if len(data) >= 12 else -1
    return Frame(bytes(data), cid, True)


def batch(rng: random.Random, corpus: Sequence[Served], first_id: int = 1000) -> list[Frame]:
    """5 to 22 frames for one connection."""
    return [make_frame(rng, corpus, first_id + i) for i in range(rng.randint(5, 22))]

