"""Async outputs at 0.30.0 that get the routed experts the runner hands over wrong.

``BACKEND``: takes ``routed_experts`` and hands over another step's (all zeros).
``NOT_TAKEN``: its constructor takes no ``routed_experts``: its runner hands none over, so
the check is not applicable rather than failed.
"""

from dataclasses import replace

import numpy as np

from conformance.backends.known import reference_backend

_REFERENCE = reference_backend("0.30.0")
_BASE = _REFERENCE.module.RunnerAsyncModelRunnerOutput


class StaleRoutedExperts(_BASE):
    def get_output(self):
        output = super().get_output()
        if output.routed_experts is not None:
            output.routed_experts = type(output.routed_experts)(
                *(np.zeros_like(part) for part in output.routed_experts)
            )
        return output


class TakesNoRoutedExperts(_BASE):
    def __init__(
        self,
        model_runner_output,
        sampled_token_ids,
        logprobs_tensors=None,
        invalid_req_indices=(),
        async_output_copy_stream=None,
        vocab_size=None,
        device=None,
        num_nans=None,
    ):
        super().__init__(
            model_runner_output,
            sampled_token_ids,
            logprobs_tensors,
            invalid_req_indices,
            async_output_copy_stream,
            vocab_size,
            device,
            num_nans,
        )


def _with(cls, name):
    from conformance import constructed_like_vllm

    return replace(_REFERENCE, name=name, make_async_output=constructed_like_vllm(cls))


BACKEND = _with(StaleRoutedExperts, "stale-routed-experts")
NOT_TAKEN = _with(TakesNoRoutedExperts, "takes-no-routed-experts")
