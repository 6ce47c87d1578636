"""Share groups (KIP-932, ShareGroupHeartbeat, ShareFetch, ShareAcknowledge): the group and its
members (``model``), the heartbeat (``heartbeat``) with share-state initialization
(``initialize``), target assignment with seed 000's batching (``target``) and offload
(``offload``), records and their replay (``records``, ``replay``), ShareGroupDescribe
(``describe``); and share partitions: the state machine (``partition``), its records
(``state_records``), share sessions and the fetch and acknowledge handlers."""
