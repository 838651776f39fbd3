"""The built reference of each revision against the real vLLM release it stands for.

Every ``outputs-X.py.txt`` from 0.10.2 on among the release texts (fetched into the user cache) is loaded
in this process (``conformance.releases.texts``) and paired with the reference of
its revision.  Each scenario below is a function of a module: it builds its inputs
from that module's own classes, runs one behaviour's operations, and returns what
came out (or which exception).  Both modules must give the same results: values,
exact types (numpy and torch dtypes included), None-ness, and identity where the
rule is about identity (``cat`` of one input, ``with_*`` and the shared empty output).

The hand-written 2025.10 package is paired with the 2025.10 revision built from
data in the same way.  Where vLLM rejects input with ``assert``, the reference
raises its own error (``ValueError``); any exception counts as the same outcome.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version
from vllm_release_texts import RELEASES as RELEASES_DIR
from vllm_release_texts import SKIP_REASON

import reference
from reference import revisions
from reference.revisions import build
from reference.revisions.model import SpecRevision

if not RELEASES_DIR.is_dir():
    pytest.skip(SKIP_REASON, allow_module_level=True)

from conformance.releases.texts import load_outputs_module, release_texts

FIRST = Version("0.10.2")
# The releases this suite has a revision of (a cache may hold a newer one already).
TEXTS = {
    v: p
    for v, p in release_texts(RELEASES_DIR).items()
    if Version(v) >= FIRST and v in revisions.known_releases()
}
HAND_WRITTEN = "2025.10 (hand-written)"


@dataclasses.dataclass(frozen=True)
class Pair:
    """A module to hold the reference against, and the reference of its revision."""

    label: str
    expected: types.ModuleType
    built: types.ModuleType
    revision: SpecRevision


@functools.cache
def pair_for(label: str) -> Pair:
    if label == HAND_WRITTEN:
        revision = revisions.revision("2025.10")
        return Pair(label, reference, build.build_module(revision), revision)
    module = load_outputs_module(TEXTS[label], "vllm_release_outputs_" + label.replace(".", "_"))
    revision = revisions.revision(revisions.revision_for_vllm_version(label))
    return Pair(label, module, revisions.reference_module(revision.name), revision)


def revision_of(label: str) -> SpecRevision:
    name = "2025.10" if label == HAND_WRITTEN else revisions.revision_for_vllm_version(label)
    return revisions.revision(name)


def pairs(where: Callable[[SpecRevision], bool] = lambda revision: True) -> Any:
    """Parametrize ``pair`` over the releases (and 2025.10) whose revision satisfies ``where``."""
    labels = [label for label in [*TEXTS, HAND_WRITTEN] if where(revision_of(label))]
    return pytest.mark.parametrize("label", labels)


@pytest.fixture
def pair(label: str) -> Pair:
    return pair_for(label)


def having(behaviour: str) -> Callable[[SpecRevision], bool]:
    return lambda revision: revision.has(behaviour)


def with_type(name: str) -> Callable[[SpecRevision], bool]:
    return lambda revision: name in revision.types


# --- comparing outcomes --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Raised:
    error: type[BaseException]


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as error:
        return Raised(type(error))


def assert_same(expected: Any, found: Any, where: str = "result") -> None:
    """Same value, same kind of object at every level; classes of the two modules by name."""
    if isinstance(expected, Raised):
        assert isinstance(found, Raised), (
            f"{where}: expected {expected.error.__name__}, got {found!r}"
        )
        if expected.error is not AssertionError:  # vLLM's asserts are ValueError here
            assert found.error is expected.error, where
        return
    assert not isinstance(found, Raised), f"{where}: expected {expected!r}, raised {found.error}"
    if isinstance(expected, tuple) and hasattr(type(expected), "_fields"):
        assert type(found).__name__ == type(expected).__name__, where
        assert found._fields == expected._fields, where
        for name in expected._fields:
            assert_same(getattr(expected, name), getattr(found, name), f"{where}.{name}")
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        assert type(found).__name__ == type(expected).__name__, where
        for f in dataclasses.fields(expected):
            assert_same(getattr(expected, f.name), getattr(found, f.name), f"{where}.{f.name}")
    elif isinstance(expected, torch.Tensor):
        assert type(found) is torch.Tensor, where
        assert (found.dtype, found.shape, found.device) == (
            expected.dtype,
            expected.shape,
            expected.device,
        ), where
        assert torch.equal(found, expected), where
    elif isinstance(expected, np.ndarray):
        assert type(found) is np.ndarray, where
        assert (found.dtype, found.shape) == (expected.dtype, expected.shape), where
        assert np.array_equal(found, expected), where
    elif isinstance(expected, (list, tuple)):
        assert type(found) is type(expected), f"{where}: {type(found)} vs {type(expected)}"
        assert len(found) == len(expected), where
        for i, (e, f) in enumerate(zip(expected, found, strict=True)):
            assert_same(e, f, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert type(found) is dict and found.keys() == expected.keys(), where
        for key in expected:
            assert_same(expected[key], found[key], f"{where}[{key!r}]")
    else:
        assert type(found) is type(expected), f"{where}: {type(found)} vs {type(expected)}"
        assert found == expected, f"{where}: {found!r} vs {expected!r}"


def compare(pair: Pair, scenario: Callable[[types.ModuleType, SpecRevision], Any]) -> None:
    expected = outcome(lambda: scenario(pair.expected, pair.revision))
    found = outcome(lambda: scenario(pair.built, pair.revision))
    assert_same(expected, found, f"{pair.label}: {scenario.__name__}")


def method(module: types.ModuleType, type_name: str, name: str) -> bool:
    return hasattr(getattr(module, type_name, None), name)


# --- inputs, built from a module's own classes -----------------------------------------

ROWS = 5
CU_CHOICES: tuple[list[int] | None, ...] = (None, [], [0, 2, 2, 5], [0, 1, 3, 4, 5])


def logprobs_lists(m: types.ModuleType, revision: SpecRevision, cu: list[int] | None) -> Any:
    ids = [[10 + i, i, 2 * i] for i in range(ROWS)]
    values = [[-0.5 * i, -0.25, -4.0] for i in range(ROWS)]
    ranks = [i + 1 for i in range(ROWS)]
    if revision.types["LogprobsLists"].fields[0].annotation == "np.ndarray":
        fields: list[Any] = [
            np.array(ids, dtype=np.int32),
            np.array(values, dtype=np.float32),
            np.array(ranks, dtype=np.int64),
        ]
    else:
        fields = [ids, values, ranks]
    if "cu_num_generated_tokens" in m.LogprobsLists._fields:
        fields.append(cu)
    return m.LogprobsLists(*fields)


def logprobs_tensors(
    m: types.ModuleType,
    cu: list[int] | None = None,
    cu_tensor: torch.Tensor | None = None,
    offset: int = 0,
) -> Any:
    extra = {}
    if "cu_num_generated_tokens" in m.LogprobsTensors._fields:
        extra["cu_num_generated_tokens"] = cu
    if "cu_num_generated_tokens_tensor" in m.LogprobsTensors._fields:
        extra["cu_num_generated_tokens_tensor"] = cu_tensor
    return m.LogprobsTensors(
        torch.arange(ROWS * 3, dtype=torch.int32).reshape(ROWS, 3) + offset,
        torch.linspace(-3, 0, ROWS * 3, dtype=torch.float32).reshape(ROWS, 3),
        torch.arange(1, ROWS + 1, dtype=torch.int64),  # the sampler's int64 ranks
        **extra,
    )


def cu_variants(m: types.ModuleType) -> list[dict[str, Any]]:
    """Tensors-level cu settings the module's LogprobsTensors can hold."""
    fields = m.LogprobsTensors._fields
    variants: list[dict[str, Any]] = [{}]
    if "cu_num_generated_tokens" in fields:
        variants.append({"cu": [0, 1, 5]})
    if "cu_num_generated_tokens_tensor" in fields:
        variants.append({"cu_tensor": torch.tensor([0, 2, 5])})
        variants.append({"cu": [0, 1, 5], "cu_tensor": torch.tensor([0, 2, 5])})
    return variants


