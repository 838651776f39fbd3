"""``finished_output``: what the runner-shaped async output sets on the step's output,
on each unpadding path (pure Python, then the C extension over the host array), for
each release's rule of the rows and the logprobs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import reference_strategies as rst
import torch
from hypothesis import given
from hypothesis import strategies as st
from speed_paths import per_row_mask

from reference import LogprobsTensors
from reference.revisions.model import AsyncOutputContract
from reference.runner_async_output import finished_output

pytestmark = pytest.mark.usefixtures("unpad_tier")

ROWS_ONLY = AsyncOutputContract(rows="lists", logprobs="runner")
#: Request 2's last id is beyond the vocabulary: unpadding drops it as vLLM's parser does.
PADDED = torch.tensor([[5, 6, -1], [7, -1, -1], [8, 9, 10]], dtype=torch.int64)
VOCAB_SIZE = 10
#: The kept positions of PADDED, row-major, and how many each request keeps.
KEPT_CELLS = [0, 1, 3, 6, 7]
KEPT_CU = [0, 2, 3, 5]


def traced_logprobs(num_rows: int) -> LogprobsTensors:
    """Row ``i`` holds ``i`` in every field, so the rows kept can be read back."""
    tags = torch.arange(num_rows, dtype=torch.int64)
    return LogprobsTensors(
        logprob_token_ids=tags.reshape(-1, 1).to(torch.int32),
        logprobs=tags.reshape(-1, 1).to(torch.float32),
        selected_token_ranks=tags,
    )


def finish(host_ids: torch.Tensor, logprobs, invalid, vocab_size, contract) -> SimpleNamespace:
    output = SimpleNamespace(sampled_token_ids=None, logprobs="left as handed over")
    return finished_output(output, host_ids, logprobs, invalid, vocab_size, contract)


@given(
    rst.sampled_token_id_tensors(max_rows=40, max_cols=6),
    st.none() | st.integers(1, 320),
    st.sets(st.integers(0, 39)),
)
def test_rows_are_the_kept_ids_and_the_discarded_are_empty(sampled, vocab_size, invalid) -> None:
    found = finish(sampled, None, sorted(invalid), vocab_size, ROWS_ONLY)
    # One token per request: every row as it is (the runner sampled one each); several:
    # unpadded as vLLM's parser does, by a mask per row.
    expected = sampled.tolist() if sampled.shape[1] == 1 else per_row_mask(sampled, vocab_size)
    for i in invalid:
        if i < len(expected):
            expected[i] = []
    assert found.sampled_token_ids == expected
    assert all(type(tok) is int for row in found.sampled_token_ids for tok in row)
    # The rule "runner": the runner converted the logprobs itself; they are left alone.
    assert found.logprobs == "left as handed over"


@pytest.mark.parametrize(
    ("rule", "num_rows", "rows_kept", "cu"),
    [
        # Model Runner V2 (0.34.0): every logits row, the cu of the padded positions.
        ("every-logits-row", 9, list(range(9)), [0, 3, 6, 9]),
        # 0.12.0, 0.13.0: the runner hands a row per kept token; the cu counts them.
        ("cu-of-kept-tokens", 5, list(range(5)), KEPT_CU),
        # 0.14.0 on: a row per padded position, filtered to the kept ones.
        ("filtered-to-kept-tokens", 9, KEPT_CELLS, KEPT_CU),
    ],
)
def test_each_rule_of_the_logprobs_rows_of_several_tokens(rule, num_rows, rows_kept, cu) -> None:
    contract = AsyncOutputContract(rows="lists", logprobs=rule)
    found = finish(PADDED, traced_logprobs(num_rows), [1], VOCAB_SIZE, contract)
    assert found.sampled_token_ids == [[5, 6], [], [8, 9]]
    assert found.logprobs.sampled_token_ranks == rows_kept
    assert found.logprobs.cu_num_generated_tokens == cu
    assert all(type(n) is int for n in found.logprobs.cu_num_generated_tokens)


def test_rows_as_arrays_are_copies_of_the_kept_ids() -> None:
    # 0.11.1: a numpy array per request, the logprobs by tolists() without a cu.
    contract = AsyncOutputContract(rows="arrays", logprobs="tolists")
    host = PADDED.clone()
    found = finish(host, traced_logprobs(9), [1], VOCAB_SIZE, contract)
    assert [row.tolist() for row in found.sampled_token_ids] == [[5, 6], [], [8, 9]]
    assert all(isinstance(row, np.ndarray) for row in found.sampled_token_ids)
    assert found.logprobs.cu_num_generated_tokens is None
    host.fill_(0)  # the producer's buffer, reused next step: the output keeps its values
    assert found.sampled_token_ids[0].tolist() == [5, 6]


def test_an_invalid_vocab_size_is_refused_as_unpadding_refuses_it() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        finish(PADDED, None, [], 0, ROWS_ONLY)
