"""The first runner's own AsyncGPUModelRunnerOutput of the release on the path, changed in
ways vLLM's consumer reads alike: each must pass.

``identity_boundaries()``: logprobs of one token per request handed over with the
boundaries ``[0, 1, ..., n]`` where the release's runner leaves them None (a producer that
always unpads through the rejection sampler's path).  Import it only with a release
(installed or a stub tree) first on the path.
"""

from __future__ import annotations

import vllm
from vllm.v1 import outputs
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput

from conformance import Backend, constructed_like_vllm


class IdentityBoundaries(AsyncGPUModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        logprobs = output.logprobs
        if logprobs is not None and logprobs.cu_num_generated_tokens is None:
            rows = len(logprobs.logprob_token_ids)
            output.logprobs = logprobs._replace(cu_num_generated_tokens=list(range(rows + 1)))
        return output


def identity_boundaries() -> Backend:
    return Backend(
        name="vllm-first-runner-identity-boundaries",
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(IdentityBoundaries),
    )
