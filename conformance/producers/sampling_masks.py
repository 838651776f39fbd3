"""The sampling masks Model Runner V2's sampler hands its async output (0.28.0 on).

Where vLLM's sampler records each request's allowed tokens (``return_sampling_mask``),
``sampler_output.sampling_mask_tensors`` holds them on the device; vLLM's ``AsyncOutput``
copies them with ``to_cpu_nonblocking()`` on its copy stream and, once its copy event
has been waited for, sets ``model_runner_output.sampling_masks`` to their ``tolists()``
(the scheduler's CSR form, a ``SamplingMaskLists``).

vLLM's class (``vllm/v1/worker/gpu/sample/output.py``) changed its fields from release to
release.  What an async output calls of it is those two methods, ``tolists`` taking what
the release's takes (:data:`reference.revisions.model.SamplingMasksListed`): the host copy
of ``num_sampled_tokens`` (0.28.0-0.29.0), nothing (0.30.0-0.31.0), or those counts where
a request has several slots (0.32.0 on).  :func:`step_sampling_masks` makes masks on the
step's device whose ``tolists`` is the release's: a slot's row ``r`` keeps
``token_ids[r, :counts[r]]``, and a slot the request sampled no token in keeps none, as
vLLM's kernel writes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from conformance.producers.runtime import StepDevice
from reference.revisions.model import SamplingMasksListed

#: The most tokens a slot allows in the masks the check hands over: few, distinct per slot.
_WIDTH = 4


class StepSamplingMasks:
    """``sampler_output.sampling_mask_tensors`` of a step: ``token_ids`` (int32 ``[num_reqs *
    rows_per_request, width]``) and ``counts`` (int32, a count per row), on the step's
    device or, after :meth:`to_cpu_nonblocking`, their host copies."""

    def __init__(
        self, token_ids: torch.Tensor, counts: torch.Tensor, rows_per_request: int, lists_type: type
    ) -> None:
        self.token_ids = token_ids
        self.counts = counts
        self.rows_per_request = rows_per_request
        self._lists_type = lists_type

    def to_cpu_nonblocking(self) -> StepSamplingMasks:
        if self.token_ids.device.type == "cpu":
            return self
        return type(self)(
            self.token_ids.to("cpu", non_blocking=True),
            self.counts.to("cpu", non_blocking=True),
            self.rows_per_request,
            self._lists_type,
        )

    def _listed(self, rows: np.ndarray, cu: list[int] | None) -> Any:
        """The CSR form of ``rows``, read as vLLM's reads it (``.cpu().numpy()``, on the host
        copies after the wait)."""
        token_ids, offsets = _csr(self.token_ids.cpu().numpy(), self.counts.cpu().numpy(), rows)
        return self._lists_type(token_ids, offsets, *([cu] if cu is not None else []))

    def rows_listed(self, num_sampled: np.ndarray | None) -> tuple[np.ndarray, list[int] | None]:
        """The rows the release's ``tolists`` lists given the step's counts, and the
        ``cu_num_generated_tokens`` it sets."""
        raise NotImplementedError


# The counts stay what the backend handed (``asanyarray``): a host copy not yet arrived
# notes the read of its values, as vLLM's own ``tolists`` reading it would.
class _SampledRequestsMasks(StepSamplingMasks):
    """0.28.0-0.29.0: a row per request; those of requests that sampled a token are listed."""

    def tolists(self, num_sampled_tokens: np.ndarray) -> Any:
        return self._listed(*self.rows_listed(np.asanyarray(num_sampled_tokens)))

    def rows_listed(self, num_sampled: np.ndarray | None) -> tuple[np.ndarray, list[int] | None]:
        counts = np.asanyarray(num_sampled)
        return np.flatnonzero(counts), _cu_of(counts)


class _EveryRequestMasks(StepSamplingMasks):
    """0.30.0-0.31.0: a row per request, every one listed (empty where none was sampled)."""

    def tolists(self) -> Any:
        return self._listed(*self.rows_listed(None))

    def rows_listed(self, num_sampled: np.ndarray | None) -> tuple[np.ndarray, list[int] | None]:
        return np.arange(len(self.counts)), None


class _RequestSlotsMasks(StepSamplingMasks):
    """0.32.0 on: ``rows_per_request`` slots per request; with several, the counts say which
    slots hold a sampled token."""

    def tolists(self, num_sampled_tokens: np.ndarray | None = None) -> Any:
        if self.rows_per_request > 1 and num_sampled_tokens is None:
            raise AssertionError(
                "tolists() of masks with several slots per request needs num_sampled_tokens "
                "(vLLM's asserts it), the host copy of the step's num_sampled"
            )
        return self._listed(*self.rows_listed(num_sampled_tokens))

    def rows_listed(self, num_sampled: np.ndarray | None) -> tuple[np.ndarray, list[int] | None]:
        if self.rows_per_request == 1:
            return np.arange(len(self.counts)), None
        counts = np.asanyarray(num_sampled)
        return _active_slots(counts, self.rows_per_request), _cu_of(counts)


_MASKS_LISTED: dict[str, type[StepSamplingMasks]] = {
    "sampled-requests": _SampledRequestsMasks,
    "every-request": _EveryRequestMasks,
    "request-slots": _RequestSlotsMasks,
}
# A call the release's class refuses reads as it would with vLLM's own class
# ("SamplingMaskTensors.tolists() takes 1 positional argument but 2 were given").
for _masks in _MASKS_LISTED.values():
    _masks.tolists.__qualname__ = "SamplingMaskTensors.tolists"  # type: ignore[attr-defined]


def step_sampling_masks(
    device: StepDevice,
    listed: SamplingMasksListed,
    num_sampled: torch.Tensor,
    rows_per_request: int,
    lists_type: type,
) -> tuple[StepSamplingMasks, tuple[np.ndarray, np.ndarray, list[int] | None]]:
    """Masks of a step whose requests sampled ``num_sampled`` tokens, on ``device``, listed
    as the release's are; and the ``(token_ids, offsets, cu_num_generated_tokens)`` their
    ``tolists()`` holds given the step's counts.  Slot ``r`` that holds a sampled token
    allows ``r % 4 + 1`` tokens, none shared with another slot.  ``lists_type``: the
    backend's ``SamplingMaskLists``, which ``tolists`` builds as vLLM's builds its own."""
    sampled = num_sampled.numpy()
    rows = len(sampled) * rows_per_request
    ids = torch.arange(rows * _WIDTH, dtype=torch.int32).reshape(rows, _WIDTH) * 7
    active = np.zeros(rows, dtype=bool)
    active[_active_slots(sampled, rows_per_request)] = True
    counts = torch.tensor(
        [r % _WIDTH + 1 if active[r] else 0 for r in range(rows)], dtype=torch.int32
    )
    kind = _MASKS_LISTED[listed]
    masks = kind(
        device.tensor(ids, "sampling_mask_tensors.token_ids"),
        device.tensor(counts, "sampling_mask_tensors.counts"),
        rows_per_request,
        lists_type,
    )
    # What the release's tolists lists, given the step's own counts.
    listed_rows, cu = kind(ids, counts, rows_per_request, lists_type).rows_listed(sampled)
    return masks, (*_csr(ids.numpy(), counts.numpy(), listed_rows), cu)


def _active_slots(num_sampled: np.ndarray, rows_per_request: int) -> np.ndarray:
    """The rows (request-major slots) holding a sampled token."""
    return np.flatnonzero(np.arange(rows_per_request)[None, :] < num_sampled[:, None])


def _cu_of(num_sampled: np.ndarray) -> list[int]:
    return [int(n) for n in np.cumsum(np.concatenate(([0], num_sampled)))]


def _csr(
    token_ids: np.ndarray, counts: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every kept id of ``rows`` in order, and each row's offsets into them."""
    supports = [token_ids[row, : counts[row]] for row in rows]
    offsets = np.zeros(len(supports) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in supports], out=offsets[1:])
    return np.concatenate([np.empty(0, dtype=np.int32), *supports]), offsets
