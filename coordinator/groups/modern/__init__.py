"""The core the KIP-848 group types share (Kafka's ``org.apache.kafka.coordinator.group.modern``):
consumer, share and streams groups all have members heartbeating with a member epoch, a group
epoch, and a target assignment at an assignment epoch. Here: member-epoch fencing and the
members' session and rebalance timers (``members``), the effective settings of a group, the
broker's ``group.<type>.*`` configs with the group's ``<type>.*`` overrides (``settings``), the
environment handlers get and its installation (``env``), the replay of the record shapes every
type writes (``replay``), seed 000's assignment interval (``target``) and the describe answer's
common part (``describe``).

Imports nothing of the group types: they build on it."""
