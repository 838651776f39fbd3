"""ModelRunnerOutput: the dataclass the model runner sends to the scheduler (pickled
between processes, so it must survive a pickle round trip unchanged).  Its fields
changed with almost every release; the revision's data says which it has."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import torch

from conformance.checks._samples import make_logprobs_lists, sample_tensors, sampled_rows
from conformance.checks._skips import skip
from conformance.checks._support import expect_same
from conformance.oracle.failing import attempt, check, fail
from conformance.oracle.invariants import model_runner_output_violations
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("ModelRunnerOutput.dataclass"),
]


@pytest.mark.behaviour("ModelRunnerOutput.surface")
def test_surface(surface_check: SurfaceCheck, ModelRunnerOutput) -> None:
    check(surface_check.run(ModelRunnerOutput))


def _kv_output(module: Any, revision) -> Any:
    fields = revision.types["KVConnectorOutput"].field_names
    values = {"finished_sending": {"a"}, "invalid_block_ids": {9}}
    return module.KVConnectorOutput(**{k: v for k, v in values.items() if k in fields})


def batches(module: Any, revision) -> dict[str, dict[str, Any]]:
    """Field values of typical steps, built from the backend's own nested types."""
    has_cu = "cu_num_generated_tokens" in revision.types["LogprobsLists"].field_names
    speculative_cu = [0, 2, 2, 3] if has_cu else None
    names = revision.types["ModelRunnerOutput"].field_names
    steps = {
        "empty-batch": dict(
            req_ids=[],
            req_id_to_index={},
            sampled_token_ids=[],
            logprobs=None,
            prompt_logprobs_dict={},
            pooler_output=[],
        ),
        "single-request": dict(
            req_ids=["r0"],
            req_id_to_index={"r0": 0},
            sampled_token_ids=sampled_rows(revision, [[70001]]),
            logprobs=make_logprobs_lists(module, revision, [[70001, 5]], [[-0.5, -0.25]], [2]),
            prompt_logprobs_dict={"r0": module.LogprobsTensors(*sample_tensors(3, 2))},
            pooler_output=[None],
        ),
        "speculative-decoding": dict(
            req_ids=["a", "b", "c"],
            req_id_to_index={"a": 0, "b": 1, "c": 2},
            sampled_token_ids=sampled_rows(revision, [[70001, 70002], [], [70003]]),
            logprobs=make_logprobs_lists(
                module,
                revision,
                [[70001], [70002], [70003]],
                [[-1.0], [-2.0], [-0.5]],
                [1, 4, 1],
                speculative_cu,
            ),
            prompt_logprobs_dict={"a": None},
            pooler_output=[torch.ones(4), None, None],
            kv_connector_output=_kv_output(module, revision),
            num_nans_in_logits={"a": 0, "b": 1, "c": 0},
        ),
    }
    # Every step names only the fields the revision has (req_id_to_index is gone from 0.34.0).
    return {case: {k: v for k, v in step.items() if k in names} for case, step in steps.items()}


CASES = ["empty-batch", "single-request", "speculative-decoding"]


def steps(backend, revision) -> dict[str, dict[str, Any]]:
    """``batches`` of the backend's module.

    A step is built from the backend's own LogprobsLists, LogprobsTensors and
    KVConnectorOutput; when one of those cannot be built the way the revision says,
    that type's own checks fail, and this check cannot run (skipped, so the failure
    lands on the type at fault, not here).
    """
    try:
        return batches(backend.module, revision)
    except Exception as error:
        skip(
            "follows-from-failure",
            "cannot build a typical step from the backend's nested types "
            f"({type(error).__name__}: {error}); see the failures of those types",
        )


@pytest.mark.parametrize("case", CASES)
def test_stores_fields_as_given(backend, revision, ModelRunnerOutput, case: str) -> None:
    fields = steps(backend, revision)[case]
    obj = attempt(f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **fields)
    wrong = [
        f"ModelRunnerOutput.{name}: expected the object passed in, found {getattr(obj, name, '<missing>')!r}"
        for name, value in fields.items()
        if getattr(obj, name, None) is not value
    ]
    if wrong:
        fail(*wrong)


def test_optional_fields_take_their_defaults(backend, revision, ModelRunnerOutput) -> None:
    spec = revision.types["ModelRunnerOutput"]
    given = steps(backend, revision)["single-request"]
    required = {f.name: given[f.name] for f in spec.fields if not f.has_default}
    where = f"ModelRunnerOutput({', '.join(required)})"
    obj = attempt(where, ModelRunnerOutput, **required)
    wrong = []
    for field in spec.fields:
        if not field.has_default:
            continue
        expected, found = field.default_value(), getattr(obj, field.name, "<missing>")
        if type(found) is not type(expected) or found != expected:
            wrong.append(f"{where}.{field.name}: expected default {expected!r}, found {found!r}")
    if wrong:
        fail(*wrong)


@pytest.mark.parametrize("case", CASES)
def test_pickle_round_trip_leaves_it_unchanged(
    backend, revision, ModelRunnerOutput, case: str
) -> None:
    obj = attempt(
        f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **steps(backend, revision)[case]
    )
    copy = attempt(
        "pickle round trip of ModelRunnerOutput", lambda: pickle.loads(pickle.dumps(obj))
    )
    expect_same(copy, obj, f"ModelRunnerOutput<{case}> after pickle round trip")


@pytest.mark.parametrize("case", CASES)
def test_typical_steps_satisfy_the_invariants(
    backend, revision, ModelRunnerOutput, case: str
) -> None:
    obj = attempt(
        f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **steps(backend, revision)[case]
    )
    check(model_runner_output_violations(obj, revision=revision))
