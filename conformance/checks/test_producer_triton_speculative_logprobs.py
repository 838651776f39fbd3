"""Model Runner V2's rejection sampler: the logprobs of speculative rows (Triton kernels).

Under speculative decoding Model Runner V2 verifies each request's draft tokens with one
logits row per position, ``cu_num_logits`` marking where each request's rows begin.  From
0.19.0 its rejection sampler (``gpu/spec_decode/rejection_sampler.py``) gathers the
logprobs of those rows itself (``RejectionSampler._get_logprobs_tensors``; before, they
were its sampler's, judged by ``test_producer_triton_gathering.py``):
``_flatten_sampled_kernel`` puts each request's accepted tokens on its first rows, then
the gathering (``compute_topk_scores``) runs over every row and hands the request
boundaries on as ``cu_num_generated_tokens``.  Judged by what vLLM's consumer reads:

- a row per logits row, ``k + 1`` columns;
- on the rows of accepted tokens (request ``r``'s first ``num_sampled[r]``) what the
  first runner's gathering promises: the accepted token in column 0, the top-k ids after
  it, their log-probabilities within float32 rounding of ``log_softmax(logits)``, the
  1-based pessimistic rank;
- the request boundaries, which ``tolists()`` splits the rows by
  (``cu_num_generated_tokens``, or ``cu_num_generated_tokens_tensor`` where the release
  has it); with one row per request, none or the same.

The rows past a request's accepted tokens are read by nobody (the scheduler reads
``slice_request(i, len(sampled_token_ids[i]))``), so nothing is asked of them.  The
sampler's private method is called with a stand-in for the sampler it belongs to and
for the batch (only the fields the release's method reads); a form of it this check
does not know is a skip naming the parameter.  Runs where Triton runs (``_triton.py``).
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from conformance.checks._support import on
from conformance.checks._triton import kernel_module, parametrize_runner_v2
from conformance.checks.test_producer_gather_logprobs import deep_tokens
from conformance.checks.test_producer_triton_gathering import (
    GATHERED_FIELDS,
    gathering_shape_deviations,
    triton_gathering_deviations,
)
from conformance.oracle.failing import attempt, fail

pytestmark = [pytest.mark.spec_type("LogprobsTensors"), pytest.mark.producer("gather_logprobs")]

REJECTION_MODULE = "vllm.v1.worker.gpu.spec_decode.rejection_sampler"
METHOD = "RejectionSampler._get_logprobs_tensors"

#: Logits rows per request (1 + its drafts) and how many of them hold accepted tokens:
#: a draft accepted then a recovered token, no drafts, every draft and the bonus token,
#: the first draft rejected, one of one accepted plus the bonus.
ROWS = (4, 1, 3, 4, 2)
NUM_SAMPLED = (2, 1, 3, 1, 2)
#: Each layout, and whether the sampler verifies adaptively (0.31.0 on: the boundaries
#: then stay on device, handed on as ``cu_num_generated_tokens_tensor``; an earlier
#: release reads no such switch and gives the plain speculative layout's result).
LAYOUTS = {
    "speculative": (ROWS, NUM_SAMPLED, False),
    "speculative-adaptive": (ROWS, NUM_SAMPLED, True),
    "one-row-each": ((1,) * 4, (1,) * 4, False),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_runner_v2(metafunc)


def _gather_speculative_rows():
    """The device and vLLM's ``RejectionSampler._get_logprobs_tensors`` of the release on
    the path, or a skip saying why it cannot be judged."""
    device, module = kernel_module(REJECTION_MODULE, "Model Runner V2's rejection sampler")
    method = getattr(getattr(module, "RejectionSampler", None), "_get_logprobs_tensors", None)
    if not callable(method):
        pytest.skip(
            f"{REJECTION_MODULE} of this release gathers no logprobs of its own "
            "(its sampler's are judged by the gathering check)"
        )
    return device, method


def speculative_case(
    device: str, rows: tuple[int, ...], num_sampled: tuple[int, ...], vocab: int, k: int
) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor, list[int]]:
    """The arguments any form of the method takes (by parameter name), the CPU logits, the
    CPU ``[num_reqs, max_rows]`` sampled ids (past each request's accepted tokens, ids
    that must not appear) and the boundaries ``[0, cu...]``."""
    cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    generator = torch.Generator().manual_seed(vocab + k + len(rows))
    logits = torch.randn(int(cu[-1]), vocab, generator=generator) * 3
    flat = deep_tokens(logits)
    sampled = torch.full((len(rows), max(rows)), vocab - 1, dtype=torch.int64)
    for r, n in enumerate(num_sampled):
        sampled[r, :n] = flat[cu[r] : cu[r] + n]
    num_reqs = len(rows)
    cu_on_device = on(device, torch.from_numpy(cu))
    batch = SimpleNamespace(
        cu_num_logits=cu_on_device,
        cu_num_logits_np=cu,
        idx_mapping=on(device, torch.arange(num_reqs, dtype=torch.int32)),
        idx_mapping_np=np.arange(num_reqs, dtype=np.int32),
    )
    arguments = {
        "input_batch": batch,
        "sampled": on(device, sampled),
        "num_sampled": on(device, torch.tensor(num_sampled, dtype=torch.int32)),
        "logits": on(device, logits),
        "cu_num_logits": cu_on_device,
        "cu_num_logits_np": cu,
        "max_num_logprobs": k,
    }
    return arguments, logits, sampled, cu.tolist()


def sampler_stand_in(k: int, adaptive: bool) -> SimpleNamespace:
    """What the method reads of its ``RejectionSampler``: logprobs (not logits) asked for,
    ``k`` of them for the batch, adaptive verification or not."""
    states = SimpleNamespace(max_num_logprobs=lambda idx_mapping_np: k)
    sampler = SimpleNamespace(logprobs_mode="raw_logprobs", sampling_states=states)
    return SimpleNamespace(sampler=sampler, enable_adaptive_verification=adaptive)


def speculative_logprobs_deviations(
    result: object,
    logits: torch.Tensor,
    sampled: torch.Tensor,
    num_sampled: tuple[int, ...],
    cu: list[int],
    k: int,
    where: str,
) -> list[str]:
    """What is wrong with ``result``, the logprobs of the rows ``cu`` marks (empty when it
    is right); only the rows of accepted tokens are read, and so judged."""
    if result is None:
        return [f"{where}: returned None, expected LogprobsTensors of {k} logprobs per row"]
    out = gathering_shape_deviations(result, logits.shape[0], k, where)
    if out:
        return out
    rows = [cu[r] + i for r, n in enumerate(num_sampled) for i in range(n)]
    tokens = torch.stack([sampled[r, i] for r, n in enumerate(num_sampled) for i in range(n)])
    accepted = SimpleNamespace(**{f: getattr(result, f)[rows] for f in GATHERED_FIELDS})
    out = triton_gathering_deviations(
        accepted, logits[rows], tokens, k, f"{where} (rows of accepted tokens {rows})"
    )
    return out + boundary_deviations(result, cu, where)


def boundary_deviations(result: object, cu: list[int], where: str) -> list[str]:
    """Whether ``result`` splits its rows by request at ``cu`` (None is one row each)."""
    tensor = getattr(result, "cu_num_generated_tokens_tensor", None)
    found = tensor.tolist() if isinstance(tensor, torch.Tensor) else None
    if found is None:
        found = getattr(result, "cu_num_generated_tokens", None)
    found = None if found is None else [int(x) for x in found]
    one_row_each = cu == list(range(len(cu)))
    if found == cu or (found is None and one_row_each):
        return []
    return [
        f"{where}.cu_num_generated_tokens: expected the request boundaries {cu} "
        f"(tolists() splits the rows by them), found {found}"
    ]


@pytest.mark.behaviour("producer.gather_logprobs:speculative-rows")
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("k", [0, 5, 20])
def test_model_runner_v2_speculative_logprobs_are_judged_where_triton_runs(
    backend, runner_v2, layout: str, k: int
) -> None:
    device, method = _gather_speculative_rows()
    rows, num_sampled, adaptive = LAYOUTS[layout]
    # A served vocabulary and a batch of them on a GPU; a small one under the
    # interpreter (it runs each program of the kernels in Python).
    if device == "cuda":
        rows, num_sampled, vocab = rows * 16, num_sampled * 16, 151936
    else:
        vocab = 2048
    arguments, logits, sampled, cu = speculative_case(device, rows, num_sampled, vocab, k)
    parameters = list(inspect.signature(method).parameters)[1:]
    unknown = [p for p in parameters if p not in arguments]
    if unknown:
        pytest.skip(
            f"{METHOD} of this release takes {', '.join(unknown)}: a form this check does not know"
        )
    where = f"{METHOD}(<{len(rows)} requests of {min(rows)}-{max(rows)} logits rows on {device}>, k={k})"
    result = attempt(
        where, method, sampler_stand_in(k, adaptive), **{p: arguments[p] for p in parameters}
    )
    found = speculative_logprobs_deviations(result, logits, sampled, num_sampled, cu, k, where)
    if found:
        fail(*found)