class Combinable:
    """Connector stats and KV events: vLLM's merge combines them with their own methods."""

    def __init__(self, *items: str) -> None:
        self.items = items

    def aggregate(self, other: Combinable) -> Combinable:
        return Combinable(*self.items, *other.items)

    merge = aggregate

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Combinable) and self.items == other.items

    __hash__ = None  # type: ignore[assignment]


OPAQUE = object()  # truthy, like any connector object without __bool__
TRUTHY = {"expected_finished_count": 2, "kv_connector_stats": Combinable("s")}
FALSY = {"expected_finished_count": 0}


def truthy_value(field: str) -> Any:
    if field in TRUTHY:
        return TRUTHY[field]
    if field in ("finished_sending", "finished_recving", "failed_recving"):
        return {"req"}
    if field == "invalid_block_ids":
        return {7}
    return OPAQUE


def falsy_value(field: str) -> Any:
    return FALSY.get(field, set() if "ids" in field or "finished" in field else None)


# --- the module ----------------------------------------------------------------------

HELD_TYPES = (
    "ECConnectorOutput",
    "SamplingMaskLists",
    "RoutedExpertsTensors",
    "RoutedExpertsLists",
)


@pairs()
def test_the_revision_has_exactly_the_release_s_types(pair: Pair) -> None:
    for name in pair.revision.types:
        assert isinstance(getattr(pair.expected, name), type), name
    for name in HELD_TYPES:
        assert hasattr(pair.expected, name) == (name in pair.revision.types), name


