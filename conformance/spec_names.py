"""The spec's seven type names: what a backend exposes and a vLLM text defines.

A module of its own, importing nothing, so that every package of the suite names them
from one place without importing another package.
"""

SPEC_NAMES = (
    "AsyncModelRunnerOutput",
    "DraftTokenIds",
    "KVConnectorOutput",
    "LogprobsLists",
    "LogprobsTensors",
    "ModelRunnerOutput",
    "SamplerOutput",
)
