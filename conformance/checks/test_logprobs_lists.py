"""LogprobsLists: a NamedTuple of its rows (Python lists, or numpy arrays from 0.11.1 on)."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._samples import lists_fields, lists_values
from conformance.checks._skips import skip
from conformance.checks._support import expect_same
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [pytest.mark.spec_type("LogprobsLists"), pytest.mark.behaviour("LogprobsLists.tuple")]


def _values(revision, with_cu: bool = True) -> tuple:
    rows = lists_values(revision, [[70001, 5]], [[-0.5, -0.25]], [2])
    has_cu = "cu_num_generated_tokens" in lists_fields(revision)
    return (*rows, [0, 1]) if has_cu and with_cu else rows


@pytest.mark.behaviour("LogprobsLists.surface")
def test_surface(surface_check: SurfaceCheck, LogprobsLists) -> None:
    check(surface_check.run(LogprobsLists))


def test_is_a_tuple_of_its_fields(LogprobsLists, revision) -> None:
    names = lists_fields(revision)
    values = _values(revision)
    obj = attempt(f"LogprobsLists({', '.join(names)})", LogprobsLists, *values)
    if not isinstance(obj, tuple) or len(obj) != len(names):
        fail(
            f"LogprobsLists: expected a {len(names)}-tuple, found {type(obj).__name__} "
            f"of length {len(obj)}"
        )
    for i, (name, given) in enumerate(zip(names, values, strict=True)):
        if obj[i] is not given or getattr(obj, name) is not given:
            fail(f"LogprobsLists.{name}: expected the object passed as item {i}, found {obj[i]!r}")


def test_cu_num_generated_tokens_defaults_to_none(LogprobsLists, revision) -> None:
    if "cu_num_generated_tokens" not in lists_fields(revision):
        skip(
            "not-in-this-vllm",
            f"revision {revision.name}: LogprobsLists has no cu_num_generated_tokens",
        )
    obj = attempt("LogprobsLists(ids, logprobs, ranks)", LogprobsLists, *_values(revision, False))
    if obj.cu_num_generated_tokens is not None:
        fail(
            "LogprobsLists(ids, logprobs, ranks).cu_num_generated_tokens: expected None, "
            f"found {obj.cu_num_generated_tokens!r}"
        )


def test_keyword_construction(LogprobsLists, revision) -> None:
    kwargs = dict(zip(lists_fields(revision), _values(revision), strict=True))
    obj = attempt("LogprobsLists(**fields)", LogprobsLists, **kwargs)
    expect_same(tuple(obj), tuple(kwargs.values()), "LogprobsLists(**fields)")


@pytest.mark.parametrize("with_cu", [False, True], ids=["without-cu", "with-cu"])
def test_pickle_round_trip(LogprobsLists, revision, with_cu) -> None:
    obj = attempt("LogprobsLists(...)", LogprobsLists, *_values(revision, with_cu))
    copy = attempt("pickle round trip of LogprobsLists", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "LogprobsLists after pickle round trip")