@pairs()
def test_the_release_s_classes_define_exactly_the_revision_s_methods(pair: Pair) -> None:
    # Which scenarios run for a release is chosen from its revision's data: this
    # holds that data against the release itself.
    for spec in pair.revision.types.values():
        cls = getattr(pair.expected, spec.name)
        own = {
            name
            for name, member in vars(cls).items()
            if not name.startswith("_")
            and callable(
                member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            )
        }
        assert own == {m.name for m in spec.methods}, spec.name


@pairs()
def test_async_model_runner_output_has_the_same_abstract_methods(pair: Pair) -> None:
    def abstract(m: types.ModuleType, revision: SpecRevision) -> list[str]:
        return sorted(m.AsyncModelRunnerOutput.__abstractmethods__)

    compare(pair, abstract)


# The 2025.10 spec page shows no EMPTY_MODEL_RUNNER_OUTPUT: releases only.
@pytest.mark.parametrize("label", list(TEXTS))
def test_the_empty_model_runner_output_is_the_same(pair: Pair) -> None:

    def empty(m: types.ModuleType, revision: SpecRevision) -> Any:
        return m.EMPTY_MODEL_RUNNER_OUTPUT

    compare(pair, empty)


# --- LogprobsLists -------------------------------------------------------------------


@pairs()
def test_logprobs_lists_slice_and_slice_request(pair: Pair) -> None:
    with_cu = "cu_num_generated_tokens" in pair.expected.LogprobsLists._fields
    for cu in CU_CHOICES if with_cu else (None,):
        if method(pair.expected, "LogprobsLists", "slice"):
            for start, end in [(0, 2), (1, 3), (0, 3), (2, 2), (1, 2), (0, 4)]:

                def slice(m: types.ModuleType, revision: SpecRevision) -> Any:
                    return logprobs_lists(m, revision, cu).slice(start, end)  # noqa: B023

                compare(pair, slice)
        if method(pair.expected, "LogprobsLists", "slice_request"):
            for req_idx, num_positions in [(0, 2), (1, 1), (2, 3), (0, 0), (3, 1)]:

                def slice_request(m: types.ModuleType, revision: SpecRevision) -> Any:
                    lists = logprobs_lists(m, revision, cu)  # noqa: B023
                    return lists.slice_request(req_idx, num_positions)  # noqa: B023

                compare(pair, slice_request)


