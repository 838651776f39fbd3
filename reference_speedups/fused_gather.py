"""Gathering logprobs in one pass over each row: a Triton kernel, for devices Triton serves.

``gather_logprobs`` needs, per row of ``[rows, vocab]`` values, the sampled token's value,
its pessimistic rank (entries ``>=`` it), the top ``k`` values with their ids and, from
logits, the log-softmax's normaliser.  torch spends a pass over the row on each (a
``topk``, a comparison written out and counted, a ``log_softmax`` written out), with a
launch each; Model Runner V2 runs a ``topk`` and two kernels.  Here every row is read
once, split into chunks so that even one row fills the device:

1. ``_chunk_kernel``, one program per (row, chunk): streams its chunk in blocks and keeps
   the running maximum and sum of exponentials (the online softmax), the count of
   entries ``>=`` the sampled token's value, and the chunk's top ``k`` in a small buffer.
   A block only touches the buffer while its best entry beats the buffer's worst (for
   real logits: in the first blocks, then almost never), so the selection costs about
   the comparisons the rank count makes anyway.
2. ``_row_kernel``, one program per row: merges its chunks' partial sums, counts and
   candidates (``chunks * k`` entries) and writes the row's outputs.

Order: an entry ranks above another if its value is larger, or equal with a smaller id
(NaN counts as ``+inf``).  Where no two of a row's top ``k + 1`` values tie, that is
exactly ``torch.topk``'s selection; on ties ``torch.topk`` gives no order of its own on
a GPU, and this gives the smaller ids.  Values are read back from the row by id, so they
are the input's exact values (converted to float32), less the normaliser from logits.
Ranks count on the values as given (on logits, from logits: the same count as on their
log-probabilities but where float32 rounding merges two values, and in a row holding NaN
or ``+inf``, whose log-probabilities are all NaN and count 0 on torch's way, as Model
Runner V2's ranks kernel counts on logits too).
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch
import triton
import triton.language as tl

__all__ = ["MAX_NUM_LOGPROBS", "fused_gather"]

#: Widest top-k the kernels take (vLLM's default ``max_logprobs`` is 20); wider ones are
#: left to torch's ``topk``.
MAX_NUM_LOGPROBS = 128
#: Entries of a row read per block: 4 KB of float32, a few loads per thread.
_BLOCK = 1024
#: The row kernel merges at most this many candidates per row (fewer chunks for wide k).
_MAX_CANDIDATES = 8192
#: Programs per multiprocessor to aim for: enough to hide the loads' latency.
_PROGRAMS_PER_SM = 4
#: Ids above any real one: an empty buffer slot ranks below every entry, a taken or
#: padded entry below every slot.
_EMPTY_ID = 2**31 - 2 - MAX_NUM_LOGPROBS
_NO_ID = 2**31 - 1


@triton.jit
def _workspace(workspace_ptr, partials, K: tl.constexpr):
    """Pointers to the partial results in the one int32 workspace: per (row, chunk) the
    running maximum, sum and count, then ``K`` candidate values and ``K`` ids."""
    floats = workspace_ptr.to(tl.pointer_type(tl.float32))
    partials = partials.to(tl.int64)
    return (
        floats,
        floats + partials,
        workspace_ptr + 2 * partials,
        floats + 3 * partials,
        workspace_ptr + (3 + K) * partials,
    )


@triton.jit
def _chunk_kernel(
    values_ptr,
    row_stride,
    token_ids_ptr,
    workspace_ptr,
    vocab,
    chunk_size,
    chunks,
    K: tl.constexpr,
    K_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
    NORMALISE: tl.constexpr,
    EMPTY_ID: tl.constexpr,
    NO_ID: tl.constexpr,
):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    partial_max_ptr, partial_sum_ptr, partial_count_ptr, candidate_values_ptr, candidate_ids_ptr = (
        _workspace(workspace_ptr, tl.num_programs(0) * chunks, K)
    )
    row_ptr = values_ptr + row.to(tl.int64) * row_stride
    token = tl.load(token_ids_ptr + row).to(tl.int64)
    # An id out of range reads nothing (on a device checking it would cost a sync): its
    # value is NaN, which no entry is >=.
    token_inside = (token >= 0) & (token < vocab)
    sampled = tl.load(row_ptr + token, mask=token_inside, other=float("nan")).to(tl.float32)

    start = chunk * chunk_size
    end = tl.minimum(start + chunk_size, vocab)
    offsets = tl.arange(0, BLOCK)
    running_max = float("-inf")
    running_sum = 0.0
    count = 0
    slots = tl.arange(0, K_POW2)
    # Slots past K hold +inf with the lowest id: never the worst, never merged.
    buffer_values = tl.where(slots < K, float("-inf"), float("inf"))
    buffer_ids = tl.where(slots < K, EMPTY_ID + slots, -1)
    for block_start in range(start, end, BLOCK):
        ids = block_start + offsets
        inside = ids < end
        block = tl.load(row_ptr + ids, mask=inside, other=float("-inf")).to(tl.float32)
        count += tl.sum((inside & (block >= sampled)).to(tl.int32))
        if NORMALISE:
            block_max = tl.maximum(running_max, tl.max(block))
            # exp(-inf - -inf) would be NaN: while all is -inf, shift by 0 (every term 0).
            shift = tl.where(block_max == float("-inf"), 0.0, block_max)
            running_sum = running_sum * tl.exp(running_max - shift) + tl.sum(tl.exp(block - shift))
            running_max = block_max
        if K > 0:
            keys = tl.where(block != block, float("inf"), block)
            keys = tl.where(inside, keys, float("-inf"))
            ids = tl.where(inside, ids, NO_ID).to(tl.int32)
            worst_value = tl.min(buffer_values)
            worst_id = tl.max(tl.where(buffer_values == worst_value, buffer_ids, -1))
            best_value = tl.max(keys)
            best_id = tl.min(tl.where(keys == best_value, ids, NO_ID))
            while (best_value > worst_value) | ((best_value == worst_value) & (best_id < worst_id)):
                replaced = (buffer_values == worst_value) & (buffer_ids == worst_id)
                buffer_values = tl.where(replaced, best_value, buffer_values)
                buffer_ids = tl.where(replaced, best_id, buffer_ids)
                taken = ids == best_id
                keys = tl.where(taken, float("-inf"), keys)
                ids = tl.where(taken, NO_ID, ids)
                worst_value = tl.min(buffer_values)
                worst_id = tl.max(tl.where(buffer_values == worst_value, buffer_ids, -1))
                best_value = tl.max(keys)
                best_id = tl.min(tl.where(keys == best_value, ids, NO_ID))

    partial = row * chunks + chunk
    tl.store(partial_count_ptr + partial, count)
    if NORMALISE:
        tl.store(partial_max_ptr + partial, running_max)
        tl.store(partial_sum_ptr + partial, running_sum)
    if K > 0:
        candidates = partial.to(tl.int64) * K + slots
        tl.store(candidate_values_ptr + candidates, buffer_values, mask=slots < K)
        tl.store(candidate_ids_ptr + candidates, buffer_ids, mask=slots < K)


@triton.jit
def _row_kernel(
    values_ptr,
    row_stride,
    token_ids_ptr,
    workspace_ptr,
    out_ids_ptr,
    out_values_ptr,
    out_ranks_ptr,
    vocab,
    chunks,
    K: tl.constexpr,
    CHUNKS_POW2: tl.constexpr,
    CANDIDATES_POW2: tl.constexpr,
    NORMALISE: tl.constexpr,
    NO_ID: tl.constexpr,
):
    row = tl.program_id(0)
    partial_max_ptr, partial_sum_ptr, partial_count_ptr, candidate_values_ptr, candidate_ids_ptr = (
        _workspace(workspace_ptr, tl.num_programs(0) * chunks, K)
    )
    row_ptr = values_ptr + row.to(tl.int64) * row_stride
    chunk = tl.arange(0, CHUNKS_POW2)
    chunk_inside = chunk < chunks
    first_partial = row * chunks
    rank = tl.sum(tl.load(partial_count_ptr + first_partial + chunk, mask=chunk_inside, other=0))
    shift = 0.0
    log_sum = 0.0
    if NORMALISE:
        maxima = tl.load(
            partial_max_ptr + first_partial + chunk, mask=chunk_inside, other=float("-inf")
        )
        sums = tl.load(partial_sum_ptr + first_partial + chunk, mask=chunk_inside, other=0.0)
        shift = tl.max(maxima)
        log_sum = tl.log(
            tl.sum(sums * tl.exp(maxima - tl.where(shift == float("-inf"), 0.0, shift)))
        )

    token = tl.load(token_ids_ptr + row).to(tl.int64)
    token_inside = (token >= 0) & (token < vocab)
    sampled = tl.load(row_ptr + token, mask=token_inside, other=float("nan")).to(tl.float32)
    out_row = row.to(tl.int64) * (K + 1)
    tl.store(out_ids_ptr + out_row, token.to(tl.int32))
    # As log_softmax rounds: (x - max) - log(sum(exp(x - max))).
    tl.store(out_values_ptr + out_row, (sampled - shift) - log_sum)
    tl.store(out_ranks_ptr + row, rank.to(tl.int64))
    if K > 0:
        position = tl.arange(0, CANDIDATES_POW2)
        candidate_inside = position < chunks * K
        first = first_partial.to(tl.int64) * K
        keys = tl.load(
            candidate_values_ptr + first + position, mask=candidate_inside, other=float("-inf")
        )
        ids = tl.load(candidate_ids_ptr + first + position, mask=candidate_inside, other=NO_ID)
        for column in range(1, K + 1):
            best_value = tl.max(keys)
            best_id = tl.min(tl.where(keys == best_value, ids, NO_ID))
            taken = ids == best_id
            keys = tl.where(taken, float("-inf"), keys)
            ids = tl.where(taken, NO_ID, ids)
            value = tl.load(row_ptr + best_id).to(tl.float32)
            tl.store(out_ids_ptr + out_row + column, best_id)
            tl.store(out_values_ptr + out_row + column, (value - shift) - log_sum)


def fused_gather(
    values: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor, *, normalise: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``gather_logprobs``' three tensors of ``values`` ``[rows, vocab]`` (log-probabilities;
    logits with ``normalise``, whose outputs are then those of their ``log_softmax``).

    The caller has checked the arguments (:func:`reference.gather_logprobs` does):
    floating ``values`` and integer ``token_ids`` ``[rows]`` on one device Triton runs on,
    ``num_logprobs`` in ``[0, min(vocab, MAX_NUM_LOGPROBS)]``, ``vocab`` below ``2**31``
    less a few.  Only queues device work.
    """
    rows, vocab = values.shape
    k = num_logprobs
    device = values.device
    ids_out = torch.empty((rows, k + 1), dtype=torch.int32, device=device)
    values_out = torch.empty((rows, k + 1), dtype=torch.float32, device=device)
    ranks_out = torch.empty(rows, dtype=torch.int64, device=device)
    if rows == 0:
        return ids_out, values_out, ranks_out
    if values.stride(1) != 1:
        values = values.contiguous()
    token_ids = token_ids.contiguous()
    chunks, chunk_size = _chunking(rows, vocab, k, device)
    with _on(device):
        return _launch(
            values, token_ids, ids_out, values_out, ranks_out, k, chunks, chunk_size, normalise
        )


