"""The reference's implementation of each named behaviour, for building any revision.

Every method a revision lists is implemented here by a small *factory*, registered
under the behaviour it implements and the method it provides
(``@implements("LogprobsLists.slice:cu-rebased", "LogprobsLists.slice")``).
:mod:`reference.revisions.build` asks, for each method of each type, for the one
registered factory whose behaviour the revision has, and calls it with the
:class:`Building` of that revision.  The factory returns a plain function; the
builder stamps the revision's annotations on it and binds it (static, class,
abstract) as the revision's data says.

Methods find the revision's own classes in ``building.namespace`` *when called*,
never when built: the namespace is filled type by type, and ``slice`` must
return the LogprobsLists of the revision it belongs to.

Where a rule has finer variants that do not deserve a behaviour of their own
(``tolists`` with or without its argument), the factory reads them from the
revision's behaviours or data.  Wrong input that vLLM rejects with ``assert``
is rejected here with ``ValueError`` naming the problem.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reference.revisions.model import SpecRevision, TypeSpec

Method = Callable[..., Any]
Factory = Callable[["Building"], Method]


@dataclass(frozen=True)
class Building:
    """The revision being built and the namespace its classes are placed in."""

    revision: SpecRevision
    namespace: dict[str, Any]

    def has(self, behaviour: str) -> bool:
        return self.revision.has(behaviour)

    def type_spec(self, name: str) -> TypeSpec:
        spec = self.revision.type(name)
        if spec is None:
            raise LookupError(f"revision {self.revision.name} has no type {name}")
        return spec

    def has_field(self, type_name: str, field_name: str) -> bool:
        spec = self.revision.type(type_name)
        return spec is not None and spec.field_named(field_name) is not None

    def cls(self, name: str) -> Any:
        """The revision's class ``name`` (call from inside a method, not from a factory)."""
        return self.namespace[name]


@dataclass(frozen=True)
class Implementation:
    behaviour: str
    member: str  # "Type.method"
    factory: Factory


_REGISTRY: dict[str, list[Implementation]] = {}


def implements(behaviour: str, member: str) -> Callable[[Factory], Factory]:
    """Register the decorated factory as ``member``'s implementation under ``behaviour``."""

    def register(factory: Factory) -> Factory:
        _REGISTRY.setdefault(member, []).append(Implementation(behaviour, member, factory))
        return factory

    return register


class NoImplementationError(LookupError):
    """The revision lists a method no behaviour of it implements (or several do)."""


def implementation_for(building: Building, type_name: str, method_name: str) -> Implementation:
    """The one implementation of ``type_name.method_name`` whose behaviour the revision has."""
    member = f"{type_name}.{method_name}"
    found = [i for i in _REGISTRY.get(member, []) if building.has(i.behaviour)]
    if len(found) != 1:
        registered = [i.behaviour for i in _REGISTRY.get(member, [])]
        raise NoImplementationError(
            f"revision {building.revision.name}: {member} needs exactly one of the behaviours "
            f"{registered or '(none registered)'}, the revision has {len(found)} of them"
        )
    return found[0]


# --- LogprobsLists -------------------------------------------------------------------


@implements("LogprobsLists.slice:rows", "LogprobsLists.slice")
def _slice_rows(building: Building) -> Method:
    def slice(self: Any, start: int, end: int) -> Any:
        lists = building.cls("LogprobsLists")
        return lists(
            self.logprob_token_ids[start:end],
            self.logprobs[start:end],
            self.sampled_token_ranks[start:end],
        )

    return slice


@implements("LogprobsLists.slice:cu-not-rebased", "LogprobsLists.slice")
def _slice_cu_not_rebased(building: Building) -> Method:
    def slice(self: Any, start_req_idx: int, end_req_idx: int) -> Any:
        cu = self.cu_num_generated_tokens
        # A truthy cu maps requests to rows; an empty list counts as absent, as in vLLM.
        start, end = (cu[start_req_idx], cu[end_req_idx]) if cu else (start_req_idx, end_req_idx)
        return building.cls("LogprobsLists")(
            self.logprob_token_ids[start:end],
            self.logprobs[start:end],
            self.sampled_token_ranks[start:end],
            # The revision's odd rule: cu keeps its offsets and loses its last entry.
            cu[start_req_idx:end_req_idx] if cu else None,
        )

    return slice


