"""Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): the group and its members
(``model``), the join phase and its timers (``join``), what follows it (``session``), and the
embedded consumer protocol of its members (``consumer_protocol``)."""
