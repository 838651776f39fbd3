"""``KVConnectorStats``: opaque in the spec, given the minimal shape vLLM uses.

The spec only names the type (as the annotation of
``KVConnectorOutput.kv_connector_stats``).  vLLM's class is a dataclass holding a
``data`` dict that connectors fill with their own metrics.  It deliberately
defines no ``__bool__``: ``KVConnectorOutput.is_empty`` tests it with ``not``, so an
instance is truthy even when its dict is empty, exactly as in vLLM.
"""

from dataclasses import dataclass, field
from typing import Any

__all__ = ["KVConnectorStats"]


@dataclass
class KVConnectorStats:
    """Connector-specific transfer metrics; ``data`` is free-form."""

    data: dict[str, Any] = field(default_factory=dict)

    def is_empty(self) -> bool:
        """True when no metric has been recorded."""
        return not self.data

    def reset(self) -> None:
        """Forget every recorded metric (a connector calls this after reporting)."""
        self.data = {}