@implements("LogprobsLists.slice:cu-rebased", "LogprobsLists.slice")
def _slice_cu_rebased(building: Building) -> Method:
    def slice(self: Any, start_req_idx: int, end_req_idx: int) -> Any:
        cu = self.cu_num_generated_tokens
        if cu:
            start, end = cu[start_req_idx], cu[end_req_idx]
            sliced_cu = [boundary - start for boundary in cu[start_req_idx : end_req_idx + 1]]
        else:
            start, end, sliced_cu = start_req_idx, end_req_idx, None
        return building.cls("LogprobsLists")(
            self.logprob_token_ids[start:end],
            self.logprobs[start:end],
            self.sampled_token_ranks[start:end],
            sliced_cu,
        )

    return slice


@implements("LogprobsLists.slice_request", "LogprobsLists.slice_request")
def _slice_request(building: Building) -> Method:
    def slice_request(self: Any, req_idx: int, num_positions: int) -> Any:
        # Unlike slice, an empty cu is still a cu here (the test is ``is not None``).
        first = (
            req_idx
            if self.cu_num_generated_tokens is None
            else self.cu_num_generated_tokens[req_idx]
        )
        end = first + num_positions
        return building.cls("LogprobsLists")(
            self.logprob_token_ids[first:end],
            self.logprobs[first:end],
            self.sampled_token_ranks[first:end],
            None,
        )

    return slice_request


# --- LogprobsTensors -----------------------------------------------------------------


def _cu_for_tolists(building: Building) -> Callable[[Any, list[int] | None], list[int] | None]:
    """How tolists picks the cu it puts into the lists: the argument, then the fallbacks."""
    uses_cu_tensor = building.has("LogprobsTensors.cu_num_generated_tokens_tensor")
    uses_cu_field = building.has("LogprobsTensors.cu_num_generated_tokens")

    def choose(tensors: Any, given: list[int] | None) -> list[int] | None:
        if given is not None:
            return given
        if uses_cu_tensor and tensors.cu_num_generated_tokens_tensor is not None:
            # Device-only boundaries (0.29): their values win over the list field.
            return list(tensors.cu_num_generated_tokens_tensor.tolist())
        if uses_cu_field:
            return tensors.cu_num_generated_tokens
        return None

    return choose


def _tolists_factory(convert: Callable[[torch.Tensor], Any]) -> Factory:
    def factory(building: Building) -> Method:
        choose_cu = _cu_for_tolists(building)
        carries_cu = building.has_field("LogprobsLists", "cu_num_generated_tokens")

        def lists_of(tensors: Any, cu: list[int] | None) -> Any:
            values = (
                convert(tensors.logprob_token_ids),
                convert(tensors.logprobs),
                convert(tensors.selected_token_ranks),
            )
            lists = building.cls("LogprobsLists")
            return lists(*values, choose_cu(tensors, cu)) if carries_cu else lists(*values)

        if not building.has("LogprobsTensors.tolists:cu-argument"):

            def tolists_without_argument(self: Any) -> Any:
                return lists_of(self, None)

            tolists_without_argument.__name__ = "tolists"
            return tolists_without_argument

        def tolists(self: Any, cu_num_generated_tokens: list[int] | None = None) -> Any:
            return lists_of(self, cu_num_generated_tokens)

        return tolists

    return factory


implements("LogprobsTensors.tolists:python-lists", "LogprobsTensors.tolists")(
    _tolists_factory(lambda tensor: tensor.tolist())
)


def _host_array(tensor: torch.Tensor) -> np.ndarray:
    """``tensor.cpu().numpy()``, as vLLM writes it, with ``.cpu()`` only where numpy
    cannot read the tensor: numpy refuses device memory with a TypeError.  For a host
    tensor ``.cpu()`` returns the tensor itself, and asking first (``is_cpu``) is a
    torch call too: each is a Python dispatch wherever a runtime wraps its host copies
    or a torch function mode is active (4.5 us on the suite's simulated device, three
    a decode step that asks for logprobs)."""
    try:
        return tensor.numpy()
    except TypeError:
        return tensor.cpu().numpy()


implements("LogprobsTensors.tolists:numpy-arrays", "LogprobsTensors.tolists")(
    _tolists_factory(_host_array)
)


