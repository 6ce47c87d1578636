"""``python -m coordinator soak fuzz``: malformed frames of every API while a healthy client
heartbeats; one JSON line says what held.

A server (``serve --profile test``, ``socket.request.max.bytes`` 1 MiB, its address space
limited to a small laptop's 4 GB) takes batches of frames on several connections at once:
valid requests of every (API, version) the registry serves with random well-typed values,
the same mutated (``mutate.py``: sizes, versions, api keys, lengths and counts made absurd,
tagged-field garbage, bytes flipped, inserted, deleted, truncated), and random bytes. Each batch
goes on a connection of its own, which is then half-closed and read until the server closes
it. Meanwhile a KIP-848 member heartbeats from a process of its own (``healthy.py``).

A crash is: the server process died (or did not stop cleanly at the end), the server logged an
error (an unhandled exception: ``request failed``, ``handler failed``, a traceback), or the
healthy client failed (an error code, a lost connection, no answer within 5 s). Also counted,
and also failures: ``stalls`` (a half-closed connection the server did not close within 10 s)
and ``bad_answers`` (a response stream that is not whole frames answering the requests sent,
in order). Exit code 0 when all are 0, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bench.procfs import status_kb
from ..testing.server_process import ServerProcess
from .corpus import Served, served
from .healthy import HealthyClient
from .mutate import MAX_BYTES, Frame, batch

__all__ = ["FuzzStats", "add_arguments", "run", "soak"]

DRAIN_TIMEOUT_S = 10.0
ADDRESS_SPACE_GB = 4
SERVER_OVERRIDES = {
    "socket.request.max.bytes": str(MAX_BYTES),
    "connections.max.idle.ms": "30000",
    "metrics.listener": "",
    "control.listener": "",
    # the KIP-848 draft's client-side assignor APIs are served, and fuzzed, too (seed 003)
    "group.consumer.client.assignors.enable": "true",
}


@dataclass(slots=True)
class FuzzStats:
    frames: int = 0
    batches: int = 0
    answers: int = 0
    stalls: int = 0
    bad_answers: int = 0
    problems: list[str] = field(default_factory=list)
    """What went wrong, the first few of each (the batch's frames in hex)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, problem: str) -> None:
        with self.lock:
            if len(self.problems) < 20:
                self.problems.append(problem)


def exchange(bootstrap: str, frames: Sequence[Frame]) -> tuple[bytes, bool]:
    """Send ``frames`` on one connection, half-close it, read until the server closes it.
    Returns what was read and whether the server closed it within ``DRAIN_TIMEOUT_S``."""
    host, port = bootstrap.rsplit(":", 1)
    received = bytearray()
    with socket.create_connection((host, int(port)), timeout=DRAIN_TIMEOUT_S) as sock:
        try:
            sock.sendall(b"".join(f.data for f in frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close on a bad frame while we are still sending
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                break
            except OSError:
                return bytes(received), True
            if not chunk:
                return bytes(received), True
            received += chunk
    return bytes(received), False


def answered_ids(data: bytes) -> list[int] | None:
    """The correlation ids of the whole response frames in ``data``; None if it is not made
    of whole frames."""
    ids = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < 8:
            return None
        size, correlation_id = struct.unpack_from(">ii", data, offset)
        if not 4 <= size <= len(data) - offset - 4:
            return None
        ids.append(correlation_id)
        offset += 4 + size
    return ids


def _is_subsequence(ids: list[int], expected: list[int]) -> bool:
    remaining = iter(expected)
    return all(any(cid == want for want in remaining) for cid in ids)


def _describe(frames: Sequence[Frame]) -> str:
    return " ".join(("M:" if f.mutated else "V:") + f.data[:64].hex() for f in frames)


def _fuzz(bootstrap: str, corpus: Sequence[Served], seed: int, target: int, stats: FuzzStats,
          stop: threading.Event) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        with stats.lock:
            if stats.frames >= target:
                return
        frames = batch(rng, corpus)
        try:
            data, closed = exchange(bootstrap, frames)
        except OSError as exc:  # refused or reset at once: has the server gone?
            stats.note(f"connection failed ({exc!r}) on batch {_describe(frames)}")
            stop.set()
            return
        ids = answered_ids(data)
        with stats.lock:
            stats.frames += len(frames)
            stats.batches += 1
            stats.answers += len(ids or ())
            if not closed:
                stats.stalls += 1
            # Answers are whole frames, for requests of this batch, in request order (some
            # get none: Produce with acks=0; the connection closes at a bad one).
            good = ids is not None and (not all(f.framed for f in frames) or _is_subsequence(
                ids, [f.correlation_id for f in frames]))
            if not good:
                stats.bad_answers += 1
        if not closed:
            stats.note(f"not closed within {DRAIN_TIMEOUT_S}s: {_describe(frames)}")
        if not good:
            stats.note(f"bad answers {ids} to {_describe(frames)}")


def _server_errors(server: ServerProcess) -> list[str]:
    """What the server logged that an unhandled exception leaves: error-level events, and
    tracebacks outside the JSON lines."""
    found = []
    for event in server.events_of():
        if event.get("level") in ("error", "critical") or "exception" in event:
            detail = str(event.get("exception", "")).strip().splitlines()
            where = " ".join(f"{key}={event[key]}" for key in ("api", "version") if key in event)
            found.append(f"{event.get('event')} {where}: {detail[-1] if detail else event}")
    for line in server.output().splitlines():
        if line.startswith("Traceback") or "Fatal Python error" in line:
            found.append(line.strip())
    return found


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    return round((status_kb(pid, "VmHWM") or 0) / 1024.0, 1)


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def soak(frames: int, connections: int = 4, seed: int = 1,
         log_dir: Path | None = None) -> dict[str, Any]:
    """Run the fuzz soak; the figures ``soak fuzz --json`` prints."""
    corpus = served(client_assignors=True)
    with tempfile.TemporaryDirectory(prefix="soak-fuzz-") as tmp:
        server = ServerProcess((log_dir or Path(tmp)) / "data", dict(SERVER_OVERRIDES),
                               profile="test")
        started = time.monotonic()
        server.start()
        try:
            assert server.proc is not None
            pid = server.proc.pid
            server.wait_loaded()
            limit = ADDRESS_SPACE_GB * 2**30
            resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
            healthy = HealthyClient(server.bootstrap)
            joined = healthy.start()
            stats = FuzzStats()
            stop = threading.Event()
            threads = [threading.Thread(target=_fuzz, name=f"fuzz-{i}", daemon=True,
                                        args=(server.bootstrap, corpus, seed * 1000 + i, frames,
                                              stats, stop))
                       for i in range(connections if joined else 0)]
            fuzz_started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            fuzz_seconds = time.monotonic() - fuzz_started
            report = healthy.finish()
            alive = server.alive()
            rss = _peak_rss_mb(pid) if alive else None
            exit_code = server.stop() if alive else server.proc.returncode
        finally:
            server.kill()
        crashes = []
        if not alive:
            crashes.append(f"server died with exit code {exit_code}")
        elif exit_code != 0:
            crashes.append(f"server stopped with exit code {exit_code}")
        crashes += _server_errors(server)
        crashes += [f"healthy client: {failure}" for failure in report.failures]
    latencies = sorted(report.latencies_ms)
    return {
        "frames": stats.frames,
        "crashes": len(crashes),
        "healthy_p99_ms": _percentile(latencies, 0.99),
        "max_rss_mb": rss,
        "healthy_p50_ms": _percentile(latencies, 0.50),
        "healthy_max_ms": round(latencies[-1], 2) if latencies else None,
        "healthy_heartbeats": len(latencies),
        "stalls": stats.stalls,
        "bad_answers": stats.bad_answers,
        "batches": stats.batches,
        "answers": stats.answers,
        "apis": len({key for key, _ in corpus}),
        "api_versions": len(corpus),
        "connections": connections,
        "seed": seed,
        "frames_per_s": round(stats.frames / fuzz_seconds, 1) if fuzz_seconds else None,
        "seconds": round(time.monotonic() - started, 1),
        "crash_reasons": crashes[:20],
        "problems": stats.problems,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=10_000, help="frames to send in all")
    parser.add_argument("--connections", type=int, default=4,
                        help="fuzzing connections open at once")
    parser.add_argument("--seed", type=int, default=1, help="the run's random seed")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="where the server keeps its data (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="one JSON line (the default)")


def run(args: argparse.Namespace) -> int:
    if args.frames < 1 or args.connections < 1:
        print("error: --frames and --connections must be at least 1", file=sys.stderr)
        return 2
    result = soak(args.frames, args.connections, args.seed, args.log_dir)
    print(json.dumps(result))
    failed = result["crashes"] or result["stalls"] or result["bad_answers"]
    return 1 if failed else 0
