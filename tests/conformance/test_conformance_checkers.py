"""The public checkers: one ConformanceError listing every violated invariant."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import conformance
import reference
from conformance import ConformanceError


def _logprobs() -> reference.LogprobsTensors:
    return reference.gather_logprobs(
        torch.randn(4, 20).log_softmax(-1), 3, torch.tensor([1, 2, 3, 4])
    )


def _output(**changes) -> reference.ModelRunnerOutput:
    sampler = reference.SamplerOutput(
        reference.pad_sampled_token_ids([[70001, 70002], [], [70003]]), None
    )
    output = reference.DeviceAsyncModelRunnerOutput(sampler, ["a", "b", "c"]).get_output()
    for name, value in changes.items():
        setattr(output, name, value)
    return output


def test_conforming_objects_pass() -> None:
    conformance.check_logprobs_tensors(_logprobs())
    conformance.check_logprobs_lists(_logprobs().tolists([0, 1, 2, 4]), num_reqs=3)
    conformance.check_sampler_output(
        reference.SamplerOutput(reference.pad_sampled_token_ids([[5, 6], [7]]), None)
    )
    conformance.check_model_runner_output(_output())


def test_logprobs_tensors_lists_every_violation() -> None:
    ids, values, ranks = _logprobs()
    bad = reference.LogprobsTensors(ids.long(), values.double(), ranks.float())
    with pytest.raises(ConformanceError) as error:
        conformance.check_logprobs_tensors(bad)
    assert error.value.violations == [
        "LogprobsTensors.logprob_token_ids: expected dtype torch.int32, found torch.int64",
        "LogprobsTensors.logprobs: expected dtype torch.float32, found torch.float64",
        "LogprobsTensors.selected_token_ranks: expected dtype torch.int32 or torch.int64, found torch.float32",
    ]
    assert "violates 3 invariant(s)" in str(error.value)


def test_logprobs_tensors_accepts_both_rank_dtypes() -> None:
    ids, values, ranks = _logprobs()
    conformance.check_logprobs_tensors(reference.LogprobsTensors(ids, values, ranks.int()))
    conformance.check_logprobs_tensors(reference.LogprobsTensors(ids, values, ranks.long()))


def test_logprobs_tensors_ranks_and_order() -> None:
    ids, values, ranks = _logprobs()
    values = values.clone()
    values[0, 1:] = values[0, 1:].flip(0)
    with pytest.raises(ConformanceError) as error:
        conformance.check_logprobs_tensors(reference.LogprobsTensors(ids, values, ranks - ranks))
    text = str(error.value)
    assert "logprobs[0][1:]: expected the top-k sorted by logprob descending" in text
    # A LogprobsTensors names its own field, not the LogprobsLists one.
    assert "LogprobsTensors.selected_token_ranks[0]: expected a 1-based rank >= 1, found 0" in text


def test_logprobs_lists_types_and_cu() -> None:
    bad = reference.LogprobsLists([(1, 2)], [[-0.5, -1.0]], [1], [1, 0])
    with pytest.raises(
        ConformanceError,
        match=r"logprob_token_ids\[0\]: expected a list of Python int, found tuple",
    ):
        conformance.check_logprobs_lists(bad)
    bad_cu = reference.LogprobsLists([[1, 2]], [[-0.5, -1.0]], [1], [1, 0])
    with pytest.raises(ConformanceError) as error:
        conformance.check_logprobs_lists(bad_cu, num_reqs=2)
    assert error.value.violations == [
        "LogprobsLists.cu_num_generated_tokens: expected cu[0] == 0, found [1]",
        "LogprobsLists.cu_num_generated_tokens: expected non-decreasing values, found [1, 0]",
        "LogprobsLists.cu_num_generated_tokens: expected the last entry to be the number of rows 1, found 0",
        "LogprobsLists.cu_num_generated_tokens: expected num_reqs + 1 = 3 entries, found 2",
    ]


def test_sampler_output_padding_only_trailing() -> None:
    ids = torch.tensor([[5, -1, 6], [7, 8, 9]], dtype=torch.int64)
    with pytest.raises(ConformanceError) as error:
        conformance.check_sampler_output(reference.SamplerOutput(ids, None))
    assert error.value.violations == [
        "SamplerOutput.sampled_token_ids: expected dtype torch.int32, found torch.int64",
        "SamplerOutput.sampled_token_ids[0]: expected PLACEHOLDER_TOKEN_ID (-1) only as trailing padding, found [5, -1, 6]",
    ]


def test_model_runner_output_lists_every_violation() -> None:
    bad = _output(
        req_id_to_index={"a": 1},
        sampled_token_ids=[[70001, -1], [], (70003,)],
        pooler_output=[None],
        prompt_logprobs_dict={"a": "not tensors"},
    )
    with pytest.raises(ConformanceError) as error:
        conformance.check_model_runner_output(bad)
    text = str(error.value)
    assert (
        "ModelRunnerOutput.req_id_to_index: expected {r: i for i, r in enumerate(req_ids)}" in text
    )
    assert (
        "ModelRunnerOutput.sampled_token_ids[2]: expected a list of Python int, found tuple" in text
    )
    assert (
        "ModelRunnerOutput.pooler_output: expected one entry per request (3) or none, found 1"
        in text
    )
    assert (
        "ModelRunnerOutput.prompt_logprobs_dict['a'].logprob_token_ids: expected a torch.Tensor"
        in text
    )
    # The four above, and the two other missing tensors of prompt_logprobs_dict['a'].
    assert len(error.value.violations) == 6


def test_model_runner_output_must_survive_pickling() -> None:
    output = _output(pooler_output=[lambda: None, None, None])
    with pytest.raises(
        ConformanceError, match=r"pooler_output\[0\]: expected a torch.Tensor or None"
    ):
        conformance.check_model_runner_output(output)
    unpicklable = _output(num_nans_in_logits=None)
    unpicklable.extra = lambda: None  # an attribute pickle cannot take
    with pytest.raises(ConformanceError, match="expected to survive pickle round trip"):
        conformance.check_model_runner_output(unpicklable)


def test_model_runner_output_of_0_11_1_has_numpy_rows_and_arrays() -> None:
    from reference.revisions import reference_module

    module = reference_module("0.11.1")
    ok = module.ModelRunnerOutput(
        req_ids=["a"],
        req_id_to_index={"a": 0},
        sampled_token_ids=[np.array([70001], dtype=np.int64)],
        logprobs=module.LogprobsLists(
            np.array([[70001]], dtype=np.int32),
            np.array([[-0.5]], dtype=np.float32),
            np.array([1], dtype=np.int64),
            [0, 1],
        ),
        prompt_logprobs_dict={},
        pooler_output=[None],
    )
    conformance.check_model_runner_output(ok, revision="0.11.1")
    with pytest.raises(ConformanceError, match=r"sampled_token_ids\[0\]: expected a numpy array"):
        conformance.check_model_runner_output(
            module.ModelRunnerOutput(["a"], {"a": 0}, [[70001]], None, {}, [None]),
            revision="0.11.1",
        )
    with pytest.raises(ConformanceError, match=r"spec revision 2025\.10"):
        conformance.check_model_runner_output(ok)  # numpy rows break 2025.10


def test_a_shape_difference_says_shape_and_prints_the_values() -> None:
    # slice_request's rows as numpy arrays: "int32 [1, 1]" once read like a value.
    from conformance.oracle.compare import differences_between

    expected = np.array([[70002, 302]], dtype=np.int32)
    found = np.zeros((0, 2), dtype=np.int32)
    assert differences_between(expected, found, "r.logprob_token_ids") == [
        "r.logprob_token_ids: expected a numpy array int32 of shape [1, 2]: [[70002, 302]], "
        "found int32 of shape [0, 2]: []"
    ]
    [tensors] = differences_between(torch.tensor([[1, 2]]), torch.tensor([[1, 3]]), "t")
    assert (
        tensors
        == "t: tensor values differ: expected shape [1, 2]: [[1, 2]], found shape [1, 2]: [[1, 3]]"
    )


class _PlainOutput:
    """A class written without ``@dataclass`` or an ``__eq__``: equal only to itself."""

    __slots__ = ("req_ids", "sampled")

    def __init__(self, req_ids: list[str], sampled: list[list[int]]) -> None:
        self.req_ids, self.sampled = req_ids, sampled


def test_a_plain_class_is_compared_by_its_members_not_by_identity() -> None:
    from conformance.oracle.compare import differences_between

    assert differences_between(_PlainOutput(["a"], [[1]]), _PlainOutput(["a"], [[1]]), "o") == []
    assert differences_between(_PlainOutput(["a"], [[1]]), _PlainOutput(["a"], [[2]]), "o") == [
        "o.sampled[0][0]: expected 1, found 2"
    ]


class _Cached:
    """A plain class whose pickle leaves out a cache it rebuilds, and that may hold itself."""

    def __init__(self, ids: list[list[int]]) -> None:
        self.ids, self._lists, self.owner = ids, [list(r) for r in ids], self

    def __getstate__(self) -> dict:
        return {"ids": self.ids}

    def __setstate__(self, state: dict) -> None:
        self.ids, self._lists, self.owner = state["ids"], None, self


def test_a_plain_class_is_compared_by_what_it_pickles_and_once_through_a_cycle() -> None:
    import pickle

    from conformance.oracle.compare import differences_between

    kept = _Cached([[1, 2]])
    assert differences_between(kept, pickle.loads(pickle.dumps(kept)), "o") == []
    assert differences_between(kept, _Cached([[1, 3]]), "o") == ["o.ids[0][1]: expected 2, found 3"]


def test_a_field_set_under_a_misspelt_name_is_named_beside_its_difference() -> None:
    import dataclasses

    from conformance.oracle.compare import differences_between

    @dataclasses.dataclass
    class Output:
        req_ids: list[str]
        sampled_token_ids: list[list[int]] = dataclasses.field(default_factory=list)

    found = Output(["a"])
    found.sampled_token_id = [[7]]  # type: ignore[attr-defined]
    [difference] = differences_between(Output(["a"], [[7]]), found, "out")
    assert difference == (
        "out.sampled_token_ids: expected 1 items, found 0 (it holds sampled_token_id, which "
        "is no field of Output: sampled_token_ids misspelt?)"
    )
    kept = Output(["a"])
    kept.sampled_token_ids_cpu = [[7]]  # type: ignore[attr-defined]  # another name on it
    assert "misspelt" not in differences_between(Output(["a"], [[7]]), kept, "out")[0]
    found.extra_note = "kept by the plugin"  # type: ignore[attr-defined]
    assert differences_between(Output(["a"]), Output(["a"]), "out") == []  # no difference, no word