def _on(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """Triton launches on the current GPU: ``device``'s where another one is current."""
    if (
        device.type == "cuda"
        and device.index is not None
        and device.index != torch.cuda.current_device()
    ):
        return torch.cuda.device(device)
    return contextlib.nullcontext()


def _launch(
    values: torch.Tensor,
    token_ids: torch.Tensor,
    ids_out: torch.Tensor,
    values_out: torch.Tensor,
    ranks_out: torch.Tensor,
    k: int,
    chunks: int,
    chunk_size: int,
    normalise: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows, vocab = values.shape
    device = values.device
    # One allocation for every partial result (4-byte words, see _workspace): on the
    # host each allocation costs about what a launch does.
    workspace = torch.empty((3 + 2 * k) * rows * chunks, dtype=torch.int32, device=device)
    _chunk_kernel[(rows, chunks)](
        values, values.stride(0), token_ids, workspace,
        vocab, chunk_size, chunks,
        K=k, K_POW2=triton.next_power_of_2(max(k, 1)), BLOCK=_BLOCK, NORMALISE=normalise,
        EMPTY_ID=_EMPTY_ID, NO_ID=_NO_ID,
    )  # fmt: skip
    _row_kernel[(rows,)](
        values, values.stride(0), token_ids, workspace,
        ids_out, values_out, ranks_out,
        vocab, chunks,
        K=k, CHUNKS_POW2=triton.next_power_of_2(chunks),
        CANDIDATES_POW2=triton.next_power_of_2(max(chunks * k, 1)),
        NORMALISE=normalise, NO_ID=_NO_ID,
    )  # fmt: skip
    return ids_out, values_out, ranks_out


def _chunking(rows: int, vocab: int, k: int, device: torch.device) -> tuple[int, int]:
    """(chunks per row, entries per chunk): enough programs to fill the device, each a
    whole number of blocks, and at most ``_MAX_CANDIDATES`` candidates to merge a row."""
    blocks = math.ceil(vocab / _BLOCK)
    wanted = math.ceil(_programs_to_fill(device) / rows)
    chunks = max(1, min(blocks, wanted, _MAX_CANDIDATES // max(k, 1)))
    chunk_size = math.ceil(blocks / chunks) * _BLOCK
    return math.ceil(vocab / chunk_size), chunk_size


@functools.cache
def _programs_to_fill(device: torch.device) -> int:
    if device.type == "cuda":
        return _PROGRAMS_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count
    # Triton's interpreter on CPU runs one program after another: a few chunks per row
    # prove the merging without the interpreter's cost per program.
    return 4