@implements("LogprobsTensors.to_cpu_nonblocking", "LogprobsTensors.to_cpu_nonblocking")
def _logprobs_to_cpu_nonblocking(building: Building) -> Method:
    carries_cu = building.has("LogprobsTensors.cu_num_generated_tokens")
    copies_cu_tensor = building.has("LogprobsTensors.cu_num_generated_tokens_tensor")

    def to_cpu_nonblocking(self: Any) -> Any:
        if self.logprob_token_ids.device.type == "cpu":
            return self
        copied = [
            self.logprob_token_ids.to("cpu", non_blocking=True),
            self.logprobs.to("cpu", non_blocking=True),
            self.selected_token_ranks.to("cpu", non_blocking=True),
        ]
        if carries_cu:
            copied.append(self.cu_num_generated_tokens)
        if copies_cu_tensor:
            cu_tensor = self.cu_num_generated_tokens_tensor
            copied.append(None if cu_tensor is None else cu_tensor.to("cpu", non_blocking=True))
        return building.cls("LogprobsTensors")(*copied)

    return to_cpu_nonblocking


@implements("LogprobsTensors.empty_cpu", "LogprobsTensors.empty_cpu")
def _empty_cpu(building: Building) -> Method:
    # 0.29 pins these with vLLM's PIN_MEMORY; the reference never pins (what vLLM does
    # without CUDA), so the result is the same on every machine.
    def empty_cpu(num_positions: int, num_tokens_per_position: int) -> Any:
        shape = (num_positions, num_tokens_per_position)
        return building.cls("LogprobsTensors")(
            logprob_token_ids=torch.empty(shape, dtype=torch.int32, device="cpu"),
            logprobs=torch.empty(shape, dtype=torch.float32, device="cpu"),
            selected_token_ranks=torch.empty(num_positions, dtype=torch.int32, device="cpu"),
        )

    return empty_cpu


def _refuse_boundaries(tensors: Any, operation: str, building: Building) -> None:
    """filter/cat cannot keep request boundaries straight; vLLM asserts they are absent."""
    if building.has("LogprobsTensors.cu_num_generated_tokens") and (
        tensors.cu_num_generated_tokens is not None
    ):
        raise ValueError(f"{operation} can't be used with cu_num_generated_tokens")
    if building.has("LogprobsTensors.cu_num_generated_tokens_tensor") and (
        tensors.cu_num_generated_tokens_tensor is not None
    ):
        raise ValueError(f"{operation} can't be used with cu_num_generated_tokens_tensor")


@implements("LogprobsTensors.filter", "LogprobsTensors.filter")
def _filter(building: Building) -> Method:
    def filter(self: Any, mask: torch.Tensor) -> Any:
        _refuse_boundaries(self, "filter", building)
        return building.cls("LogprobsTensors")(
            self.logprob_token_ids[mask], self.logprobs[mask], self.selected_token_ranks[mask]
        )

    return filter


@implements("LogprobsTensors.cat", "LogprobsTensors.cat")
def _cat(building: Building) -> Method:
    def cat(tensors: Sequence[Any], cu_num_generated_tokens: list[int] | None = None) -> Any:
        if not tensors:
            raise ValueError("cat needs at least one LogprobsTensors")
        if cu_num_generated_tokens is None and any(
            t.cu_num_generated_tokens is not None for t in tensors
        ):
            raise ValueError(
                "cat of LogprobsTensors that carry cu_num_generated_tokens needs the "
                "cu_num_generated_tokens of the result"
            )
        if len(tensors) == 1:
            # One input is passed through: the same object, or a copy with the new cu.
            only = tensors[0]
            if cu_num_generated_tokens is None:
                return only
            return only._replace(cu_num_generated_tokens=cu_num_generated_tokens)
        if building.has("LogprobsTensors.cu_num_generated_tokens_tensor") and any(
            t.cu_num_generated_tokens_tensor is not None for t in tensors
        ):
            raise ValueError(
                "cat of several inputs can't be used with cu_num_generated_tokens_tensor"
            )
        return building.cls("LogprobsTensors")(
            logprob_token_ids=torch.cat([t.logprob_token_ids for t in tensors]),
            logprobs=torch.cat([t.logprobs for t in tensors]),
            selected_token_ranks=torch.cat([t.selected_token_ranks for t in tensors]),
            cu_num_generated_tokens=cu_num_generated_tokens,
        )

    return cat


# --- KVConnectorOutput, ECConnectorOutput --------------------------------------------


