"""Group types, one module each: classic (JoinGroup/SyncGroup), consumer (KIP-848).

Every group of a coordinator partition lives in ``CoordinatorShard.groups`` under its group id;
a group id names one group of one type at a time.
"""
