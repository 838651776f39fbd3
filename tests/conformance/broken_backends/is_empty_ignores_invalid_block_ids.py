"""KVConnectorOutput.is_empty forgets invalid_block_ids."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput as _KVConnectorOutput


class KVConnectorOutput(_KVConnectorOutput):
    def is_empty(self):
        return (
            not self.finished_sending and not self.finished_recving and not self.kv_connector_stats
        )
