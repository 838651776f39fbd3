"""An async output at 0.14.0 that hands back a new ModelRunnerOutput of the ids and
rows, not the runner's: the KV connector's output and the NaN counts the runner put on
it are lost (vLLM's get_output() finishes the runner's own and returns it)."""

import dataclasses
from dataclasses import replace

from conformance.backends.known import reference_backend

_REFERENCE = reference_backend("0.14.0")
_BASE = _REFERENCE.module.RunnerAsyncModelRunnerOutput


class RebuildsOutput(_BASE):
    def get_output(self):
        finished = super().get_output()
        kept = ("req_ids", "req_id_to_index", "sampled_token_ids", "logprobs",
                "prompt_logprobs_dict", "pooler_output")  # fmt: skip
        fields = {f.name for f in dataclasses.fields(finished)}
        return type(finished)(**{n: getattr(finished, n) for n in kept if n in fields})


def _backend():
    from conformance import constructed_like_vllm

    return replace(
        _REFERENCE, name="rebuilds-output", make_async_output=constructed_like_vllm(RebuildsOutput)
    )


BACKEND = _backend()
