"""A Backend with the reference's producers, one of them replaced (for module:BACKEND specs)."""

import sys
from typing import Any

import reference
from conformance import Backend, constructed_like_vllm
from conformance.backends.backend import BUILTIN_DEVICES


def backend_with(module_name: str, **replaced: Any) -> Backend:
    producers = {
        "pad_sampled_token_ids": reference.pad_sampled_token_ids,
        "unpad_sampled_token_ids": reference.unpad_sampled_token_ids,
        "gather_logprobs": reference.gather_logprobs,
        "make_async_output": reference.RunnerAsyncModelRunnerOutput,
    }
    chosen = {**producers, **replaced}
    chosen["make_async_output"] = constructed_like_vllm(chosen["make_async_output"])
    return Backend(
        name=module_name.rpartition(".")[2],
        module=sys.modules[module_name],
        devices=BUILTIN_DEVICES,
        # As the reference's: written for any torch device, CPU included.
        producer_devices=BUILTIN_DEVICES,
        **chosen,
    )
