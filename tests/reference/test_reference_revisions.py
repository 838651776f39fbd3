"""The reference of every spec revision: its surface, pickling and producers.

``reference.revisions.reference_module(R)`` builds revision R's reference from the
revision's data (``reference/revisions/build.py``).  Its behaviour is held against
the real vLLM releases in ``test_reference_revisions_differential.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import reference
from conformance.oracle.surface import surface_checks
from reference import revisions
from reference.revisions import build

REVISIONS = revisions.known_revisions()
BUILT = [r for r in REVISIONS if r != revisions.DEFAULT_REVISION]
COMMON_NAMES = (
    "PLACEHOLDER_TOKEN_ID",
    "EMPTY_MODEL_RUNNER_OUTPUT",
    "SPEC_REVISION",
    "pad_sampled_token_ids",
    "unpad_sampled_token_ids",
    "gather_logprobs",
    "DeviceAsyncModelRunnerOutput",
)


def built(name: str) -> types.ModuleType:
    return revisions.reference_module(name)


# --- the module and its surface ------------------------------------------------------


@pytest.mark.parametrize("name", REVISIONS)
def test_every_type_of_the_revision_has_no_surface_deviation(name: str) -> None:
    revision = revisions.revision(name)
    module = built(name)
    deviations = [
        deviation
        for spec in revision.types.values()
        for check in surface_checks(spec)
        for deviation in check.run(getattr(module, spec.name))
    ]
    assert deviations == []


def test_the_2025_10_revision_built_from_data_matches_the_hand_written_surface() -> None:
    # reference_module("2025.10") is the hand-written package; building the same data
    # must also pass, which keeps rev_2025_10 and the builder honest with each other.
    revision = revisions.revision("2025.10")
    module = build.build_module(revision)
    for spec in revision.types.values():
        for check in surface_checks(spec):
            assert check.run(getattr(module, spec.name)) == [], check.id


@pytest.mark.parametrize("name", BUILT)
def test_the_built_module_exposes_the_spec_names_constants_and_producers(name: str) -> None:
    module = built(name)
    assert isinstance(module, types.ModuleType)
    assert name == module.SPEC_REVISION
    assert module.PLACEHOLDER_TOKEN_ID == -1
    for attribute in (*revisions.revision(name).types, *COMMON_NAMES):
        assert hasattr(module, attribute), attribute
    empty = module.EMPTY_MODEL_RUNNER_OUTPUT
    assert type(empty) is module.ModelRunnerOutput
    assert (empty.req_ids, empty.sampled_token_ids) == ([], [])
    assert getattr(empty, "req_id_to_index", {}) == {}  # a field to 0.33.0
    assert not inspect.isabstract(module.DeviceAsyncModelRunnerOutput)
    assert issubclass(module.DeviceAsyncModelRunnerOutput, module.AsyncModelRunnerOutput)


def test_a_revision_and_each_of_its_releases_give_the_same_module() -> None:
    assert revisions.reference_module("0.15.1") is revisions.reference_module("0.14.0")
    assert revisions.reference_module("2025.10") is reference


def test_module_attribute_names_round_trip_and_nothing_else_resolves() -> None:
    for name in REVISIONS:
        attribute = build.module_attribute_name(name)
        assert attribute.isidentifier()
        assert build.revision_of_attribute(attribute) == name
    assert build.module_attribute_name("0.12.0") == "r_0_12_0"
    for other in ("r_0_15_1", "r_9_9_9", "reference_module", "r_", "__path__"):
        assert build.revision_of_attribute(other) is None
    with pytest.raises(AttributeError):
        _ = revisions.r_9_9_9  # type: ignore[attr-defined]
    assert revisions.r_0_12_0 is revisions.reference_module("0.12.0")  # type: ignore[attr-defined]


def test_built_classes_live_where_pickle_looks_for_them() -> None:
    module = built("0.12.0")
    cls = module.LogprobsLists
    assert cls.__module__ == "reference.revisions"
    assert cls.__qualname__ == "r_0_12_0.LogprobsLists"
    assert module.LogprobsTensors.empty_cpu.__qualname__ == "r_0_12_0.LogprobsTensors.empty_cpu"


def test_methods_of_different_revisions_are_separate_functions() -> None:
    # Annotations are stamped per revision: sharing one function object would let the
    # last revision built overwrite the others'.
    old = built("0.10.2").LogprobsLists.slice
    new = built("0.11.1").LogprobsLists.slice
    assert old is not new
    assert list(inspect.signature(old).parameters) == ["self", "start", "end"]
    assert list(inspect.signature(new).parameters) == ["self", "start_req_idx", "end_req_idx"]


class DeviceMemory(torch.Tensor):
    """A tensor numpy refuses as torch refuses device memory; ``.cpu()`` is its host copy."""

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise TypeError("can't convert cuda:0 device type tensor to numpy")

    def cpu(self, *args: object, **kwargs: object) -> torch.Tensor:
        return self.as_subclass(torch.Tensor).clone()


def test_numpy_array_tolists_reads_host_tensors_in_place_and_copies_device_ones() -> None:
    module = built("0.34.0")
    host = module.LogprobsTensors(
        torch.tensor([[7, 8]], dtype=torch.int32),
        torch.tensor([[-0.5, -1.5]]),
        torch.tensor([2], dtype=torch.int32),
    )
    lists = host.tolists([0, 1])
    # A host tensor's array is a view of it, as ``.cpu().numpy()`` gives one.
    assert np.shares_memory(lists.logprob_token_ids, host.logprob_token_ids.numpy())
    on_device = module.LogprobsTensors(*(t.as_subclass(DeviceMemory) for t in host[:3]))
    copied = on_device.tolists([0, 1])
    assert [a.tolist() for a in copied[:3]] == [a.tolist() for a in lists[:3]]
    assert copied.cu_num_generated_tokens == [0, 1]


# --- pickling ------------------------------------------------------------------------


def sample_objects(module: types.ModuleType) -> list[object]:
    """One instance of each spec type the revision has, with every field set."""
    revision = revisions.revision(module.SPEC_REVISION)
    tensors = module.gather_logprobs(
        torch.linspace(-5, 0, 30).reshape(3, 10), 2, torch.tensor([1, 9, 4])
    )
    lists = tensors.tolists()
    kv = module.KVConnectorOutput(finished_sending={"a"}, finished_recving=None)
    objects: list[object] = [
        tensors,
        lists,
        kv,
        module.SamplerOutput(torch.tensor([[3, -1], [4, 5]], dtype=torch.int32), tensors),
        module.DraftTokenIds(["a", "b"], [[1, 2], []]),
        module.ModelRunnerOutput(
            req_ids=["a", "b", "c"],
            **_index_where_the_revision_has_it(revision, {"a": 0, "b": 1, "c": 2}),
            sampled_token_ids=[[1], [9], [4]],
            logprobs=lists,
            prompt_logprobs_dict={"a": tensors, "b": None},
            pooler_output=[None, torch.ones(2), None],
            kv_connector_output=kv,
        ),
        module.EMPTY_MODEL_RUNNER_OUTPUT,
    ]
    if "ECConnectorOutput" in revision.types:
        objects.append(module.ECConnectorOutput(finished_sending={"m"}))
    if "SamplingMaskLists" in revision.types:
        objects.append(
            module.SamplingMaskLists(np.arange(4, dtype=np.int32), np.array([0, 1, 4]), [0, 2])
        )
    if "RoutedExpertsTensors" in revision.types:
        experts = module.RoutedExpertsTensors(
            torch.ones(2, 3, 2, dtype=torch.uint8), torch.arange(2)
        )
        objects += [experts, experts.tolists()]
    return objects


def same_value(a: object, b: object) -> bool:
    """Same types all the way down and equal content (tensors and arrays by dtype and values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        return a.dtype == b.dtype and a.device == b.device and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)  # type: ignore[attr-defined]
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same_value, a, b))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(a):
        return all(
            same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    return a == b


@pytest.mark.parametrize("name", BUILT)
def test_built_objects_survive_a_pickle_round_trip(name: str) -> None:
    for original in sample_objects(built(name)):
        for protocol in (2, pickle.HIGHEST_PROTOCOL):
            loaded = pickle.loads(pickle.dumps(original, protocol=protocol))
            assert type(loaded) is type(original)
            assert same_value(loaded, original), type(original).__qualname__


_CHILD = """
import pickle, sys
from reference import revisions
objects = pickle.load(sys.stdin.buffer)
module = revisions.reference_module("0.12.0")
assert all(type(o).__module__ == "reference.revisions" for o in objects)
assert type(objects[5]) is module.ModelRunnerOutput
assert type(objects[5].logprobs) is module.LogprobsLists
pickle.dump(objects, sys.stdout.buffer)
"""


def test_a_new_process_unpickles_built_objects_by_building_their_revision() -> None:
    objects = sample_objects(built("0.12.0"))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=pickle.dumps(objects),
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr.decode()
    back = pickle.loads(child.stdout)
    assert [type(o) for o in back] == [type(o) for o in objects]
    assert same_value(back, objects)


# --- producers -----------------------------------------------------------------------


@pytest.mark.parametrize("name", REVISIONS)
def test_gather_logprobs_returns_the_revisions_logprobs_tensors(name: str) -> None:
    module = built(name)
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 1.0, 1.0]]).log_softmax(-1)
    tensors = module.gather_logprobs(logits, 2, torch.tensor([2, 1]))
    assert type(tensors) is module.LogprobsTensors
    assert tensors.logprob_token_ids.tolist() == [[2, 1, 2], [1, 0, 1]]
    assert tensors.selected_token_ranks.tolist() == [2, 3]


