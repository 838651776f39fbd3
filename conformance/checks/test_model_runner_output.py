"""ModelRunnerOutput: the dataclass the model runner sends to the scheduler (pickled
between processes, so it must survive a pickle round trip unchanged)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import torch

from conformance.checks._samples import sample_tensors
from conformance.checks._support import attempt, expect_same, fail
from conformance.invariants import model_runner_output_violations
from conformance.surface import SurfaceCheck

pytestmark = pytest.mark.spec_type("ModelRunnerOutput")


@pytest.fixture
def ModelRunnerOutput(backend):
    return backend.spec_type("ModelRunnerOutput")


def test_surface(surface_check: SurfaceCheck, ModelRunnerOutput) -> None:
    found = surface_check.run(ModelRunnerOutput)
    if found:
        fail(*found)


def batches(module: Any) -> dict[str, dict[str, Any]]:
    """Field values of typical steps, built from the backend's own nested types."""
    lists = module.LogprobsLists
    return {
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
            sampled_token_ids=[[70001]],
            logprobs=lists([[70001, 5]], [[-0.5, -0.25]], [2]),
            prompt_logprobs_dict={"r0": module.LogprobsTensors(*sample_tensors(3, 2))},
            pooler_output=[None],
        ),
        "speculative-decoding": dict(
            req_ids=["a", "b", "c"],
            req_id_to_index={"a": 0, "b": 1, "c": 2},
            sampled_token_ids=[[70001, 70002], [], [70003]],
            logprobs=lists(
                [[70001], [70002], [70003]], [[-1.0], [-2.0], [-0.5]], [1, 4, 1], [0, 2, 2, 3]
            ),
            prompt_logprobs_dict={"a": None},
            pooler_output=[torch.ones(4), None, None],
            kv_connector_output=module.KVConnectorOutput(
                finished_sending={"a"}, invalid_block_ids={9}
            ),
            num_nans_in_logits={"a": 0, "b": 1, "c": 0},
        ),
    }


CASES = ["empty-batch", "single-request", "speculative-decoding"]


@pytest.mark.parametrize("case", CASES)
def test_stores_fields_as_given(backend, ModelRunnerOutput, case: str) -> None:
    fields = batches(backend.module)[case]
    obj = attempt(f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **fields)
    wrong = [
        f"ModelRunnerOutput.{name}: expected the object passed in, found {getattr(obj, name, '<missing>')!r}"
        for name, value in fields.items()
        if getattr(obj, name, None) is not value
    ]
    if wrong:
        fail(*wrong)


def test_optional_fields_default_to_none(backend, ModelRunnerOutput) -> None:
    obj = attempt(
        "ModelRunnerOutput(<six required fields>)",
        ModelRunnerOutput,
        **batches(backend.module)["single-request"],
    )
    wrong = [
        f"ModelRunnerOutput.{name}: expected default None, found {getattr(obj, name, '<missing>')!r}"
        for name in ("kv_connector_output", "num_nans_in_logits")
        if getattr(obj, name, "<missing>") is not None
    ]
    if wrong:
        fail(*wrong)


@pytest.mark.parametrize("case", CASES)
def test_pickle_round_trip_leaves_it_unchanged(backend, ModelRunnerOutput, case: str) -> None:
    obj = attempt(
        f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **batches(backend.module)[case]
    )
    copy = attempt(
        "pickle round trip of ModelRunnerOutput", lambda: pickle.loads(pickle.dumps(obj))
    )
    expect_same(copy, obj, f"ModelRunnerOutput<{case}> after pickle round trip")


@pytest.mark.parametrize("case", CASES)
def test_typical_steps_satisfy_the_invariants(backend, ModelRunnerOutput, case: str) -> None:
    obj = attempt(
        f"ModelRunnerOutput(**<{case}>)", ModelRunnerOutput, **batches(backend.module)[case]
    )
    found = model_runner_output_violations(obj)
    if found:
        fail(*found)
