"""The async output as vLLM's model runner builds it, for any torch device and revision.

After sampling, vLLM's runner builds its ``ModelRunnerOutput`` without the sampled
ids and hands an async output what it holds: that output, the sampled ids on the
device padded with -1, the ``LogprobsTensors`` on the device, the indices of the
requests whose tokens are discarded this step (``invalid_req_indices``), a copy
stream and the vocabulary size.  The async output starts the device-to-host copies
at once and ``get_output()`` waits for them, then finishes the output.

What "finishes" means changed from release to release; a revision says it as data
(:class:`~reference.revisions.model.AsyncOutputContract`) and
:func:`finished_output` carries it out.  The conformance suite uses the same
function, on host copies of a step, as the oracle of every backend's async output.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from reference.async_output import device_runtime
from reference.constants import PLACEHOLDER_TOKEN_ID
from reference.revisions.model import AsyncOutputContract
from reference.sampler_ops import unpad_sampled_token_ids
from reference_speedups import rows_array, unpad_array

__all__ = [
    "RunnerAsyncOutputCopies",
    "finish_in_place",
    "finished_output",
    "kept_positions",
    "runner_async_class",
]


def kept_positions(host_token_ids: torch.Tensor, vocab_size: int | None) -> np.ndarray:
    """Boolean ``[num_reqs, max_len]``: the positions unpadding keeps (not -1, in the vocabulary)."""
    return _kept(host_token_ids.numpy(), vocab_size)


def _kept(ids: np.ndarray, vocab_size: int | None) -> np.ndarray:
    keep = ids != PLACEHOLDER_TOKEN_ID
    if vocab_size is not None:
        keep &= ids < vocab_size
    return keep


def finished_output(
    model_runner_output: Any,
    host_token_ids: torch.Tensor,
    host_logprobs: Any,
    invalid_req_indices: Sequence[int],
    vocab_size: int | None,
    contract: AsyncOutputContract,
) -> Any:
    """``model_runner_output`` with the sampled ids and logprobs a release's get_output() sets.

    ``host_token_ids`` is the ``[num_reqs, max_len]`` host copy of the sampled ids
    (padded with -1), ``host_logprobs`` the host ``LogprobsTensors`` or None.  The
    result is a new object: the one handed over is left as it was (the suite's oracle
    hands one step's output to every backend it judges).
    """
    return finish_in_place(
        copy.copy(model_runner_output),
        host_token_ids,
        host_logprobs,
        invalid_req_indices,
        vocab_size,
        contract,
    )


#: The logprobs rules that read the kept positions of rows of several tokens (the
#: others read no mask: ``every-logits-row`` only the rows' width).
_READ_KEPT_POSITIONS = ("cu-of-kept-tokens", "filtered-to-kept-tokens")


def finish_in_place(
    output: Any,
    host_token_ids: torch.Tensor,
    host_logprobs: Any,
    invalid_req_indices: Sequence[int],
    vocab_size: int | None,
    contract: AsyncOutputContract,
) -> Any:
    """:func:`finished_output` setting the fields on ``output`` itself and returning it,
    as vLLM's runner does: the output it hands an async output is that one's to finish
    (no second object is built on the hot path of every step)."""
    # The host copy is read once, as a numpy view, and numpy reads it from here on: each
    # torch call on a tensor costs a Python-level dispatch wherever a runtime wraps its
    # host copies or a torch function mode is active (a plugin's, the suite's simulated
    # device: 2.5 us a call there, ten of them a step), numpy's calls none.
    ids = host_token_ids.numpy()
    multi_token = ids.shape[-1] != 1
    # The mask of kept positions, only where something reads it: rows as arrays, or
    # logprobs filtered or counted by it (lists are unpadded without one).
    needs_mask = multi_token and (
        contract.rows == "arrays"
        or (host_logprobs is not None and contract.logprobs in _READ_KEPT_POSITIONS)
    )
    keep = _kept(ids, vocab_size) if needs_mask else None
    output.sampled_token_ids = _rows(
        host_token_ids, ids, multi_token, keep, invalid_req_indices, contract, vocab_size
    )
    if contract.logprobs != "runner":
        output.logprobs = _logprobs_lists(host_logprobs, ids, multi_token, keep, contract)
    return output


def _rows(
    host_token_ids: torch.Tensor,
    ids: np.ndarray,
    multi_token: bool,
    keep: np.ndarray | None,
    invalid_req_indices: Sequence[int],
    contract: AsyncOutputContract,
    vocab_size: int | None,
) -> list[Any]:
    if contract.rows != "arrays":
        # Lists: one token per request, every row as it is; else the reference's own
        # unpadding, which keeps exactly the kept positions.  The discarded emptied.
        # The extension's lists share one int per vocabulary id: no int made per row;
        # else numpy's tolist(), which builds only the lists (torch's took 9 % more
        # host memory on a step of 64 requests).
        as_lists: list[Any] | None = None
        if not multi_token:
            as_lists = rows_array(ids)
            if as_lists is None:
                as_lists = ids.tolist()
        elif vocab_size is None or (type(vocab_size) is int and vocab_size >= 1):
            as_lists = unpad_array(ids, vocab_size)
        if as_lists is None:
            # No C extension, a dtype it does not read, or a vocab_size for the
            # reference's own checks to refuse.
            as_lists = unpad_sampled_token_ids(host_token_ids, vocab_size=vocab_size)
        for i in invalid_req_indices:
            if 0 <= i < len(as_lists):
                as_lists[i].clear()  # each row is a list of its own
        return as_lists
    discarded = set(invalid_req_indices)
    rows: list[Any] = []
    for i, row in enumerate(ids):
        if i in discarded:
            rows.append(np.array([], dtype=ids.dtype))
            continue
        kept = row if keep is None else row[keep[i]]
        # A copy, so the output shares no memory with the producer's host buffer.
        rows.append(kept.copy())
    return rows


def _logprobs_lists(
    host_logprobs: Any,
    ids: np.ndarray,
    multi_token: bool,
    keep: np.ndarray | None,
    contract: AsyncOutputContract,
) -> Any:
    if host_logprobs is None:
        return None
    if not multi_token or contract.logprobs == "tolists":
        return host_logprobs.tolists()
    if contract.logprobs == "every-logits-row":
        # A row per logits row, none filtered: the cu of the padded positions, made by
        # range() in C (a comprehension took 25 us at 1024 requests).
        num_reqs, width = ids.shape
        cu = list(range(0, width * num_reqs + 1, width)) if width else [0] * (num_reqs + 1)
        return host_logprobs.tolists(cu)
    assert keep is not None  # _READ_KEPT_POSITIONS
    # The running count in numpy, then one tolist(): Python ints, as accumulate() of
    # the per-row counts gave them, without a Python step per request.
    cu = [0, *np.cumsum(keep.sum(axis=1)).tolist()]
    if contract.logprobs == "filtered-to-kept-tokens":
        # The kept positions' rows by index: torch's boolean-mask indexing takes
        # milliseconds on a batch where index_select takes microseconds.
        rows = torch.from_numpy(np.flatnonzero(keep.reshape(-1)))
        # _replace keeps the optional fields later revisions add after the three tensors.
        host_logprobs = host_logprobs._replace(
            logprob_token_ids=host_logprobs.logprob_token_ids.index_select(0, rows),
            logprobs=host_logprobs.logprobs.index_select(0, rows),
            selected_token_ranks=host_logprobs.selected_token_ranks.index_select(0, rows),
        )
    return host_logprobs.tolists(cu)


class RunnerAsyncOutputCopies:
    """Start the device-to-host copies of a step now; finish its output in ``get_output()``.

    The constructor takes what vLLM's runner hands over (the parameter names of vLLM's
    own class, so ``conformance.constructed_like_vllm`` builds it from a step) plus
    ``device``, the torch device type whose runtime (``torch.<device>``) orders the
    copies.  A concrete class mixes it into a revision's ``AsyncModelRunnerOutput``
    and sets ``contract``.  ``get_output()`` may be called more than once: it waits
    once and returns the same output.
    """

    contract: ClassVar[AsyncOutputContract]

    def __init__(
        self,
        model_runner_output: Any,
        sampled_token_ids: torch.Tensor,
        logprobs_tensors: Any = None,
        invalid_req_indices: Sequence[int] = (),
        async_output_copy_stream: Any = None,
        vocab_size: int | None = None,
        device: str | None = None,
        num_nans: torch.Tensor | None = None,
        routed_experts: Any = None,
    ) -> None:
        self._model_runner_output = model_runner_output
        # Held as handed over, as vLLM's own does (the runner makes a new one each step).
        self._invalid_req_indices = invalid_req_indices
        self._vocab_size = vocab_size
        self._event: Any = None
        self._output: Any = None
        kind = device or sampled_token_ids.device.type
        self._runtime = device_runtime(kind)
        # Holding the device tensors keeps the caching allocator from reusing their
        # memory while the copy stream may still read it.
        self._device_tensors: Any = (sampled_token_ids, logprobs_tensors, num_nans, routed_experts)
        # The NaN counts and routed experts only where the release's async output hands
        # them over.
        extras = (
            num_nans if self.contract.nan_counts else None,
            routed_experts if self.contract.routed_experts else None,
        )
        if kind == "cpu":
            self._host = (sampled_token_ids, logprobs_tensors)
            self._host_extras = extras
        elif self._runtime is None:
            # No stream API (MPS): queue the copies where the data is produced;
            # get_output() waits for the whole device.
            self._host = _copy_to_host(sampled_token_ids, logprobs_tensors)
            self._host_extras = _extras_to_host(*extras)
        else:
            runtime = self._runtime
            copy_stream = async_output_copy_stream or runtime.Stream()
            # The copies must not start before the kernels that produce the values.
            copy_stream.wait_stream(runtime.current_stream())
            with runtime.stream(copy_stream):
                self._host = _copy_to_host(sampled_token_ids, logprobs_tensors)
                self._host_extras = _extras_to_host(*extras)
                self._event = runtime.Event()
                self._event.record(copy_stream)
        self._kind = kind

    def get_output(self) -> Any:
        if self._output is None:
            self._wait_for_copies()
            self._device_tensors = None
            host_token_ids, host_logprobs = self._host
            self._output = finish_in_place(
                self._model_runner_output,
                host_token_ids,
                host_logprobs,
                self._invalid_req_indices,
                self._vocab_size,
                self.contract,
            )
            nans, routed = self._host_extras
            if nans is not None:
                self._output.num_nans_in_logits = dict(
                    zip(self._output.req_ids, nans.tolist(), strict=False)
                )
            if routed is not None:
                self._output.routed_experts = routed.tolists()
        return self._output

    def get_kv_connector_output(self) -> Any:
        """The step's KVConnectorOutput, to salvage when get_output() fails."""
        return self._model_runner_output.kv_connector_output

    def _wait_for_copies(self) -> None:
        if self._event is not None:
            self._event.synchronize()
        elif self._kind != "cpu":
            # Devices without events (MPS): wait for everything queued so far.
            getattr(torch, self._kind).synchronize()


