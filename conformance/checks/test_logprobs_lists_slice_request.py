"""LogprobsLists.slice_request(req_idx, num_positions) (vLLM 0.12.0 on).

``num_positions`` rows starting at ``cu[req_idx]`` when the object has a
``cu_num_generated_tokens`` (tested with ``is not None``: an empty list is still a
cu, unlike the truthiness test of 2025.10's ``slice``), else at row ``req_idx``.
The result is the backend's own LogprobsLists with ``cu_num_generated_tokens``
None, and the original is left as it was.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.checks._samples import lists_fields, lists_values, make_logprobs_lists
from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle import strategies
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("LogprobsLists"),
    pytest.mark.behaviour("LogprobsLists.slice_request"),
]

ROW_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks")


def _rows(n: int) -> tuple[list[list[int]], list[list[float]], list[int]]:
    ids = [[70000 + i, 300 + i] for i in range(n)]
    logprobs = [[-0.5 * i, -0.25 * i - 1.0] for i in range(n)]
    ranks = [i + 1 for i in range(n)]
    return ids, logprobs, ranks


def _expected(revision, rows, first: int, num_positions: int) -> Members:
    """The three row fields of rows first:first + num_positions, and cu None."""
    end = first + num_positions
    # Sliced from the values as stored, so empty slices keep the width of their rows.
    values = [column[first:end] for column in lists_values(revision, *rows)]
    return Members({**dict(zip(ROW_FIELDS, values, strict=True)), "cu_num_generated_tokens": None})


def _slice_request(backend, revision, rows, cu, req_idx: int, num_positions: int) -> None:
    LogprobsLists = backend.spec_type("LogprobsLists")
    obj = attempt("LogprobsLists(...)", make_logprobs_lists, backend.module, revision, *rows, cu)
    where = (
        f"LogprobsLists(<{len(rows[0])} rows>, cu={cu}).slice_request({req_idx}, {num_positions})"
    )
    result = attempt(where, obj.slice_request, req_idx, num_positions)
    expect_type(result, LogprobsLists, where)
    first = req_idx if cu is None else cu[req_idx]
    expected = _expected(revision, rows, first, num_positions)
    expect_same(fields_of(result, (*ROW_FIELDS, "cu_num_generated_tokens")), expected, where)


# Without cu: six rows, one per request.
WITHOUT_CU = [(r, n) for r in range(6) for n in range(0, 7 - r)]


@pytest.mark.parametrize(
    ("req_idx", "num_positions"), WITHOUT_CU, ids=[f"req{r}-n{n}" for r, n in WITHOUT_CU]
)
def test_slice_request_without_cu_takes_num_positions_rows_from_row_req_idx(
    backend, revision, req_idx: int, num_positions: int
) -> None:
    _slice_request(backend, revision, _rows(6), None, req_idx, num_positions)


# Four requests owning 2, 0, 3 and 1 rows.
CU = [0, 2, 2, 5, 6]
WITH_CU = [(r, n) for r in range(5) for n in range(0, 7 - CU[r])]


@pytest.mark.parametrize(
    ("req_idx", "num_positions"), WITH_CU, ids=[f"req{r}-n{n}" for r, n in WITH_CU]
)
def test_slice_request_with_cu_takes_num_positions_rows_from_cu_of_req_idx(
    backend, revision, req_idx: int, num_positions: int
) -> None:
    _slice_request(backend, revision, _rows(6), CU, req_idx, num_positions)


def test_slice_request_of_empty_batch(backend, revision) -> None:
    _slice_request(backend, revision, _rows(0), None, 0, 0)
    _slice_request(backend, revision, _rows(0), [0], 0, 0)


def test_slice_request_with_cu_starting_past_zero_uses_cu_as_row_index(backend, revision) -> None:
    # A cu whose first entry is not 0 tells an implementation that rebases it apart.
    _slice_request(backend, revision, _rows(6), [1, 3, 6], 1, 3)


def test_slice_request_honours_an_empty_cu_list(backend, revision) -> None:
    """An empty list is a cu (``is not None``): cu[req_idx] does not exist, so the call fails."""
    obj = attempt(
        "LogprobsLists(...)", make_logprobs_lists, backend.module, revision, *_rows(3), []
    )
    try:
        result = obj.slice_request(1, 1)
    except Exception:
        return
    fail(
        "LogprobsLists(<3 rows>, cu=[]).slice_request(1, 1): expected an exception (the cu "
        "is tested with 'is not None', so an empty list is used and cu[1] does not exist), "
        f"found a result, as if the empty cu were no cu: {result!r}"
    )


def test_slice_request_does_not_modify_the_original(backend, revision) -> None:
    rows = _rows(6)
    obj = attempt(
        "LogprobsLists(...)", make_logprobs_lists, backend.module, revision, *rows, list(CU)
    )
    attempt("slice_request(2, 3)", obj.slice_request, 2, 3)
    expected = Members(
        {
            **dict(zip(ROW_FIELDS, lists_values(revision, *rows), strict=True)),
            "cu_num_generated_tokens": CU,
        }
    )
    expect_same(
        fields_of(obj, (*ROW_FIELDS, "cu_num_generated_tokens")),
        expected,
        "LogprobsLists after slice_request(2, 3)",
    )


@st.composite
def slice_request_cases(draw: st.DrawFn) -> dict:
    """A LogprobsLists's rows, with or without cu, and an in-range (req_idx, num_positions)."""
    num_reqs = draw(st.integers(0, 6))
    cu = draw(strategies.cu_vectors(num_reqs)) if draw(st.booleans()) else None
    num_rows = cu[-1] if cu is not None else num_reqs
    rows = draw(strategies.logprobs_rows(num_rows, draw(st.integers(1, 4))))
    req_idx = draw(st.integers(0, num_reqs))
    first = cu[req_idx] if cu is not None else req_idx
    num_positions = draw(st.integers(0, num_rows - first))
    return {**rows, "cu": cu, "req_idx": req_idx, "num_positions": num_positions}


@given(case=slice_request_cases())
def test_slice_request_agrees_with_reference(backend, revision, reference_backend, case) -> None:
    rows = (case["logprob_token_ids"], case["logprobs"], case["ranks"])
    req_idx, num_positions = case["req_idx"], case["num_positions"]
    names = lists_fields(revision)
    reference = make_logprobs_lists(reference_backend.module, revision, *rows, case["cu"])
    expected = reference.slice_request(req_idx, num_positions)
    obj = attempt(
        "LogprobsLists(...)", make_logprobs_lists, backend.module, revision, *rows, case["cu"]
    )
    where = (
        f"LogprobsLists(<{len(rows[0])} rows>, cu={case['cu']})"
        f".slice_request({req_idx}, {num_positions})"
    )
    found = attempt(where, obj.slice_request, req_idx, num_positions)
    expect_type(found, backend.spec_type("LogprobsLists"), where)
    expect_same(fields_of(found, names), fields_of(expected, names), where)