def _is_empty_factory(type_name: str) -> Factory:
    def factory(building: Building) -> Method:
        # Exactly the fields the revision counts: expected_finished_count is configuration.
        counted = building.type_spec(type_name).counted_by_is_empty

        def is_empty(self: Any) -> bool:
            return not any(getattr(self, name) for name in counted)

        return is_empty

    return factory


implements("KVConnectorOutput.is_empty", "KVConnectorOutput.is_empty")(
    _is_empty_factory("KVConnectorOutput")
)
implements("ECConnectorOutput.is_empty", "ECConnectorOutput.is_empty")(
    _is_empty_factory("ECConnectorOutput")
)


def _combined(items: Sequence[Any], combine: Callable[[Any, Any], Any]) -> Any:
    """Fold the non-None items with ``combine`` (the first one as it is); None if all are None."""
    present = [item for item in items if item is not None]
    if not present:
        return None
    result = present[0]
    for item in present[1:]:
        result = combine(result, item)
    return result


@implements("KVConnectorOutput.merge", "KVConnectorOutput.merge")
def _kv_merge(building: Building) -> Method:
    def merge(cls: Any, *outputs: Any) -> Any:
        if not outputs:
            raise ValueError("merge needs at least one KVConnectorOutput")
        counts = {output.expected_finished_count for output in outputs}
        if len(counts) != 1:
            raise ValueError(
                f"merge of KVConnectorOutputs with different expected_finished_count {counts}"
            )

        def field(name: str, combine: Callable[[Any, Any], Any]) -> Any:
            return _combined([getattr(output, name) for output in outputs], combine)

        # Stats and events are the connector's own objects: they know how to combine.
        # Fields merge never names (worker metadata, 0.18-0.19) keep their default.
        return cls(
            finished_sending=field("finished_sending", set.union),
            finished_recving=field("finished_recving", set.union),
            kv_connector_stats=field("kv_connector_stats", lambda a, b: a.aggregate(b)),
            kv_cache_events=field("kv_cache_events", lambda a, b: a.merge(b)),
            invalid_block_ids=field("invalid_block_ids", set.union),
            expected_finished_count=counts.pop(),
        )

    return merge


# --- ModelRunnerOutput ---------------------------------------------------------------


@implements(
    "ModelRunnerOutput.with_kv_conn_output_only", "ModelRunnerOutput.with_kv_conn_output_only"
)
def _with_kv_conn_output_only(building: Building) -> Method:
    def with_kv_conn_output_only(kv_connector_output: Any) -> Any:
        empty = building.cls("EMPTY_MODEL_RUNNER_OUTPUT")
        if kv_connector_output is None or kv_connector_output.is_empty():
            return empty
        # A shallow copy: the shared empty output is never written to.
        output = copy.copy(empty)
        output.kv_connector_output = kv_connector_output
        return output

    return with_kv_conn_output_only


@implements("ModelRunnerOutput.with_ec_conn_output", "ModelRunnerOutput.with_ec_conn_output")
def _with_ec_conn_output(building: Building) -> Method:
    def with_ec_conn_output(output: Any, ec_connector_output: Any) -> Any:
        if ec_connector_output is None or ec_connector_output.is_empty():
            return output
        if output is building.cls("EMPTY_MODEL_RUNNER_OUTPUT"):
            output = copy.copy(output)
        output.ec_connector_output = ec_connector_output
        return output

    return with_ec_conn_output


@implements("ModelRunnerOutput.with_ec_conn_output", "ModelRunnerOutput.with_ec_conn_output_only")
def _with_ec_conn_output_only(building: Building) -> Method:
    def with_ec_conn_output_only(ec_connector_output: Any) -> Any:
        return building.cls("ModelRunnerOutput").with_ec_conn_output(
            building.cls("EMPTY_MODEL_RUNNER_OUTPUT"), ec_connector_output
        )

    return with_ec_conn_output_only


# --- AsyncModelRunnerOutput (abstract: the builder marks them) -----------------------


@implements("AsyncModelRunnerOutput.abc", "AsyncModelRunnerOutput.get_output")
def _get_output(building: Building) -> Method:
    def get_output(self: Any) -> Any:
        """Block until the step's results are on the host and return its ModelRunnerOutput.

        Called once per object.
        """
        raise NotImplementedError

    return get_output


@implements(
    "AsyncModelRunnerOutput.get_kv_connector_output",
    "AsyncModelRunnerOutput.get_kv_connector_output",
)
def _get_kv_connector_output(building: Building) -> Method:
    def get_kv_connector_output(self: Any) -> Any:
        """The step's KVConnectorOutput, to salvage when get_output() fails."""
        raise NotImplementedError

    return get_kv_connector_output


