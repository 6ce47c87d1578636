"""Message formats v0 and v1 (the "message sets" of Produce v0-2 and Fetch v0-3) and v2 record
batches, converted both ways with kafka-python's record classes.

The data plane keeps v2 batches only. A Produce v0-2 carries a message set: it is up-converted to
one v2 batch, as Kafka 3.x converts to the log's format; a Fetch v0-3 answer is down-converted to
the magic its version reads (v0-1: magic 0, v2-3: magic 1), without control batches, each record
at its own offset, as Kafka's ``LazyDownConversionRecords``.
"""

from __future__ import annotations

from .errors import MalformedFrame

# kafka-python is imported on first use: ``serve`` does not import it unless a client sends one
# of these versions (importing ``kafka`` imports its clients too).

NO_TIMESTAMP = -1
_UNBOUNDED = 1 << 31


def to_record_batch(message_set: bytes | None) -> bytes | None:
    """One v2 batch (uncompressed, no producer id) with the records of a v0/v1 message set;
    bytes that are not one are handed on as they are, for the data plane's checks to refuse
    with the partition's error (as a v3+ Produce's damaged batch is)."""
    if not message_set:
        return message_set
    try:
        return _up_converted(message_set)
    except Exception:  # kafka-python raises several types on a damaged message set
        return message_set


def _up_converted(message_set: bytes) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

    try:
        records = MemoryRecords(bytes(message_set))
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=_UNBOUNDED)
        count = 0
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            if batch.magic >= 2:
                raise MalformedFrame("a record batch where a message set was expected")
            if not batch.validate_crc():
                raise MalformedFrame("a message with a bad CRC")
            for record in batch:
                timestamp = record.timestamp if record.timestamp is not None else NO_TIMESTAMP
                builder.append(count, timestamp, record.key, record.value, [])
                count += 1
    except MalformedFrame:
        raise
    except Exception as exc:
        raise MalformedFrame(f"undecodable message set: {exc}") from exc
    if count == 0:
        raise MalformedFrame("a message set with no whole message")
    return bytes(builder.build())


def to_message_set(batches: bytes | None, magic: int, first_offset: int = 0) -> bytes | None:
    """The records of v2 batches from ``first_offset`` on (the fetch offset: Kafka's
    ``RecordsUtil.downConvert`` leaves out the first batch's records before it) as an
    uncompressed message set of ``magic`` (0 or 1); control batches (transaction markers) are
    left out, a partial batch at the end too."""
    if not batches:
        return batches
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(bytes(batches))
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=_UNBOUNDED)
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        if batch.magic >= 2 and batch.is_control_batch:
            continue
        for record in batch:
            if record.offset >= first_offset:
                timestamp = record.timestamp if magic else None
                builder.append(record.offset, timestamp, record.key, record.value)
    return bytes(builder.build())
