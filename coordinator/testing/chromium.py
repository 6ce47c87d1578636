"""Headless Chromium (Debian's ``chromium``) for the tests and the bench of the timeline page:
load a page, give back its DOM after the scripts ran (``dump_dom``) or a PNG of it
(``screenshot``).

Each call is one ``chromium --headless`` process with a profile of its own (a new temporary
directory), its ``--dump-dom`` / ``--screenshot`` output and its exit: no DevTools connection to
keep, no port, no client library, nothing left running when a test fails. With
``virtual_time_ms``, Chromium's clock runs only while no load is pending, for that long: a page
that polls its server gets as many polls as its interval fits into the budget, however slow the
machine. The flags keep it off the network (no component updates, no sync, no QUIC, no
lookups it would hang on where the network is closed) and let it run as root in a container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--hide-scrollbars")
DEFAULT_WINDOW = (1400, 900)
TIMEOUT_S = 120.0


class ChromiumError(RuntimeError):
    """Chromium is missing, or did not give what it was asked for."""


def executable() -> str | None:
    """The Chromium to run: ``$CHROMIUM`` if set, else ``chromium`` on PATH."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


@dataclass(frozen=True, slots=True)
class Run:
    output: str
    """What Chromium printed on stdout (the DOM, for ``--dump-dom``)."""
    seconds: float
    """Wall-clock time of the whole process: start, load, scripts, output, exit."""


def run(url: str, *args: str, window: tuple[int, int] = DEFAULT_WINDOW,
        virtual_time_ms: int | None = None, timeout: float = TIMEOUT_S) -> Run:
    """Run Chromium once on ``url`` with ``args`` (``--dump-dom``, ``--screenshot=...``)."""
    binary = executable()
    if binary is None:
        raise ChromiumError("no chromium on PATH: apt-get install chromium (make test does)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        argv = [binary, *FLAGS, f"--user-data-dir={profile}",
                f"--window-size={window[0]},{window[1]}", *args]
        if virtual_time_ms is not None:
            argv.append(f"--virtual-time-budget={int(virtual_time_ms)}")
        argv.append(url)
        began = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, "HOME": profile})
        except subprocess.TimeoutExpired as exc:
            raise ChromiumError(f"chromium did not finish {url} within {timeout} s") from exc
        seconds = time.monotonic() - began
    if done.returncode != 0:
        raise ChromiumError(f"chromium exited {done.returncode} on {url}: "
                            f"{done.stderr[-2000:]}")
    return Run(done.stdout, seconds)


def dump_dom(url: str, *, window: tuple[int, int] = DEFAULT_WINDOW,
             virtual_time_ms: int | None = None, timeout: float = TIMEOUT_S) -> Run:
    """The page's DOM (serialized) once it loaded and, with ``virtual_time_ms``, ran that
    long in virtual time."""
    result = run(url, "--dump-dom", window=window, virtual_time_ms=virtual_time_ms,
                 timeout=timeout)
    if "<html" not in result.output:
        raise ChromiumError(f"chromium gave no DOM for {url}: {result.output[:500]!r}")
    return result


def screenshot(url: str, path: str | os.PathLike[str], *,
               window: tuple[int, int] = DEFAULT_WINDOW, virtual_time_ms: int | None = None,
               timeout: float = TIMEOUT_S) -> Path:
    """A PNG of the page's window at ``path``."""
    target = Path(path).resolve()
    target.unlink(missing_ok=True)
    run(url, f"--screenshot={target}", window=window, virtual_time_ms=virtual_time_ms,
        timeout=timeout)
    if not target.is_file() or target.stat().st_size == 0:
        raise ChromiumError(f"chromium wrote no screenshot of {url} to {target}")
    return target
