"""The server's event loop: uvloop where installed, asyncio's own when asked for."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.runtime import loop


async def _loop_type() -> str:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.loop_name() == "uvloop"
    assert loop.run(_loop_type()).startswith("uvloop")


def test_asyncio_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "asyncio")
    assert loop.loop_factory() is None and loop.loop_name() == "asyncio"
    assert loop.run(_loop_type()).startswith("asyncio")
