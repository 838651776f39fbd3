"""KVConnectorOutput.is_empty treats expected_finished_count as output."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput as _KVConnectorOutput


class KVConnectorOutput(_KVConnectorOutput):
    def is_empty(self):
        return super().is_empty() and not self.expected_finished_count
