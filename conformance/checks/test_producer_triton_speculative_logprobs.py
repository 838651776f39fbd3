"""Model Runner V2's rejection sampler: the logprobs of speculative rows (Triton kernels).

Under speculative decoding Model Runner V2 verifies each request's draft tokens with one
logits row per position, ``cu_num_logits`` marking where each request's rows begin.  From
0.19.0 its rejection sampler (``gpu/spec_decode/rejection_sampler.py``) gathers the
logprobs of those rows itself (``RejectionSampler._get_logprobs_tensors``; before, they
were its sampler's, judged by ``test_producer_triton_gathering.py``):
``_flatten_sampled_kernel`` puts each request's accepted tokens on its first rows, then
the gathering (``compute_topk_scores``) runs over every row and hands the request
boundaries on as ``cu_num_generated_tokens``.  Judged by what vLLM's consumer reads of
it: request ``r``'s rows start at its boundary (``tolists()`` splits the rows by
``cu_num_generated_tokens``, or ``cu_num_generated_tokens_tensor`` where the release has
it; without either, one row per request), and the first ``num_sampled[r]`` of them are
its accepted tokens'.  So:

- ``k + 1`` columns, and boundaries from 0 to the row count whose spans hold each
  request's accepted tokens (vLLM's row per logits row with ``cu_num_logits``, and the
  first runner's rows of accepted tokens alone, read the same);
- on each row of an accepted token what the first runner's gathering promises: the token
  in column 0, the top-k ids of its logits after it, their log-probabilities within
  float32 rounding of ``log_softmax(logits)``, the 1-based pessimistic rank.

The rows past a request's accepted tokens are read by nobody (the scheduler reads
``slice_request(i, len(sampled_token_ids[i]))``), so nothing is asked of them.  The
sampler's private method is called with a stand-in for the sampler it belongs to and
for the batch (only the fields the release's method reads; 0.34.0's also takes each
logits row's request and ``logprobs_dims``); a form of it this check does not know is a
skip naming the parameter.  Runs where Triton runs (``_triton.py``).
"""

from __future__ import annotations

import inspect
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from conformance.checks._skips import skip
from conformance.checks._support import on
from conformance.checks._triton import kernel_module, parametrize_runner_v2
from conformance.checks.test_producer_gather_logprobs import deep_tokens
from conformance.checks.test_producer_triton_gathering import (
    GATHERED_FIELDS,
    gathering_shape_deviations,
    triton_gathering_deviations,
)
from conformance.oracle.failing import attempt, fail

pytestmark = [pytest.mark.spec_type("LogprobsTensors")]

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
        skip(
            "not-in-this-vllm",
            f"{REJECTION_MODULE} of this release gathers no logprobs of its own "
            "(its sampler's are judged by the gathering check)",
        )
    return device, method


def speculative_case(
    device: str, rows: tuple[int, ...], num_sampled: tuple[int, ...], vocab: int, k: int
) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor, list[int]]:
    """The arguments any form of the method takes (by parameter name), the CPU logits, the
    CPU ``[num_reqs, max_rows]`` sampled ids (tokens ranked 1, ~40, ~1000 and mid-vocabulary
    by their logits row, then a filler id past each request's accepted tokens: nothing
    may read those) and the boundaries ``[0, cu...]``."""
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
        # 0.34.0 on: each logits row's request, and (k, the most token ids a request
        # asked for by name): none here, so vLLM's top-k path.
        "expanded_idx_mapping": on(
            device,
            torch.repeat_interleave(torch.arange(num_reqs, dtype=torch.int32), torch.tensor(rows)),
        ),
        "logprobs_dims": (k, 0),
    }
    return arguments, logits, sampled, cu.tolist()


def sampler_stand_in(k: int, adaptive: bool) -> SimpleNamespace:
    """What the method reads of its ``RejectionSampler``: logprobs (not logits) asked for,
    ``k`` of them for the batch, no request naming its own token ids (0.34.0 on), adaptive
    verification or not."""
    states = SimpleNamespace(max_num_logprobs=lambda idx_mapping_np: k)
    sampler = SimpleNamespace(
        logprobs_mode="raw_logprobs", sampling_states=states, logprob_token_ids_state=None
    )
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
    """What is wrong with ``result``, the logprobs of the logits rows ``cu`` marks (empty
    when it is right), read as vLLM's consumer reads them: request ``r``'s accepted
    tokens are the rows from its boundary on, one per token.  A row per logits row with
    boundaries ``cu`` (vLLM's way) and the rows of accepted tokens alone with boundaries
    counting them (the first runner's filtered way) read the same; the other rows are
    read by nobody, and so not judged."""
    if result is None:
        return [f"{where}: returned None, expected LogprobsTensors of {k} logprobs per row"]
    ids = getattr(result, "logprob_token_ids", None)
    rows = ids.shape[0] if isinstance(ids, torch.Tensor) and ids.dim() == 2 else logits.shape[0]
    out = gathering_shape_deviations(result, rows, k, where)
    if out:
        return out
    bounds, out = read_boundaries(result, rows, num_sampled, where)
    if out:
        return out
    accepted = [(r, i) for r, n in enumerate(num_sampled) for i in range(n)]
    read = [bounds[r] + i for r, i in accepted]
    tokens = torch.stack([sampled[r, i] for r, i in accepted])
    picked = SimpleNamespace(**{f: getattr(result, f)[read] for f in GATHERED_FIELDS})
    logits_rows = [cu[r] + i for r, i in accepted]
    return triton_gathering_deviations(
        picked, logits[logits_rows], tokens, k, f"{where} (rows of accepted tokens {read})"
    )


def read_boundaries(
    result: object, rows: int, num_sampled: tuple[int, ...], where: str
) -> tuple[list[int], list[str]]:
    """The request boundaries ``tolists()`` splits ``result``'s rows by
    (``cu_num_generated_tokens``, its tensor, or one row per request without either),
    or why they cannot hold each request's accepted tokens."""
    tensor = getattr(result, "cu_num_generated_tokens_tensor", None)
    found = tensor.tolist() if isinstance(tensor, torch.Tensor) else None
    if found is None:
        found = getattr(result, "cu_num_generated_tokens", None)
    bounds = list(range(rows + 1)) if found is None else [int(x) for x in found]
    spans = [after - before for before, after in pairwise(bounds)]
    if (
        len(bounds) == len(num_sampled) + 1
        and bounds[0] == 0
        and bounds[-1] == rows
        and all(span >= n for span, n in zip(spans, num_sampled, strict=True))
    ):
        return bounds, []
    return bounds, [
        f"{where}.cu_num_generated_tokens: expected the request boundaries of its {rows} "
        f"rows (0 to {rows}, request r's span holding its accepted tokens "
        f"{list(num_sampled)}; tolists() splits the rows by them), found {found}"
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
        skip(
            "inconclusive",
            f"{METHOD} of this release takes {', '.join(unknown)}: a form this check does not know",
        )
    where = f"{METHOD}(<{len(rows)} requests of {min(rows)}-{max(rows)} logits rows on {device}>, k={k})"
    result = attempt(
        where, method, sampler_stand_in(k, adaptive), **{p: arguments[p] for p in parameters}
    )
    found = speculative_logprobs_deviations(result, logits, sampled, num_sampled, cu, k, where)
    if found:
        fail(*found)