# --- SamplingMaskLists ---------------------------------------------------------------


def _first_position(masks: Any, req_idx: int) -> int:
    cu = masks.cu_num_generated_tokens
    return req_idx if cu is None else int(cu[req_idx])


@implements("SamplingMaskLists.slice_request:offsets-always", "SamplingMaskLists.slice_request")
def _masks_slice_offsets_always(building: Building) -> Method:
    def slice_request(self: Any, req_idx: int, num_positions: int) -> Any:
        start = _first_position(self, req_idx)
        end = start + num_positions
        low, high = self.offsets[start], self.offsets[end]
        return building.cls("SamplingMaskLists")(
            self.token_ids[low:high], self.offsets[start : end + 1] - low, None
        )

    return slice_request


@implements("SamplingMaskLists.slice_request:one-position", "SamplingMaskLists.slice_request")
def _masks_slice_one_position(building: Building) -> Method:
    def slice_request(self: Any, req_idx: int, num_positions: int) -> Any:
        if num_positions != 1 or self.offsets is None:
            raise ValueError(
                "slice_request takes one position of masks that have offsets, got "
                f"num_positions={num_positions}, offsets {'None' if self.offsets is None else 'set'}"
            )
        # One position per request: req_idx is the position, cu is not consulted.
        return building.cls("SamplingMaskLists")(
            self.token_ids[self.offsets[req_idx] : self.offsets[req_idx + 1]]
        )

    return slice_request


@implements(
    "SamplingMaskLists.slice_request:offsets-for-several-positions",
    "SamplingMaskLists.slice_request",
)
def _masks_slice_several_positions(building: Building) -> Method:
    def slice_request(self: Any, req_idx: int, num_positions: int) -> Any:
        if self.offsets is None:
            raise ValueError("slice_request needs masks that have offsets")
        start = _first_position(self, req_idx)
        end = start + num_positions
        low, high = self.offsets[start], self.offsets[end]
        masks = building.cls("SamplingMaskLists")
        if num_positions == 1:
            return masks(self.token_ids[low:high])
        return masks(self.token_ids[low:high], self.offsets[start : end + 1] - low)

    return slice_request


@implements("SamplingMaskLists.to_nested_list", "SamplingMaskLists.to_nested_list")
def _masks_to_nested_list(building: Building) -> Method:
    one_row_without_offsets = building.has("SamplingMaskLists.to_nested_list:without-offsets")

    def to_nested_list(self: Any) -> list[list[int]]:
        token_ids = self.token_ids.tolist()
        if self.offsets is None:
            if one_row_without_offsets:
                return [token_ids]
            raise TypeError("to_nested_list needs offsets (this revision has no single-row form)")
        bounds = self.offsets.tolist()
        return [token_ids[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]

    return to_nested_list


@implements("SamplingMaskLists.merge", "SamplingMaskLists.merge")
def _masks_merge(building: Building) -> Method:
    def merge(chunks: Sequence[Any]) -> Any:
        token_ids = np.concatenate([chunk.token_ids for chunk in chunks])
        lengths = np.concatenate([np.diff(chunk.offsets) for chunk in chunks])
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, dtype=np.int64, out=offsets[1:])
        return building.cls("SamplingMaskLists")(token_ids, offsets)

    return merge


# --- RoutedExpertsTensors ------------------------------------------------------------


@implements("RoutedExpertsTensors.to_lists", "RoutedExpertsTensors.to_cpu_nonblocking")
def _experts_to_cpu_nonblocking(building: Building) -> Method:
    def to_cpu_nonblocking(self: Any) -> Any:
        if self.routing_data.device.type == "cpu":
            return self
        return building.cls("RoutedExpertsTensors")(
            self.routing_data.to("cpu", non_blocking=True),
            self.slot_mapping.to("cpu", non_blocking=True),
        )

    return to_cpu_nonblocking


@implements("RoutedExpertsTensors.to_lists", "RoutedExpertsTensors.tolists")
def _experts_tolists(building: Building) -> Method:
    def tolists(self: Any) -> Any:
        return building.cls("RoutedExpertsLists")(
            self.routing_data.cpu().numpy(), self.slot_mapping.cpu().numpy()
        )

    return tolists