@settings(max_examples=25)
@given(
    label=st.sampled_from(["0.11.0", "0.11.1", "0.12.0", HAND_WRITTEN]),
    lengths=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    data=st.data(),
)
def test_logprobs_lists_slicing_agrees_for_any_request_boundaries(
    label: str, lengths: list[int], data: st.DataObject
) -> None:
    if label not in TEXTS and label != HAND_WRITTEN:
        pytest.skip(f"no release text for {label}")
    pair = pair_for(label)
    cu = [0]
    for length in lengths:
        cu.append(cu[-1] + length)
    start = data.draw(st.integers(0, len(lengths)))
    end = data.draw(st.integers(start, len(lengths)))
    with_cu = "cu_num_generated_tokens" in pair.expected.LogprobsLists._fields

    def sliced(m: types.ModuleType, revision: SpecRevision) -> Any:
        lists = logprobs_lists(m, revision, cu if with_cu else None)
        if hasattr(lists, "slice"):
            return lists.slice(start, end)
        return lists.slice_request(start, end - start)

    compare(pair, sliced)


# --- LogprobsTensors -----------------------------------------------------------------


@pairs()
def test_logprobs_tensors_tolists(pair: Pair) -> None:
    takes_cu = pair.revision.has("LogprobsTensors.tolists:cu-argument")
    for variant in cu_variants(pair.expected):
        for argument in ((), (None,), ([0, 3, 5],)) if takes_cu else ((),):

            def tolists(m: types.ModuleType, revision: SpecRevision) -> Any:
                return logprobs_tensors(m, **variant).tolists(*argument)  # noqa: B023

            compare(pair, tolists)


@pairs(having("LogprobsTensors.to_cpu_nonblocking"))
def test_logprobs_tensors_to_cpu_nonblocking_on_cpu_returns_self(pair: Pair) -> None:
    for variant in cu_variants(pair.expected):

        def to_cpu(m: types.ModuleType, revision: SpecRevision) -> Any:
            tensors = logprobs_tensors(m, **variant)  # noqa: B023
            copied = tensors.to_cpu_nonblocking()
            return copied is tensors, copied

        compare(pair, to_cpu)


@pairs()
def test_logprobs_tensors_empty_cpu(pair: Pair) -> None:
    def empty_cpu(m: types.ModuleType, revision: SpecRevision) -> Any:
        tensors = m.LogprobsTensors.empty_cpu(3, 4)
        # Values are uninitialised: compare everything else.
        return [
            (type(v).__name__, v.dtype, tuple(v.shape), v.device.type)
            if isinstance(v, torch.Tensor)
            else v
            for v in tensors
        ] + [type(tensors).__name__]

    compare(pair, empty_cpu)


@pairs(having("LogprobsTensors.filter"))
def test_logprobs_tensors_filter(pair: Pair) -> None:
    for variant in cu_variants(pair.expected):
        for mask in ([True, False, True, True, False], [False] * ROWS):

            def filter(m: types.ModuleType, revision: SpecRevision) -> Any:
                tensors = logprobs_tensors(m, **variant)  # noqa: B023
                return tensors.filter(torch.tensor(mask))  # noqa: B023

            compare(pair, filter)


