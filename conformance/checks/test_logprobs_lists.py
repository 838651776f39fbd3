"""LogprobsLists: a NamedTuple of Python lists; cu_num_generated_tokens defaults to None."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._support import attempt, expect_same, fail
from conformance.surface import SurfaceCheck

pytestmark = pytest.mark.spec_type("LogprobsLists")

FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks", "cu_num_generated_tokens")


@pytest.fixture
def LogprobsLists(backend):
    return backend.spec_type("LogprobsLists")


def test_surface(surface_check: SurfaceCheck, LogprobsLists) -> None:
    found = surface_check.run(LogprobsLists)
    if found:
        fail(*found)


def test_is_a_tuple_of_its_four_fields(LogprobsLists) -> None:
    ids, lps, ranks, cu = [[70001, 5]], [[-0.5, -0.25]], [2], [0, 1]
    obj = attempt("LogprobsLists(ids, logprobs, ranks, cu)", LogprobsLists, ids, lps, ranks, cu)
    if not isinstance(obj, tuple) or len(obj) != 4:
        fail(f"LogprobsLists: expected a 4-tuple, found {type(obj).__name__} of length {len(obj)}")
    for i, (name, given) in enumerate(zip(FIELDS, (ids, lps, ranks, cu), strict=True)):
        if obj[i] is not given or getattr(obj, name) is not given:
            fail(f"LogprobsLists.{name}: expected the object passed as item {i}, found {obj[i]!r}")


def test_cu_num_generated_tokens_defaults_to_none(LogprobsLists) -> None:
    obj = attempt("LogprobsLists(ids, logprobs, ranks)", LogprobsLists, [[1]], [[-1.0]], [1])
    if obj.cu_num_generated_tokens is not None:
        fail(
            "LogprobsLists(ids, logprobs, ranks).cu_num_generated_tokens: expected None, "
            f"found {obj.cu_num_generated_tokens!r}"
        )


def test_keyword_construction(LogprobsLists) -> None:
    kwargs = {
        "logprob_token_ids": [[9, 8]],
        "logprobs": [[-0.1, -0.2]],
        "sampled_token_ranks": [1],
        "cu_num_generated_tokens": None,
    }
    obj = attempt("LogprobsLists(**fields)", LogprobsLists, **kwargs)
    expect_same(tuple(obj), tuple(kwargs.values()), "LogprobsLists(**fields)")


@pytest.mark.parametrize("cu", [None, [0, 1, 1]], ids=["without-cu", "with-cu"])
def test_pickle_round_trip(LogprobsLists, cu) -> None:
    obj = attempt("LogprobsLists(...)", LogprobsLists, [[70001]], [[-0.75]], [3], cu)
    copy = attempt("pickle round trip of LogprobsLists", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "LogprobsLists after pickle round trip")
