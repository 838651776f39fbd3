"""The seven spec types: kind, field names, order, annotations and defaults.

Each expectation is written out from the spec page (spec/vllm_v1_outputs-2025.10.txt)
rather than derived from the implementation, so a drift in either shows up here.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABC
from typing import get_type_hints

import pytest
import torch

import reference
from reference import (
    PLACEHOLDER_TOKEN_ID,
    AsyncModelRunnerOutput,
    DraftTokenIds,
    KVConnectorOutput,
    KVConnectorStats,
    LogprobsLists,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
)

MISSING = dataclasses.MISSING

# (name, annotation, default) per field, in the spec's order.
DATACLASS_FIELDS = {
    DraftTokenIds: [
        ("req_ids", list[str], MISSING),
        ("draft_token_ids", list[list[int]], MISSING),
    ],
    KVConnectorOutput: [
        ("finished_sending", set[str] | None, None),
        ("finished_recving", set[str] | None, None),
        ("kv_connector_stats", KVConnectorStats | None, None),
        ("invalid_block_ids", set[int], MISSING),  # default_factory=set, checked below
        ("expected_finished_count", int, 0),
    ],
    ModelRunnerOutput: [
        ("req_ids", list[str], MISSING),
        ("req_id_to_index", dict[str, int], MISSING),
        ("sampled_token_ids", list[list[int]], MISSING),
        ("logprobs", LogprobsLists | None, MISSING),
        ("prompt_logprobs_dict", dict[str, LogprobsTensors | None], MISSING),
        ("pooler_output", list[torch.Tensor | None], MISSING),
        ("kv_connector_output", KVConnectorOutput | None, None),
        ("num_nans_in_logits", dict[str, int] | None, None),
    ],
    SamplerOutput: [
        ("sampled_token_ids", torch.Tensor, MISSING),
        ("logprobs_tensors", LogprobsTensors | None, MISSING),
    ],
}

NAMEDTUPLE_FIELDS = {
    LogprobsLists: [
        ("logprob_token_ids", list[list[int]], MISSING),
        ("logprobs", list[list[float]], MISSING),
        ("sampled_token_ranks", list[int], MISSING),
        ("cu_num_generated_tokens", list[int] | None, None),
    ],
    LogprobsTensors: [
        ("logprob_token_ids", torch.Tensor, MISSING),
        ("logprobs", torch.Tensor, MISSING),
        ("selected_token_ranks", torch.Tensor, MISSING),
    ],
}


def test_package_exposes_the_spec_names_and_the_implied_operations():
    assert set(reference.__all__) == {
        "AsyncModelRunnerOutput",
        "DraftTokenIds",
        "KVConnectorOutput",
        "LogprobsLists",
        "LogprobsTensors",
        "ModelRunnerOutput",
        "SamplerOutput",
        "PLACEHOLDER_TOKEN_ID",
        "KVConnectorStats",
        "SPEC_REVISION",
        "DeviceAsyncModelRunnerOutput",
        "RunnerAsyncModelRunnerOutput",
        "gather_logprobs",
        "gather_logprobs_of_logits",
        "pad_sampled_token_ids",
        "unpad_sampled_token_ids",
    }
    for name in reference.__all__:
        assert getattr(reference, name) is not None


def test_placeholder_token_id_is_minus_one_and_spec_revision_is_2025_10():
    assert PLACEHOLDER_TOKEN_ID == -1
    assert reference.SPEC_REVISION == "2025.10"


@pytest.mark.parametrize("cls", list(DATACLASS_FIELDS), ids=lambda c: c.__name__)
def test_dataclass_types_have_the_spec_fields_in_order(cls):
    assert dataclasses.is_dataclass(cls)
    assert not issubclass(cls, tuple)
    fields = dataclasses.fields(cls)
    assert [f.name for f in fields] == [name for name, _, _ in DATACLASS_FIELDS[cls]]
    hints = get_type_hints(cls)
    for field, (name, annotation, default) in zip(fields, DATACLASS_FIELDS[cls], strict=True):
        assert hints[name] == annotation, name
        assert field.default == default or (field.default is default), name


@pytest.mark.parametrize("cls", list(NAMEDTUPLE_FIELDS), ids=lambda c: c.__name__)
def test_namedtuple_types_have_the_spec_fields_in_order(cls):
    assert issubclass(cls, tuple)
    assert not dataclasses.is_dataclass(cls)
    expected = NAMEDTUPLE_FIELDS[cls]
    assert cls._fields == tuple(name for name, _, _ in expected)
    hints = get_type_hints(cls)
    assert {name: hints[name] for name in cls._fields} == {
        name: annotation for name, annotation, _ in expected
    }
    assert cls._field_defaults == {
        name: default for name, _, default in expected if default is not MISSING
    }


def test_kv_connector_output_invalid_block_ids_defaults_to_a_fresh_empty_set():
    (field,) = [f for f in dataclasses.fields(KVConnectorOutput) if f.name == "invalid_block_ids"]
    assert field.default is MISSING
    assert field.default_factory is set
    first, second = KVConnectorOutput(), KVConnectorOutput()
    assert first.invalid_block_ids == set()
    first.invalid_block_ids.add(7)
    assert second.invalid_block_ids == set()
    assert KVConnectorOutput().invalid_block_ids == set()


def test_kv_connector_output_defaults_describe_no_kv_transfer():
    output = KVConnectorOutput()
    assert output.finished_sending is None
    assert output.finished_recving is None
    assert output.kv_connector_stats is None
    assert output.expected_finished_count == 0


def test_model_runner_output_optional_fields_default_to_none():
    output = ModelRunnerOutput(
        req_ids=[], req_id_to_index={}, sampled_token_ids=[], logprobs=None,
        prompt_logprobs_dict={}, pooler_output=[],
    )  # fmt: skip
    assert output.kv_connector_output is None
    assert output.num_nans_in_logits is None


def test_model_runner_output_requires_the_six_leading_fields():
    with pytest.raises(TypeError):
        ModelRunnerOutput(req_ids=[], req_id_to_index={}, sampled_token_ids=[], logprobs=None)


def test_sampler_output_has_no_defaults():
    with pytest.raises(TypeError):
        SamplerOutput(torch.zeros(1, 1, dtype=torch.int32))


def test_async_model_runner_output_is_an_abc_with_abstract_get_output():
    assert issubclass(AsyncModelRunnerOutput, ABC)
    assert AsyncModelRunnerOutput.__abstractmethods__ == frozenset({"get_output"})
    with pytest.raises(TypeError):
        AsyncModelRunnerOutput()
    assert get_type_hints(AsyncModelRunnerOutput.get_output)["return"] is ModelRunnerOutput
    assert "only be called once" in AsyncModelRunnerOutput.get_output.__doc__


def test_async_model_runner_output_subclass_with_get_output_is_instantiable():
    class Ready(AsyncModelRunnerOutput):
        def get_output(self):
            return "done"

    assert Ready().get_output() == "done"


def test_logprobs_lists_slice_signature():
    params = list(inspect.signature(LogprobsLists.slice).parameters)
    assert params == ["self", "start_req_idx", "end_req_idx"]


def test_logprobs_tensors_method_signatures():
    tolists = inspect.signature(LogprobsTensors.tolists).parameters
    assert list(tolists) == ["self", "cu_num_generated_tokens"]
    assert tolists["cu_num_generated_tokens"].default is None
    assert list(inspect.signature(LogprobsTensors.to_cpu_nonblocking).parameters) == ["self"]
    assert isinstance(inspect.getattr_static(LogprobsTensors, "empty_cpu"), staticmethod)
    empty_cpu = inspect.signature(LogprobsTensors.empty_cpu).parameters
    assert list(empty_cpu) == ["num_positions", "num_tokens_per_position"]


def test_kv_connector_output_is_empty_takes_no_arguments():
    assert list(inspect.signature(KVConnectorOutput.is_empty).parameters) == ["self"]


def test_kv_connector_stats_instance_is_truthy_even_with_empty_data():
    stats = KVConnectorStats()
    assert stats.data == {}
    assert stats.is_empty()
    assert bool(stats) is True
    stats.data["bytes"] = 3
    assert not stats.is_empty()
    stats.reset()
    assert stats.data == {} and stats.is_empty()


@pytest.mark.parametrize(
    ("method", "annotations"),
    [
        (LogprobsLists.slice, {"start_req_idx": int, "end_req_idx": int}),
        (LogprobsTensors.tolists, {"cu_num_generated_tokens": list[int] | None}),
        (LogprobsTensors.to_cpu_nonblocking, {"return": "LogprobsTensors"}),
        (
            LogprobsTensors.empty_cpu,
            {"num_positions": int, "num_tokens_per_position": int, "return": "LogprobsTensors"},
        ),
        (KVConnectorOutput.is_empty, {}),
        (AsyncModelRunnerOutput.get_output, {"return": ModelRunnerOutput}),
    ],
    ids=lambda value: getattr(value, "__qualname__", ""),
)
def test_methods_are_annotated_as_the_spec_writes_them(method, annotations):
    # The spec leaves slice's and tolists' return types unannotated and names
    # LogprobsTensors as a string forward reference.
    assert method.__annotations__ == annotations


@pytest.mark.parametrize("cls", list(DATACLASS_FIELDS), ids=lambda c: c.__name__)
def test_dataclass_types_are_plain_mutable_dataclasses(cls):
    params = cls.__dataclass_params__
    assert (params.init, params.repr, params.eq) == (True, True, True)
    assert (params.order, params.frozen) == (False, False)
    # eq without frozen: instances are unhashable, as with vLLM's @dataclass.
    assert cls.__hash__ is None
