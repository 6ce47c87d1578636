"""Hypothesis strategies for kio's message classes, with short arrays.

``st.from_type(cls)`` resolves a kio message as Hypothesis resolves any dataclass (each field
from its type, a field with a default sometimes left at it) but draws every ``tuple[X, ...]``
array with Hypothesis's unbounded list sizes, arrays of arrays of structs included: most of the
protocol tests' CPU went into drawing hundreds of nested elements an example. :func:`values_of`
resolves the same fields the same way, kio's own strategies for its primitive types included,
and draws each array with at most :data:`MAX_ARRAY` elements, so an example still holds empty,
single and several-element arrays at every depth, nulls and defaults, at a fraction of the
draws. Strategies are built once per class.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kio.static.primitive import Records

MAX_ARRAY = 3
"""The most elements an array of a generated message holds."""

# kio ships strategies for its primitives but not for raw record batches.
st.register_type_strategy(Records, st.binary(max_size=48).map(Records))


@cache
def values_of(cls: type) -> st.SearchStrategy[Any]:
    """Values of the kio entity ``cls`` (a request, response, header or data schema)."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in dataclasses.fields(cls):
        if not field.init or field.name not in hints:
            continue
        strategy = _of_hint(hints[field.name])
        if field.default is not dataclasses.MISSING:
            strategy = st.just(field.default) | strategy
        fields[field.name] = strategy
    return st.builds(cls, **fields)


def _of_hint(hint: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_of_hint(args[0]), max_size=MAX_ARRAY).map(tuple)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_of_hint(arg) for arg in args])
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return values_of(hint)
    return st.from_type(hint)
