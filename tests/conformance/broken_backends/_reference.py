"""The reference's spec names, for the broken backends to re-export and change one of."""

from reference import (
    PLACEHOLDER_TOKEN_ID,
    AsyncModelRunnerOutput,
    DraftTokenIds,
    KVConnectorOutput,
    KVConnectorStats,
    LogprobsLists,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
)

__all__ = [
    "PLACEHOLDER_TOKEN_ID",
    "AsyncModelRunnerOutput",
    "DraftTokenIds",
    "KVConnectorOutput",
    "KVConnectorStats",
    "LogprobsLists",
    "LogprobsTensors",
    "ModelRunnerOutput",
    "SamplerOutput",
]
