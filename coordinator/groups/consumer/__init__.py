"""Consumer groups (KIP-848, ConsumerGroupHeartbeat): the group and its members (``model``), the
heartbeat (``heartbeat``), target assignment with seed 000's batching (``target``) and offload
(``offload``), reconciliation (``reconcile``), regex subscriptions (``regex``), topic changes
(``topics``), the lag assignor's inputs (``lag_inputs``), their records (``records``, ``replay``,
``assignment_forms``), ConsumerGroupDescribe (``describe``), and mixed groups with migration to
and from classic (``migration``)."""
