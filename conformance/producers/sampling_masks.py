"""The sampling masks Model Runner V2's sampler hands its async output (0.28.0 on).

Where vLLM's sampler records each request's allowed tokens (``return_sampling_mask``),
``sampler_output.sampling_mask_tensors`` holds them on the device; vLLM's ``AsyncOutput``
copies them with ``to_cpu_nonblocking()`` on its copy stream and, once its copy event
has been waited for, sets ``model_runner_output.sampling_masks`` to their ``tolists()``
(the scheduler's CSR form, a ``SamplingMaskLists``).

vLLM's class (``vllm/v1/worker/gpu/sample/output.py``) changed its fields from release to
release; what an async output calls of it did not: those two methods, ``tolists`` given
the host copy of ``num_sampled_tokens`` in some releases.  :class:`StepSamplingMasks`
offers them on the step's device, as vLLM's does for one token per request: row ``i``
keeps ``token_ids[i, :counts[i]]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from conformance.producers.runtime import StepDevice

#: Each request's allowed tokens in the step the check hands over: few, distinct per row.
_WIDTH = 4


class StepSamplingMasks:
    """``sampler_output.sampling_mask_tensors`` of a step: ``token_ids`` (int32 ``[num_reqs,
    width]``) and ``counts`` (int32 ``[num_reqs]``), on the step's device or, after
    :meth:`to_cpu_nonblocking`, their host copies."""

    def __init__(self, token_ids: torch.Tensor, counts: torch.Tensor, lists_type: type) -> None:
        self.token_ids = token_ids
        self.counts = counts
        self._lists_type = lists_type

    @classmethod
    def on(
        cls, device: StepDevice, num_reqs: int, lists_type: type
    ) -> tuple[StepSamplingMasks, tuple[np.ndarray, np.ndarray]]:
        """Masks of ``num_reqs`` requests on ``device``, and the ``(token_ids, offsets)``
        their ``tolists()`` holds: request ``i`` allows ``i % 4 + 1`` tokens, none shared
        with another request's.  ``lists_type``: the backend's ``SamplingMaskLists``,
        which :meth:`tolists` builds as vLLM's builds its own."""
        ids = torch.arange(num_reqs * _WIDTH, dtype=torch.int32).reshape(num_reqs, _WIDTH) * 7
        counts = torch.arange(num_reqs, dtype=torch.int32) % _WIDTH + 1
        masks = cls(
            device.tensor(ids, "sampling_mask_tensors.token_ids"),
            device.tensor(counts, "sampling_mask_tensors.counts"),
            lists_type,
        )
        return masks, _csr(ids.numpy(), counts.numpy())

    def to_cpu_nonblocking(self) -> StepSamplingMasks:
        if self.token_ids.device.type == "cpu":
            return self
        return StepSamplingMasks(
            self.token_ids.to("cpu", non_blocking=True),
            self.counts.to("cpu", non_blocking=True),
            self._lists_type,
        )

    def tolists(self, num_sampled_tokens: Any = None) -> Any:
        """The CSR form, as vLLM's reads it (``.cpu().numpy()``, on the host copies after
        the wait); ``num_sampled_tokens``, which some releases pass, changes nothing
        with one token per request."""
        return self._lists_type(*_csr(self.token_ids.cpu().numpy(), self.counts.cpu().numpy()))


def _csr(token_ids: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every kept id in request order, and each request's offsets into them."""
    supports = [token_ids[row, : counts[row]] for row in range(len(counts))]
    offsets = np.zeros(len(supports) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in supports], out=offsets[1:])
    return np.concatenate([np.empty(0, dtype=np.int32), *supports]), offsets
