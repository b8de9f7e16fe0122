"""The runtime's memory: offsets, configs and statuses, each on a Table (in memory
or a compacted topic of the log)."""

from connect.storage.configs import ClusterConfig, ConfigStore, TargetState
from connect.storage.offsets import OffsetStore, partition_key
from connect.storage.status import State, Status, StatusStore
from connect.storage.table import LogTable, MemoryTable, Table

__all__ = [
    "ClusterConfig",
    "ConfigStore",
    "LogTable",
    "MemoryTable",
    "OffsetStore",
    "State",
    "Status",
    "StatusStore",
    "Table",
    "TargetState",
    "partition_key",
]
