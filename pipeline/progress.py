"""Progress lines on stderr while the job runs (Spark's own stage bar shows as well)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.total = total
        self.step = 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.started = time.perf_counter()

    def say(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.started
            print(f"[{elapsed:7.1f}s] {message}", file=self.stream, flush=True)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.step += 1
        self.say(f"({self.step}/{self.total}) {name} ...")
        t0 = time.perf_counter()
        yield
        self.say(f"({self.step}/{self.total}) {name} done in {time.perf_counter() - t0:.1f}s")
