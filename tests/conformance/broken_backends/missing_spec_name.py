"""Unresolvable: DraftTokenIds is missing."""

from reference import (  # noqa: F401
    AsyncModelRunnerOutput,
    KVConnectorOutput,
    LogprobsLists,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
)
