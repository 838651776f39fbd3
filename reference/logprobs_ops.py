"""Building ``LogprobsTensors`` from a batch of log-probabilities."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from reference._arguments import require_int, require_tensor
from reference.outputs import LogprobsTensors
from reference_speedups import count_at_least, gather

__all__ = [
    "gather_logprobs",
    "gather_logprobs_for",
    "gather_logprobs_of_logits",
    "pessimistic_ranks",
    "top_k",
]


def gather_logprobs(
    logprobs: torch.Tensor,
    num_logprobs: int,
    token_ids: torch.Tensor,
) -> LogprobsTensors:
    """Gather the sampled token's logprob, the top-k and the sampled token's rank.

    Contract, for ``logprobs`` of shape ``[n, vocab]`` and ``token_ids`` of shape ``[n]``:
      * ``logprob_token_ids`` is int32 ``[n, num_logprobs + 1]``: column 0 is
        ``token_ids``, columns ``1..k`` the ids of the ``k = num_logprobs`` largest
        logprobs of the row, sorted by logprob descending;
      * ``logprobs`` is float32 ``[n, num_logprobs + 1]`` holding the matching values;
      * ``selected_token_ranks`` is ``[n]``: the 1-based pessimistic rank of the given
        token, the number of vocabulary entries whose logprob is >= its own (ties
        count against it).  It is int64, as vLLM's sampler emits; ``empty_cpu``
        allocates int32, so consumers accept both;
      * every output lives on ``logprobs.device``, and on an accelerator the call
        only queues device work: nothing in it waits for the device.
    Wrong shapes, dtypes, devices or values raise ``ValueError`` / ``TypeError``
    naming the argument; ``token_ids`` out of ``[0, vocab)`` is one of them on CPU
    (on an accelerator checking it would cost a host sync per call).

    On a GPU Triton serves, two kernels read each row once
    (:mod:`reference_speedups.fused_gather`): the same tensors, except that among equal
    values in the top ``k`` the smaller id comes first, where ``torch.topk`` on a GPU
    promises no order (an id out of range there gives a NaN logprob and rank 0).
    """
    return LogprobsTensors(*_gathered(logprobs, num_logprobs, token_ids))


def gather_logprobs_of_logits(
    logits: torch.Tensor,
    num_logprobs: int,
    token_ids: torch.Tensor,
) -> LogprobsTensors:
    """:func:`gather_logprobs` of ``logits.log_softmax(-1)``, without writing that out.

    vLLM's first runner takes a decode step's logprobs in two steps, ``log_softmax``
    over the whole batch (``Sampler.compute_logprobs``), then ``gather_logprobs``;
    Model Runner V2 gathers from the logits themselves (``compute_topk_scores``).
    This is the latter: the same contract as :func:`gather_logprobs` of the
    log-probabilities, except that the log-probabilities are equal to float32 rounding
    (the normaliser is summed in another order) and the ranks are counted on the
    logits (the same count but where rounding merges two log-probabilities).  On CPU
    it is those two steps; on a GPU one pass over the logits
    (:mod:`reference_speedups.fused_gather`).
    """
    return LogprobsTensors(*_gathered(logits, num_logprobs, token_ids, of_logits=True))


def gather_logprobs_for(logprobs_tensors: type) -> Callable[..., Any]:
    """:func:`gather_logprobs` returning the given revision's ``LogprobsTensors``.

    Every revision has the three tensor fields first (later ones add optional
    fields after them), so the same gathering serves all of them.
    """

    def gather(logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor) -> Any:
        return logprobs_tensors(*_gathered(logprobs, num_logprobs, token_ids))

    gather.__name__ = gather.__qualname__ = "gather_logprobs"
    gather.__doc__ = gather_logprobs.__doc__
    return gather


def _gathered(
    logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor, *, of_logits: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The three tensors of :func:`gather_logprobs` (of :func:`gather_logprobs_of_logits`
    with ``of_logits``), after checking the arguments."""
    name = "logits" if of_logits else "logprobs"
    logprobs = require_tensor(name, logprobs, ndim=2, kind="floating")
    token_ids = require_tensor("token_ids", token_ids, ndim=1, kind="integer")
    num_rows, vocab_size = logprobs.shape
    num_logprobs = require_int("num_logprobs", num_logprobs, minimum=0)
    if num_logprobs > vocab_size:
        raise ValueError(
            f"num_logprobs must be <= the vocabulary size {vocab_size} "
            f"({name}.shape[1]), got {num_logprobs}"
        )
    if token_ids.shape[0] != num_rows:
        raise ValueError(
            f"token_ids must have one entry per row of {name} ({num_rows}), "
            f"got shape {tuple(token_ids.shape)}"
        )
    if token_ids.device != logprobs.device:
        raise ValueError(
            f"token_ids must be on {name}' device {logprobs.device}, got {token_ids.device}"
        )
    if num_rows and token_ids.is_cpu:
        # Only on CPU: on an accelerator reading the ids back would stall the host
        # until the device caught up, on every decode step, which vLLM's sampler
        # never does (there an id out of range fails in the device's own gather).
        low, high = torch.aminmax(token_ids)
        if int(low) < 0 or int(high) >= vocab_size:
            raise ValueError(f"token_ids must be in [0, {vocab_size}) ({name}.shape[1])")

    fused = gather(logprobs, num_logprobs, token_ids, of_logits=of_logits)
    if fused is not None:
        return fused
    # Work in float32 whatever the input precision: ranks and values must agree
    # with the float32 logprobs that are returned.
    logprobs = logprobs.float()
    if of_logits:
        logprobs = logprobs.log_softmax(-1)
    token_ids = token_ids.long().unsqueeze(-1)
    token_logprobs = logprobs.gather(-1, token_ids)
    ranks = pessimistic_ranks(logprobs, token_logprobs)

    if num_logprobs:
        top_logprobs, top_ids = top_k(logprobs, num_logprobs)
        ids = torch.cat((token_ids, top_ids), dim=1)
        values = torch.cat((token_logprobs, top_logprobs), dim=1)
    else:
        ids, values = token_ids, token_logprobs
    return ids.to(torch.int32), values, ranks


