"""``pad_sampled_token_ids`` and ``unpad_sampled_token_ids`` at decode and spec-decode shapes.

``num_drafts = 0`` is plain decoding (one token per request, shape ``[n, 1]``);
otherwise each request keeps 1..num_drafts+1 tokens and rows are padded with -1.
Unpadding is held against vLLM's way of doing it, written here from its
description: copy the batch to the host, then for each row build the boolean mask
``(row != -1) & (row < vocab_size)`` and convert ``row[mask]`` with ``tolist()``.
Both start from the same device tensor and both return the same lists.

On a GPU the copy is part of what is compared: vLLM's ``parse_output`` (its
synchronous path) copies with a blocking ``.cpu()`` into pageable memory, the
reference into pinned memory, about half the latency of a small copy (see
``reference_speedups.to_host``).  vLLM's async outputs copy into pinned memory
themselves and unpad the host copy, so on ``cpu`` (no copy at all) the ratio is the
unpadding's alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from .backends import vllm_own_at_hand, vllm_own_producer
from .common import (
    TARGET_SECONDS,
    VOCAB_SIZE,
    DeviceBenchmark,
    accepted_token_lists,
    at_steady_state,
    backend_params,
    baseline,
    device_params,
    sizes,
)
from .interleaved import ratio_samples

NUM_REQS_VALUES = [1, 4, 32, 256, 1024]
NUM_DRAFTS_VALUES = [0, 3, 8]
NUM_REQS = sizes(NUM_REQS_VALUES, 256)
NUM_DRAFTS = sizes(NUM_DRAFTS_VALUES, 3)
PLACEHOLDER_TOKEN_ID = -1


def unpad_mask_per_row(sampled: torch.Tensor, vocab_size: int) -> list[list[int]]:
    """vLLM's unpadding (``RejectionSampler.parse_output``): one host copy, the mask of
    valid ids made once for the whole batch, then each row masked and ``tolist()``-ed."""
    host = sampled.cpu().numpy()
    valid = (host != PLACEHOLDER_TOKEN_ID) & (host < vocab_size)
    return [row[valid[i]].tolist() for i, row in enumerate(host)]


class Pad(DeviceBenchmark):
    """``pad_sampled_token_ids``: lists of accepted ids to the sampler's padded tensor."""

    params: ClassVar[list[list[Any]]] = [
        backend_params("pad_sampled_token_ids"),
        device_params(),
        NUM_REQS,
        NUM_DRAFTS,
    ]
    param_names: ClassVar[list[str]] = [*DeviceBenchmark.param_names, "num_reqs", "num_drafts"]

    def setup(self, backend: str, device: str, num_reqs: int, num_drafts: int) -> None:
        self.pad = self.use(backend, device).producer("pad_sampled_token_ids")
        self.token_ids = accepted_token_lists(num_reqs, num_drafts)
        self.max_len = num_drafts + 1
        self.sync()

    def time_pad_sampled_token_ids(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> None:
        self.pad(self.token_ids, max_len=self.max_len, device=self.device)
        self.sync()


class Unpad(DeviceBenchmark):
    """``unpad_sampled_token_ids`` against vLLM's mask-per-row way, same device tensor."""

    params: ClassVar[list[list[Any]]] = [
        backend_params("unpad_sampled_token_ids"),
        device_params(),
        # The 2x target holds at every shape: its grid stays whole in the main job.
        sizes(NUM_REQS_VALUES, 256, target=True),
        sizes(NUM_DRAFTS_VALUES, 3, target=True),
    ]
    param_names: ClassVar[list[str]] = Pad.param_names

    def setup(self, backend: str, device: str, num_reqs: int, num_drafts: int) -> None:
        self.unpad = self.use(backend, device).producer("unpad_sampled_token_ids")
        token_ids = accepted_token_lists(num_reqs, num_drafts)
        padded = np.full((num_reqs, num_drafts + 1), PLACEHOLDER_TOKEN_ID, dtype=np.int32)
        for i, row in enumerate(token_ids):
            padded[i, : len(row)] = row
        self.sampled = torch.from_numpy(padded).to(device)
        at_steady_state(lambda: self.unpad(self.sampled, vocab_size=VOCAB_SIZE))
        self.sync()

    def time_unpad_sampled_token_ids(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> None:
        self.unpad(self.sampled, vocab_size=VOCAB_SIZE)
        self.sync()

    @baseline
    def time_unpad_vllm_mask_per_row(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> None:
        unpad_mask_per_row(self.sampled, VOCAB_SIZE)
        self.sync()

    def track_unpad_speedup_over_vllm(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> dict[str, Any]:
        # The target (>= 2) as a number in the results: timed interleaved.
        return ratio_samples(
            lambda: self.time_unpad_vllm_mask_per_row(backend, device, num_reqs, num_drafts),
            lambda: self.time_unpad_sampled_token_ids(backend, device, num_reqs, num_drafts),
            TARGET_SECONDS,
        )

    track_unpad_speedup_over_vllm.unit = "speedup"  # type: ignore[attr-defined]


def vllm_parse_output() -> Any:
    """vLLM's own ``RejectionSampler.parse_output(sampled, vocab_size)``: the installed
    vLLM's where it imports here, else that of the peer release's texts; else None."""
    try:
        from vllm.v1.sample.rejection_sampler import RejectionSampler
    except Exception:
        unpad = vllm_own_producer("unpad_sampled_token_ids")
        if unpad is None:
            return None
        # vLLM's own call, not the suite's adapter around it (a second pass over rows).
        own = getattr(unpad, "parse_output", None)
        return own or (lambda sampled, vocab_size: unpad(sampled, vocab_size=vocab_size))
    return RejectionSampler.parse_output


class UnpadBesideVllm(DeviceBenchmark):
    """``unpad_sampled_token_ids`` against vLLM's own ``RejectionSampler.parse_output``.

    vLLM's own from an installed vLLM, else from the peer release's texts (fetched);
    skipped where neither is to be had.  parse_output copies to the host, masks
    ``-1`` and ids ``>= vocab_size`` and converts each row (0.12.0 on it also returns
    the cu counts it was asked for: None here), the same lists as unpadding.
    """

    # The grid of Unpad's target where vLLM is installed; elsewhere one shape says why
    # it is skipped.
    params: ClassVar[list[list[Any]]] = [
        *Unpad.params[:2],
        sizes(NUM_REQS_VALUES, 256, target=vllm_own_at_hand()),
        sizes(NUM_DRAFTS_VALUES, 3, target=vllm_own_at_hand()),
    ]
    param_names: ClassVar[list[str]] = Unpad.param_names
    # Set by Unpad.setup, which this class's setup borrows.
    unpad: Callable[..., Any]
    sampled: torch.Tensor

    def setup(self, backend: str, device: str, num_reqs: int, num_drafts: int) -> None:
        self.parse_output = vllm_parse_output()
        if self.parse_output is None:
            raise NotImplementedError(
                "vLLM's RejectionSampler.parse_output neither imports here nor comes from "
                "the peer release's texts (python -m conformance.cli.fetch_releases --all)"
            )
        Unpad.setup(self, backend, device, num_reqs, num_drafts)  # type: ignore[arg-type]

    def _ours(self) -> None:
        self.unpad(self.sampled, vocab_size=VOCAB_SIZE)
        self.sync()

    @baseline
    def time_unpad_vllm_parse_output(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> None:
        self.parse_output(self.sampled, VOCAB_SIZE)
        self.sync()

    def track_unpad_speedup_over_vllm_parse_output(
        self, backend: str, device: str, num_reqs: int, num_drafts: int
    ) -> dict[str, Any]:
        return ratio_samples(
            lambda: self.time_unpad_vllm_parse_output(backend, device, num_reqs, num_drafts),
            self._ours,
            TARGET_SECONDS,
        )

    track_unpad_speedup_over_vllm_parse_output.unit = "speedup"  # type: ignore[attr-defined]
