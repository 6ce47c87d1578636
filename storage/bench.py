"""Store replay benchmark: ``run_store_replay(records=1_000_000)`` (``python -m coordinator bench
store`` wires it). Writes a store of realistic offset commits, reopens it as a restart does, and
times the replay: recovery scan (CRC of every batch), raw record iteration, and record decoding.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from storage.dump import partitions_in
from storage.framing import HEADER
from storage.log import partition_dir
from storage.records import OffsetCommitKey, OffsetCommitValue, decode_record, encode_record
from storage.replay import replay_records
from storage.segment import plan_directory
from storage.store import Store


def _write(log_dir: Path, records: int, partitions: int, batch_size: int) -> tuple[int, float]:
    """Offset commits of 1000 groups over 20 topics x 16 partitions, ``batch_size`` per commit
    request (one batch), as a consumer commits its assigned partitions together."""
    topic_ids = [uuid.UUID(int=i + 1) for i in range(20)]
    started = time.perf_counter()
    written = 0
    ts = 1_700_000_000_000
    with Store.open(log_dir, partitions) as store:
        n = 0
        while written < records:
            group = f"consumer-group-{n % 1000}"
            shard = hash(group) % partitions
            batch = []
            for i in range(min(batch_size, records - written)):
                t = (n + i) % 20
                key = OffsetCommitKey(group=group, topic=f"orders-{t}", partition=(n + i) % 16)
                value = OffsetCommitValue(
                    offset=n * 100 + i,
                    leader_epoch=3,
                    metadata="",
                    commit_timestamp=ts + n,
                    topic_id=topic_ids[t],
                )
                batch.append(encode_record(key, value))
            store.partition(shard).append_batch(batch, ts + n)
            written += len(batch)
            n += 1
        store.flush()
        size = store.size_bytes
    return size, time.perf_counter() - started


def segment_files(log_dir: Path) -> list[Path]:
    """Every segment file of a store, partition by partition, oldest first."""
    return [path for p in partitions_in(log_dir)
            for path in plan_directory(partition_dir(log_dir, p)).segments.values()]


def raw_read(paths: list[Path]) -> dict[str, float]:
    """The ceiling of any replay of these files: read each one whole, in order, and walk its
    batch framing (each batch's length and record count, nothing checked or decoded).
    ``raw_read_s``, ``raw_read_bytes_per_s``, ``raw_read_records_per_s``."""
    length_at = struct.Struct(">I").unpack_from
    count_at = HEADER.size - 4
    started = time.perf_counter()
    size = records = 0
    for path in paths:
        buf = path.read_bytes()
        end = len(buf)
        size += end
        pos = 0
        while pos + HEADER.size <= end:
            (length,) = length_at(buf, pos)
            (count,) = length_at(buf, pos + count_at)
            records += count
            pos += 4 + length
    seconds = time.perf_counter() - started
    return {"raw_read_s": round(seconds, 4), "raw_read_records": records,
            "raw_read_bytes_per_s": round(size / seconds),
            "raw_read_records_per_s": round(records / seconds)}


def run_store_replay(
    records: int = 1_000_000,
    *,
    partitions: int = 50,
    batch_size: int = 5,
    directory: str | None = None,
) -> dict[str, Any]:
    """Write ``records`` offset commits into a fresh store, then time a full replay.

    Returns a dict of numbers: ``open_s`` (recovery of all partitions), ``read_s`` (iterate the
    raw records), ``decode_s`` (iterate and decode every key and value), ``replay_s`` (what a
    coordinator partition's load reads: the records replay needs, picked from the raw bytes and
    decoded, ``storage.replay``), the matching records/s, ``decode_all_records_per_s`` =
    records / (open + decode every record) and ``replay_records_per_s`` = records / (open +
    replay).
    """
    tmp = Path(tempfile.mkdtemp(prefix="store-bench-", dir=directory))
    try:
        size, write_s = _write(tmp, records, partitions, batch_size)

        t0 = time.perf_counter()
        store = Store.open(tmp, partitions)
        t1 = time.perf_counter()
        raw = sum(1 for p in range(partitions) for _ in store.partition(p).read())
        t2 = time.perf_counter()
        decoded = 0
        for p in range(partitions):
            for _off, _ts, key, value in store.partition(p).read():
                decode_record(key, value)
                decoded += 1
        t3 = time.perf_counter()
        replayed = read_for_replay = 0
        for p in range(partitions):
            needed, offered = replay_records(store.partition(p))
            replayed += len(needed)
            read_for_replay += offered
        t4 = time.perf_counter()
        store.close()
        ceiling = raw_read(segment_files(tmp))
        if (raw != records or decoded != records or read_for_replay != records
                or ceiling["raw_read_records"] != records):
            raise AssertionError(f"read {raw}/{decoded}/{read_for_replay}/"
                                 f"{ceiling['raw_read_records']} records, wrote {records}")
        open_s, read_s, decode_s, replay_s = t1 - t0, t2 - t1, t3 - t2, t4 - t3
        return {
            "records": records,
            "partitions": partitions,
            "batch_size": batch_size,
            "store_bytes": size,
            "bytes_per_record": round(size / records, 1),
            "write_s": round(write_s, 3),
            "write_records_per_s": round(records / write_s),
            "open_s": round(open_s, 3),
            "read_s": round(read_s, 3),
            "decode_s": round(decode_s, 3),
            "read_records_per_s": round(records / read_s),
            "decode_records_per_s": round(records / decode_s),
            "decode_all_records_per_s": round(records / (open_s + decode_s)),
            "replay_s": round(replay_s, 3),
            "records_replayed": replayed,
            "replay_records_per_s": round(records / (open_s + replay_s)),
            **{k: v for k, v in ceiling.items() if k != "raw_read_records"},
            "replay_vs_raw_read": round(records / (open_s + replay_s)
                                        / ceiling["raw_read_records_per_s"], 4),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    print(json.dumps(run_store_replay(n), indent=2))
