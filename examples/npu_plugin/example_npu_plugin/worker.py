"""The plugin's producers: what its model runner does on the npu after sampling.

``NPUAsyncModelRunnerOutput`` takes what the runner holds (the names of vLLM
0.12.0's own async output), starts the device-to-host copies on a side stream of
``torch.npu`` and returns at once; ``get_output()`` waits for them and finishes the
runner's ``ModelRunnerOutput`` as vLLM 0.12.0 does.  On a machine without an npu the
conformance suite installs a simulated ``torch.npu``, so all of this runs in CI.
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np
import torch

from example_npu_plugin.outputs import AsyncModelRunnerOutput, LogprobsTensors

PLACEHOLDER_TOKEN_ID = -1


class NPUAsyncModelRunnerOutput(AsyncModelRunnerOutput):
    def __init__(
        self,
        model_runner_output,
        sampled_token_ids: torch.Tensor,
        logprobs_tensors,
        invalid_req_indices: list[int],
        async_output_copy_stream,
        vocab_size: int,
    ):
        self._output = model_runner_output
        self._invalid_req_indices = invalid_req_indices
        self._vocab_size = vocab_size
        # Held until the copies are done, so the device memory is not reused under them.
        self._device_tensors = (sampled_token_ids, logprobs_tensors)
        self._copied = torch.npu.Event()
        compute_stream = torch.npu.current_stream()
        with torch.npu.stream(async_output_copy_stream):
            # The copies must not start before the kernels that produce the values.
            async_output_copy_stream.wait_stream(compute_stream)
            self._sampled_cpu = sampled_token_ids.to("cpu", non_blocking=True)
            self._logprobs_cpu = (
                logprobs_tensors.to_cpu_nonblocking() if logprobs_tensors is not None else None
            )
            self._copied.record()

    def get_output(self):
        self._copied.synchronize()
        self._device_tensors = None
        sampled = self._sampled_cpu
        cu = None
        if sampled.shape[-1] == 1:
            rows = sampled.tolist()
        else:
            array = sampled.numpy()
            kept = (array != PLACEHOLDER_TOKEN_ID) & (array < self._vocab_size)
            if self._logprobs_cpu is not None:
                # Request i owns its kept tokens' logprobs rows (a discarded one's too).
                cu = [0, *accumulate(int(n) for n in kept.sum(axis=1))]
            rows = [row[mask].tolist() for row, mask in zip(array, kept, strict=True)]
        for i in self._invalid_req_indices:
            rows[i] = []
        output = self._output
        output.sampled_token_ids = rows
        if self._logprobs_cpu is not None:
            output.logprobs = self._logprobs_cpu.tolists(cu)
        return output


def gather_logprobs(logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor):
    """Column 0 the sampled token, then the top-k; the sampled token's 1-based rank."""
    token_ids = token_ids.unsqueeze(-1)
    token_logprobs = logprobs.gather(-1, token_ids)
    top_logprobs, top_ids = torch.topk(logprobs, num_logprobs, dim=-1)
    # Ties count against the token: the rank is how many entries are >= its logprob.
    ranks = (logprobs >= token_logprobs).sum(-1)
    ids = torch.cat((token_ids, top_ids), dim=1).to(torch.int32)
    return LogprobsTensors(ids, torch.cat((token_logprobs, top_logprobs), dim=1), ranks)


def unpad_sampled_token_ids(sampled: torch.Tensor, *, vocab_size: int | None = None):
    """Rows without the -1 padding.

    Known deviation (see xfails.toml): ids >= vocab_size are kept; our sampler never
    emits them, so we do not pay for the second mask.
    """
    array = sampled.cpu().numpy()
    return [row[row != PLACEHOLDER_TOKEN_ID].tolist() for row in array]


__all__ = ["NPUAsyncModelRunnerOutput", "gather_logprobs", "np", "unpad_sampled_token_ids"]
