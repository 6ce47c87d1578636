"""Streams groups (KIP-1071, StreamsGroupHeartbeat): the group and its members (``model``), the
topology and its configuration against the metadata (``topology``), the heartbeat
(``heartbeat``) with reconciliation (``reconcile``), target assignment with seed 000's batching
and offload (``target``, ``task_job``), records and their replay (``records``, ``replay``),
interactive-query endpoints (``endpoints``) and StreamsGroupDescribe (``describe``).

Keep this ``__init__`` empty of imports: worker processes import ``task_job``."""
