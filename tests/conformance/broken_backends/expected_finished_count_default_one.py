"""KVConnectorOutput.expected_finished_count defaults to 1 instead of 0."""

from dataclasses import dataclass, field

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput as _KVConnectorOutput
from broken_backends._reference import KVConnectorStats


@dataclass
class KVConnectorOutput:
    finished_sending: set[str] | None = None
    finished_recving: set[str] | None = None
    kv_connector_stats: KVConnectorStats | None = None
    invalid_block_ids: set[int] = field(default_factory=set)
    expected_finished_count: int = 1

    is_empty = _KVConnectorOutput.is_empty
