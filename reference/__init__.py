"""Reference implementation of ``vllm.v1.outputs`` at spec revision 2025.10.

The seven spec types are transcribed in :mod:`reference.outputs`; the operations
the spec implies (padding, unpadding, gathering logprobs, an async output for any
torch device, and one built from what vLLM's runner hands over) live beside them.  This package is also the ``reference`` backend of
the conformance suite and the default subject of the benchmarks.
"""

from reference.async_output import DeviceAsyncModelRunnerOutput
from reference.constants import PLACEHOLDER_TOKEN_ID
from reference.kv_connector_stats import KVConnectorStats
from reference.logprobs_ops import gather_logprobs, gather_logprobs_of_logits
from reference.outputs import (
    AsyncModelRunnerOutput,
    DraftTokenIds,
    KVConnectorOutput,
    LogprobsLists,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
)
from reference.revisions.rev_2025_10 import REVISION as _REVISION
from reference.runner_async_output import RunnerAsyncOutputCopies
from reference.sampler_ops import pad_sampled_token_ids, unpad_sampled_token_ids

#: The distribution this package is part of (vllm_outputs_suite_guard reads this line).
__distribution__ = "vllm-outputs-suite"

SPEC_REVISION = "2025.10"


class RunnerAsyncModelRunnerOutput(RunnerAsyncOutputCopies, AsyncModelRunnerOutput):
    __doc__ = RunnerAsyncOutputCopies.__doc__
    contract = _REVISION.async_output


__all__ = [
    "PLACEHOLDER_TOKEN_ID",
    "SPEC_REVISION",
    "AsyncModelRunnerOutput",
    "DeviceAsyncModelRunnerOutput",
    "DraftTokenIds",
    "KVConnectorOutput",
    "KVConnectorStats",
    "LogprobsLists",
    "LogprobsTensors",
    "ModelRunnerOutput",
    "RunnerAsyncModelRunnerOutput",
    "SamplerOutput",
    "gather_logprobs",
    "gather_logprobs_of_logits",
    "pad_sampled_token_ids",
    "unpad_sampled_token_ids",
]
