"""KVConnectorOutput.invalid_block_ids: every instance shares one set."""

from dataclasses import dataclass, field

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput as _KVConnectorOutput
from broken_backends._reference import KVConnectorStats

_SHARED: set[int] = set()


@dataclass
class KVConnectorOutput:
    finished_sending: set[str] | None = None
    finished_recving: set[str] | None = None
    kv_connector_stats: KVConnectorStats | None = None
    invalid_block_ids: set[int] = field(default_factory=lambda: _SHARED)
    expected_finished_count: int = 0

    is_empty = _KVConnectorOutput.is_empty