def _async_output(module: types.ModuleType, **kwargs: object) -> object:
    """A speculative step: request b produced two tokens, c none; logprobs per padded cell."""
    sampled = module.pad_sampled_token_ids([[7], [3, 5], []], max_len=2)
    logits = torch.arange(60, dtype=torch.float32).reshape(6, 10).log_softmax(-1)
    flat = sampled.flatten().clamp(min=0)
    tensors = module.gather_logprobs(logits, 1, flat)
    return module.DeviceAsyncModelRunnerOutput(
        module.SamplerOutput(sampled, tensors), ["a", "b", "c"], **kwargs
    )


@pytest.mark.parametrize("name", REVISIONS)
def test_the_async_output_builds_the_revisions_model_runner_output(name: str) -> None:
    module = built(name)
    revision = revisions.revision(name)
    kv = module.KVConnectorOutput(finished_sending={"a"})
    pending = _async_output(module, kv_connector_output=kv)
    output = pending.get_output()  # type: ignore[attr-defined]
    assert type(output) is module.ModelRunnerOutput
    if "req_id_to_index" in revision.types["ModelRunnerOutput"].field_names:
        assert output.req_id_to_index == {"a": 0, "b": 1, "c": 2}
    else:  # 0.34.0 on: the scheduler maps rows by req_ids
        assert not hasattr(output, "req_id_to_index")
    assert output.kv_connector_output is kv
    assert [list(map(int, row)) for row in output.sampled_token_ids] == [[7], [3, 5], []]
    numpy_rows = "np.ndarray" in revision.types["ModelRunnerOutput"].fields[2].annotation
    row_type = np.ndarray if numpy_rows else list
    assert all(type(row) is row_type for row in output.sampled_token_ids)

    logprobs = output.logprobs
    assert type(logprobs) is module.LogprobsLists
    numpy_lists = revision.has("LogprobsTensors.tolists:numpy-arrays")
    field_type = np.ndarray if numpy_lists else list
    assert all(type(logprobs[i]) is field_type for i in range(3))
    assert [int(row[0]) for row in logprobs.logprob_token_ids] == [7, 3, 5]
    if "cu_num_generated_tokens" in logprobs._fields:
        assert logprobs.cu_num_generated_tokens == [0, 1, 3, 3]
    else:
        assert len(logprobs._fields) == 3

    with pytest.raises(RuntimeError):
        pending.get_output()  # type: ignore[attr-defined]


def test_the_0_33_async_output_salvages_its_kv_connector_output() -> None:
    module = built("0.33.0")
    kv = module.KVConnectorOutput(invalid_block_ids={3})
    assert _async_output(module, kv_connector_output=kv).get_kv_connector_output() is kv  # type: ignore[attr-defined]
    assert _async_output(module).get_kv_connector_output() is None  # type: ignore[attr-defined]
    assert not hasattr(reference.DeviceAsyncModelRunnerOutput, "get_kv_connector_output")


def test_the_async_output_refuses_another_revisions_sampler_output() -> None:
    old, new = built("0.10.2"), built("0.33.0")
    foreign = old.SamplerOutput(torch.zeros(1, 1, dtype=torch.int32), None)
    with pytest.raises(TypeError, match="SamplerOutput"):
        new.DeviceAsyncModelRunnerOutput(foreign, ["a"])


def _index_where_the_revision_has_it(revision, index: dict[str, int]) -> dict[str, object]:
    """``req_id_to_index`` as a keyword, for the revisions whose ModelRunnerOutput has it."""
    names = revision.types["ModelRunnerOutput"].field_names
    return {"req_id_to_index": index} if "req_id_to_index" in names else {}
