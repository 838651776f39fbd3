"""Async outputs at 0.34.0 that get the NaN counts the runner hands over wrong.

``BACKEND``: takes ``num_nans`` and drops the counts (the output keeps none).
``REVERSED``: maps the counts to the requests in reverse order.
``NOT_TAKEN``: its constructor takes no ``num_nans``: its runner hands none over, so the
check is not applicable rather than failed.
"""

from dataclasses import replace

from conformance.backends.known import reference_backend

_REFERENCE = reference_backend("0.34.0")
_BASE = _REFERENCE.module.RunnerAsyncModelRunnerOutput


class DropsNanCounts(_BASE):
    def get_output(self):
        output = super().get_output()
        output.num_nans_in_logits = None  # as if it never copied them
        return output


class ReversedNanCounts(_BASE):
    def get_output(self):
        output = super().get_output()
        if output.num_nans_in_logits:
            ids = list(output.num_nans_in_logits)
            counts = list(output.num_nans_in_logits.values())
            output.num_nans_in_logits = dict(zip(ids, reversed(counts), strict=True))
        return output


class TakesNoNanCounts(_BASE):
    def __init__(
        self,
        model_runner_output,
        sampled_token_ids,
        logprobs_tensors=None,
        invalid_req_indices=(),
        async_output_copy_stream=None,
        vocab_size=None,
        device=None,
    ):
        super().__init__(
            model_runner_output,
            sampled_token_ids,
            logprobs_tensors,
            invalid_req_indices,
            async_output_copy_stream,
            vocab_size,
            device,
        )


def _with(cls, name):
    from conformance import constructed_like_vllm

    return replace(_REFERENCE, name=name, make_async_output=constructed_like_vllm(cls))


BACKEND = _with(DropsNanCounts, "drops-nan-counts")
REVERSED = _with(ReversedNanCounts, "reversed-nan-counts")
NOT_TAKEN = _with(TakesNoNanCounts, "takes-no-nan-counts")