@pairs(having("LogprobsTensors.cat"))
def test_logprobs_tensors_cat(pair: Pair) -> None:
    cases: list[tuple[list[dict[str, Any]], list[int] | None]] = [
        ([{}], None),
        ([{}], [0, 5]),
        ([{"cu": [0, 5]}], None),
        ([{"cu": [0, 5]}], [0, 2, 5]),
        ([{}, {}], None),
        ([{}, {}], [0, 4, 10]),
        ([{"cu": [0, 5]}, {}], None),
        ([{"cu": [0, 5]}, {"cu": [0, 5]}], [0, 5, 10]),
        ([], None),
    ]
    if "cu_num_generated_tokens_tensor" in pair.expected.LogprobsTensors._fields:
        cases += [
            ([{"cu_tensor": torch.tensor([0, 5])}], None),
            ([{"cu_tensor": torch.tensor([0, 5])}, {}], [0, 5, 10]),
        ]
    for inputs, cu in cases:

        def cat(m: types.ModuleType, revision: SpecRevision) -> Any:
            tensors = [logprobs_tensors(m, offset=i, **v) for i, v in enumerate(inputs)]  # noqa: B023
            result = m.LogprobsTensors.cat(tensors, cu)  # noqa: B023
            return [result is t for t in tensors], result

        compare(pair, cat)


# --- KVConnectorOutput, ECConnectorOutput --------------------------------------------


def is_empty_table(type_name: str) -> Callable[[types.ModuleType, SpecRevision], Any]:
    def is_empty(m: types.ModuleType, revision: SpecRevision) -> Any:
        cls = getattr(m, type_name)
        names = revision.types[type_name].field_names
        rows = [cls().is_empty()]
        for name in names:
            rows.append((name, cls(**{name: truthy_value(name)}).is_empty()))
            rows.append((name, cls(**{name: falsy_value(name)}).is_empty()))
        every = {name: truthy_value(name) for name in names}
        rows.append(cls(**every).is_empty())
        return rows

    is_empty.__name__ = f"{type_name}.is_empty"
    return is_empty


@pairs(having("KVConnectorOutput.is_empty"))
def test_kv_connector_output_is_empty_truth_table(pair: Pair) -> None:
    compare(pair, is_empty_table("KVConnectorOutput"))


@pairs(having("ECConnectorOutput.is_empty"))
def test_ec_connector_output_is_empty_truth_table(pair: Pair) -> None:
    compare(pair, is_empty_table("ECConnectorOutput"))


@pairs(having("KVConnectorOutput.merge"))
def test_kv_connector_output_merge(pair: Pair) -> None:

    def outputs(m: types.ModuleType) -> list[Any]:
        kv = m.KVConnectorOutput
        return [
            kv(finished_sending={"a"}, invalid_block_ids={1}, kv_connector_stats=Combinable("x")),
            kv(finished_sending={"b"}, finished_recving={"c"}, kv_cache_events=Combinable("e")),
            kv(invalid_block_ids={2, 3}, kv_connector_stats=Combinable("y")),
        ]

    for picked in ([0], [0, 1], [0, 1, 2], [1, 2], []):

        def merge(m: types.ModuleType, revision: SpecRevision) -> Any:
            chosen = [outputs(m)[i] for i in picked]  # noqa: B023
            merged = m.KVConnectorOutput.merge(*chosen)
            # With one input vLLM keeps its sets (no copy): the same objects come back.
            shared = [
                getattr(merged, f) is getattr(chosen[0], f)
                for f in ("finished_sending", "invalid_block_ids")
            ]
            return shared, merged

        compare(pair, merge)

    def mismatched_expected_counts(m: types.ModuleType, revision: SpecRevision) -> Any:
        kv = m.KVConnectorOutput
        return kv.merge(kv(expected_finished_count=1), kv(expected_finished_count=2))

    compare(pair, mismatched_expected_counts)


# --- ModelRunnerOutput ---------------------------------------------------------------


@pairs(having("ModelRunnerOutput.with_kv_conn_output_only"))
def test_with_kv_conn_output_only(pair: Pair) -> None:

    def with_kv(m: types.ModuleType, revision: SpecRevision) -> Any:
        empty, make = m.EMPTY_MODEL_RUNNER_OUTPUT, m.ModelRunnerOutput.with_kv_conn_output_only
        kv = m.KVConnectorOutput(finished_recving={"r"})
        carried = make(kv)
        return (
            make(None) is empty,
            make(m.KVConnectorOutput()) is empty,
            carried is empty,
            carried.kv_connector_output is kv,
            empty.kv_connector_output,
            carried,
        )

    compare(pair, with_kv)


