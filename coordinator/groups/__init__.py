"""Group coordination, one package per group type, each building on ``common``:

- ``common/``: a partition's state, offsets, configs, assignor jobs and offload;
- ``modern/``: the core consumer, share and streams groups share (Kafka's ``modern`` package):
  members, epochs and timers, subscription metadata, when a target is due and its
  installation, effective settings, the shared record shapes and their replay, describe;
- ``classic/``: classic groups (JoinGroup/SyncGroup);
- ``consumer/``: consumer groups (KIP-848), mixed groups and migration; it builds on ``classic``;
- ``share/`` (KIP-932) and ``streams/`` (KIP-1071), beside it on ``modern/``.

The modules here work across types: ``replay`` (the table from record types to replayers, and
the shard built with it), ``classic_protocol`` (classic requests to a classic or a mixed group),
``admin`` (describe, list, delete), ``commit_validation``, ``expiration`` (KIP-211) and
``metrics_view``. Imports only go one way: these modules -> group types -> ``modern`` and
``common``.

Every group of a coordinator partition lives in ``CoordinatorShard.groups`` under its group id;
a group id names one group of one type at a time.
"""