def top_k(logprobs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(logprobs, k, dim=-1)``, sorted: the same values and the same ids.

    ``torch.topk`` selects within every whole row, the bulk of gathering on CPU.  For
    the small ``k`` of logprobs (vLLM allows 20 by default) most of a row cannot be in
    its top ``k``: each row is cut into groups of ``_GROUP`` entries, and only the
    ``k + 1`` groups with the largest maxima can hold its top ``k + 1`` (an entry
    outside them is below ``k + 1`` group maxima, each an entry of its own).  One
    reduction finds the maxima; the selection then runs over ``(k + 1) * _GROUP``
    candidates instead of the vocabulary.  Where the top ``k + 1`` values hold a tie
    (or a NaN), which ids ``torch.topk`` gives depends on its whole-row selection, so
    those rows (rare in real logprobs) are selected by ``torch.topk`` itself.
    """
    rows, vocabulary = logprobs.shape
    groups = vocabulary // _GROUP
    if (
        logprobs.device.type != "cpu"
        or not logprobs.is_contiguous()
        or (k + 1) * _GROUP * _MIN_GROUPS_PER_CANDIDATE > vocabulary
        or rows * vocabulary < _MIN_ELEMENTS
    ):
        return torch.topk(logprobs, k, dim=-1, sorted=True)
    whole = groups * _GROUP
    grouped = logprobs[:, :whole].view(rows, groups, _GROUP)
    best_groups = torch.topk(grouped.amax(-1), k + 1, dim=-1, sorted=False).indices
    candidates = grouped.gather(1, best_groups.unsqueeze(-1).expand(rows, k + 1, _GROUP))
    candidate_ids = best_groups.unsqueeze(-1) * _GROUP + torch.arange(_GROUP)
    candidates, candidate_ids = candidates.reshape(rows, -1), candidate_ids.reshape(rows, -1)
    if whole < vocabulary:  # the last, partial group is always a candidate
        candidates = torch.cat((candidates, logprobs[:, whole:]), dim=1)
        tail_ids = torch.arange(whole, vocabulary).expand(rows, -1)
        candidate_ids = torch.cat((candidate_ids, tail_ids), dim=1)
    values, positions = torch.topk(candidates, k + 1, dim=-1, sorted=True)
    ids = candidate_ids.gather(1, positions)
    undecided = (values[:, 1:] == values[:, :-1]).any(1) | values.isnan().any(1)
    values, ids = values[:, :k].contiguous(), ids[:, :k].contiguous()
    if undecided.any():
        again = undecided.nonzero().squeeze(1)
        values[again], ids[again] = torch.topk(logprobs[again], k, dim=-1, sorted=True)
    return values, ids


#: Entries per group of :func:`top_k` (a few cache lines: one vectorised max each).
_GROUP = 64
#: Below this many groups per candidate group, a plain ``torch.topk`` is as fast.
_MIN_GROUPS_PER_CANDIDATE = 8
#: Below this many entries in all (a row or two of a small vocabulary) the extra
#: calls cost more than the selection they save.
_MIN_ELEMENTS = 100_000


def pessimistic_ranks(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor:
    """int64 ``[n]``: per row, how many entries are >= the row's ``token_logprobs`` ``[n, 1]``.

    The plain ``(logprobs >= v).sum(-1)`` writes a boolean ``[n, vocab]`` and counts
    it into int64, the slow part of gathering (vLLM compiles it into one pass).  On
    CPU each row is compared into a reused buffer and counted by numpy, whose
    comparison and count are vectorised and release the GIL, so large batches are
    split over torch's intra-op threads: no compile step, the same numbers.
    Elsewhere the count is taken in int32 (any vocabulary fits) on the device.
    A faster path gives the same counts where one is present
    (:mod:`reference_speedups`: a C loop built at install).
    """
    faster = count_at_least(logprobs, token_logprobs)
    if faster is not None:
        return faster
    if logprobs.device.type != "cpu":
        return (logprobs >= token_logprobs).sum(-1, dtype=torch.int32).long()
    rows = logprobs.detach().numpy()
    values = token_logprobs.detach().reshape(-1).numpy()
    counts = np.empty(rows.shape[0], dtype=np.int64)
    parts = min(torch.get_num_threads(), rows.shape[0])
    if parts < 2 or rows.size < _PARALLEL_ELEMENTS:
        _count_rows(rows, values, counts)
    else:
        bounds = np.linspace(0, rows.shape[0], parts + 1).astype(int)
        blocks = [slice(a, b) for a, b in itertools.pairwise(bounds)]
        list(_pool(parts).map(lambda b: _count_rows(rows[b], values[b], counts[b]), blocks))
    return torch.from_numpy(counts)


#: Below this many entries a thread hand-off costs more than it saves.
_PARALLEL_ELEMENTS = 1 << 21


def _count_rows(rows: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
    above = np.empty(rows.shape[1], dtype=bool)
    for i, (row, value) in enumerate(zip(rows, values, strict=True)):
        counts[i] = np.count_nonzero(np.greater_equal(row, value, out=above))


@functools.cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="reference-ranks")