@pairs(having("ModelRunnerOutput.with_ec_conn_output"))
def test_with_ec_conn_output_and_with_ec_conn_output_only(pair: Pair) -> None:

    def with_ec(m: types.ModuleType, revision: SpecRevision) -> Any:
        empty, mro = m.EMPTY_MODEL_RUNNER_OUTPUT, m.ModelRunnerOutput
        ec = m.ECConnectorOutput(finished_sending={"mm"})
        step = mro(req_ids=["a"], req_id_to_index={"a": 0})
        onto_step = mro.with_ec_conn_output(step, ec)
        onto_empty = mro.with_ec_conn_output(empty, ec)
        only = mro.with_ec_conn_output_only(ec)
        return (
            mro.with_ec_conn_output(step, None) is step,
            mro.with_ec_conn_output(step, m.ECConnectorOutput()) is step,
            onto_step is step,
            step.ec_connector_output is ec,
            onto_empty is empty,
            onto_empty.ec_connector_output is ec,
            mro.with_ec_conn_output_only(None) is empty,
            mro.with_ec_conn_output_only(m.ECConnectorOutput()) is empty,
            only is empty,
            only.ec_connector_output is ec,
            empty.ec_connector_output,
            only,
        )

    compare(pair, with_ec)


# --- SamplingMaskLists ---------------------------------------------------------------


def sampling_masks(m: types.ModuleType, cu: list[int] | None, with_offsets: bool = True) -> Any:
    offsets = np.array([0, 2, 2, 5, 6], dtype=np.int64) if with_offsets else None
    return m.SamplingMaskLists(np.arange(1, 7, dtype=np.int32), offsets, cu)


@pairs(with_type("SamplingMaskLists"))
def test_sampling_mask_lists_slice_request_and_to_nested_list(pair: Pair) -> None:
    for cu in (None, [0, 1, 3, 4]):
        for req_idx, num_positions in [(0, 1), (1, 2), (0, 3), (2, 1), (1, 1), (0, 4)]:

            def slice_request(m: types.ModuleType, revision: SpecRevision) -> Any:
                return sampling_masks(m, cu).slice_request(req_idx, num_positions)  # noqa: B023

            compare(pair, slice_request)

        for with_offsets in (True, False):

            def to_nested_list(m: types.ModuleType, revision: SpecRevision) -> Any:
                return sampling_masks(m, cu, with_offsets).to_nested_list()  # noqa: B023

            def slice_without_offsets(m: types.ModuleType, revision: SpecRevision) -> Any:
                return sampling_masks(m, cu, with_offsets).slice_request(0, 1)  # noqa: B023

            compare(pair, to_nested_list)
            compare(pair, slice_without_offsets)


@pairs(having("SamplingMaskLists.merge"))
def test_sampling_mask_lists_merge(pair: Pair) -> None:

    def merge(m: types.ModuleType, revision: SpecRevision) -> Any:
        masks = m.SamplingMaskLists
        first = masks(np.array([4, 5], dtype=np.int32), np.array([0, 2], dtype=np.int32))
        second = masks(np.array([6, 7, 8], dtype=np.int32), np.array([0, 0, 3]))
        return masks.merge([first, second]), masks.merge([second])

    compare(pair, merge)


# --- RoutedExperts -------------------------------------------------------------------


@pairs(with_type("RoutedExpertsTensors"))
def test_routed_experts_to_cpu_nonblocking_and_tolists(pair: Pair) -> None:

    def routed(m: types.ModuleType, revision: SpecRevision) -> Any:
        experts = m.RoutedExpertsTensors(
            torch.arange(12, dtype=torch.uint8).reshape(3, 2, 2), torch.tensor([5, 9, 2])
        )
        return experts.to_cpu_nonblocking() is experts, experts.tolists()

    compare(pair, routed)
