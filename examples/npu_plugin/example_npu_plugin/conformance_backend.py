"""The plugin as vllm-outputs-suite sees it: ``--backend example_npu_plugin.conformance_backend:BACKEND``."""

from conformance import Backend, constructed_like_vllm
from example_npu_plugin import outputs, worker

BACKEND = Backend(
    name="example-npu",
    module=outputs,
    devices=("cpu", "npu"),
    producer_devices=("npu",),  # the async output is written for torch.npu
    spec_revision=outputs.PINNED_RELEASE,
    gather_logprobs=worker.gather_logprobs,
    unpad_sampled_token_ids=worker.unpad_sampled_token_ids,
    make_async_output=constructed_like_vllm(worker.NPUAsyncModelRunnerOutput),
    # The kinds of step our runner hands the async output (all but pooling: we serve no
    # pooling models); a runner of one token per request would declare ("logprobs",).
    steps=("multi-token-rows", "discarded-rows", "logprobs", "prompt-logprobs", "empty-batch"),
)