def _extras_to_host(nans: torch.Tensor | None, routed_experts: Any) -> tuple[Any, Any]:
    """The NaN counts and the routed experts (a ``RoutedExpertsTensors``) on the host."""
    return (
        nans.to("cpu", non_blocking=True) if nans is not None else None,
        routed_experts.to_cpu_nonblocking() if routed_experts is not None else None,
    )


def _copy_to_host(token_ids: torch.Tensor, logprobs: Any) -> tuple[torch.Tensor, Any]:
    host_ids = token_ids.to("cpu", non_blocking=True)
    if logprobs is None:
        return host_ids, None
    # Field by field: 0.10.2 and 0.11.0's LogprobsTensors have no to_cpu_nonblocking().
    # Built straight from the fields (no dict of them): this runs every decode step.
    return host_ids, type(logprobs)._make(
        [
            value.to("cpu", non_blocking=True) if isinstance(value, torch.Tensor) else value
            for value in logprobs
        ]
    )


def runner_async_class(async_model_runner_output: type, contract: AsyncOutputContract) -> type:
    """The reference's ``RunnerAsyncModelRunnerOutput`` of a revision."""
    return type(
        "RunnerAsyncModelRunnerOutput",
        (RunnerAsyncOutputCopies, async_model_runner_output),
        {"contract": contract, "__doc__": RunnerAsyncOutputCopies.__doc__},
    )
