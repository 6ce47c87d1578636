"""The log-structured store: one append-only log per coordinator partition.

Main entry points: :class:`storage.store.Store`, :class:`storage.log.PartitionLog`,
:func:`storage.compaction.compact`, :func:`storage.dump.dump`, and the record types and codec in
:mod:`storage.records`. The on-disk format is described in ``storage/FORMAT.md``.
"""
