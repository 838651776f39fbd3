"""Every mutant, one per behaviour a revision adds after 2025.10, and the unmutated releases."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import torch

from release_mutants import Mutant, release_backend


def __getattr__(name: str):
    """``release_0_12_0``: a factory of release 0.12.0 unmutated (any release text present)."""
    if name.startswith("release_"):
        version = name.removeprefix("release_").replace("_", ".")
        return lambda: release_backend(version)
    raise AttributeError(name)


# --- LogprobsLists ------------------------------------------------------------------


def _slice_drops_last_row(m: ModuleType) -> None:
    def slice(self, start, end):
        return m.LogprobsLists(*(column[start : max(start, end - 1)] for column in self))

    m.LogprobsLists.slice = slice


def _slice_keeps_cu_absolute(m: ModuleType) -> None:
    def slice(self, start_req_idx, end_req_idx):
        cu = self.cu_num_generated_tokens
        if not cu:
            rows, new_cu = (start_req_idx, end_req_idx), None
        else:
            rows, new_cu = (cu[start_req_idx], cu[end_req_idx]), cu[start_req_idx : end_req_idx + 1]
        a, b = rows
        return m.LogprobsLists(
            self.logprob_token_ids[a:b], self.logprobs[a:b], self.sampled_token_ranks[a:b], new_cu
        )

    m.LogprobsLists.slice = slice


def _slice_request_ignores_cu(m: ModuleType) -> None:
    def slice_request(self, req_idx, num_positions):
        end = req_idx + num_positions
        return m.LogprobsLists(
            self.logprob_token_ids[req_idx:end],
            self.logprobs[req_idx:end],
            self.sampled_token_ranks[req_idx:end],
            None,
        )

    m.LogprobsLists.slice_request = slice_request


# --- LogprobsTensors ----------------------------------------------------------------


def _tolists_float64_logprobs(m: ModuleType) -> None:
    original = m.LogprobsTensors.tolists

    def tolists(self, cu_num_generated_tokens=None):
        lists = original(self, cu_num_generated_tokens)
        return lists._replace(logprobs=lists.logprobs.astype(np.float64))

    m.LogprobsTensors.tolists = tolists


def _tolists_ignores_cu_field(m: ModuleType) -> None:
    def tolists(self, cu_num_generated_tokens=None):
        return m.LogprobsLists(*(t.cpu().numpy() for t in self[:3]), cu_num_generated_tokens)

    m.LogprobsTensors.tolists = tolists


def _tolists_ignores_cu_tensor(m: ModuleType) -> None:
    def tolists(self, cu_num_generated_tokens=None):
        if cu_num_generated_tokens is None:
            cu_num_generated_tokens = self.cu_num_generated_tokens
        return m.LogprobsLists(*(t.cpu().numpy() for t in self[:3]), cu_num_generated_tokens)

    m.LogprobsTensors.tolists = tolists


def _filter_forgets_ranks(m: ModuleType) -> None:
    def filter(self, mask):
        return m.LogprobsTensors(
            self.logprob_token_ids[mask], self.logprobs[mask], self.selected_token_ranks
        )

    m.LogprobsTensors.filter = filter


def _filter_takes_tensor_masks_only(m: ModuleType) -> None:
    def filter(self, mask):
        # A device plugin's way: move the mask first, which a numpy mask cannot.
        return m.LogprobsTensors(*(t[mask.to(t.device)] for t in self[:3]))

    m.LogprobsTensors.filter = filter


def _cat_in_reverse(m: ModuleType) -> None:
    original = m.LogprobsTensors.cat

    def cat(tensors, cu_num_generated_tokens=None):
        return original(list(reversed(tensors)), cu_num_generated_tokens)

    m.LogprobsTensors.cat = staticmethod(cat)


# --- KVConnectorOutput, ModelRunnerOutput -------------------------------------------


def _merge_keeps_first_recving(m: ModuleType) -> None:
    original = m.KVConnectorOutput.merge.__func__

    def merge(cls, *outputs):
        merged = original(cls, *outputs)
        merged.finished_recving = outputs[0].finished_recving
        return merged

    m.KVConnectorOutput.merge = classmethod(merge)


def _merge_keeps_first_stats(m: ModuleType) -> None:
    original = m.KVConnectorOutput.merge.__func__

    def merge(cls, *outputs):
        merged = original(cls, *outputs)
        merged.kv_connector_stats = next(
            (o.kv_connector_stats for o in outputs if o.kv_connector_stats is not None), None
        )
        return merged

    m.KVConnectorOutput.merge = classmethod(merge)


def _merge_carries_worker_meta(m: ModuleType) -> None:
    original = m.KVConnectorOutput.merge.__func__

    def merge(cls, *outputs):
        merged = original(cls, *outputs)
        merged.kv_connector_worker_meta = outputs[0].kv_connector_worker_meta
        return merged

    m.KVConnectorOutput.merge = classmethod(merge)


def _with_kv_writes_shared_empty(m: ModuleType) -> None:
    def with_kv_conn_output_only(kv_connector_output):
        output = m.EMPTY_MODEL_RUNNER_OUTPUT
        if kv_connector_output is not None and not kv_connector_output.is_empty():
            output.kv_connector_output = kv_connector_output
        return output

    m.ModelRunnerOutput.with_kv_conn_output_only = staticmethod(with_kv_conn_output_only)


def _with_ec_writes_shared_empty(m: ModuleType) -> None:
    def with_ec_conn_output(output, ec_connector_output):
        if ec_connector_output is not None and not ec_connector_output.is_empty():
            output.ec_connector_output = ec_connector_output
        return output

    m.ModelRunnerOutput.with_ec_conn_output = staticmethod(with_ec_conn_output)


# --- ECConnectorOutput ---------------------------------------------------------------


def _ec_pickles_without_recving(m: ModuleType) -> None:
    def __reduce__(self):
        return (type(self), (self.finished_sending,))

    m.ECConnectorOutput.__reduce__ = __reduce__


def _ec_is_empty_ignores_worker_meta(m: ModuleType) -> None:
    def is_empty(self):
        return not self.finished_sending and not self.finished_recving

    m.ECConnectorOutput.is_empty = is_empty


# --- SamplingMaskLists ---------------------------------------------------------------


def _masks_offsets_not_rebased(m: ModuleType) -> None:
    def slice_request(self, req_idx, num_positions):
        cu = self.cu_num_generated_tokens
        start = req_idx if cu is None else cu[req_idx]
        end = start + num_positions
        return m.SamplingMaskLists(
            self.token_ids[self.offsets[start] : self.offsets[end]],
            self.offsets[start : end + 1],
            None,
        )

    m.SamplingMaskLists.slice_request = slice_request


def _masks_one_position_uses_cu(m: ModuleType) -> None:
    def slice_request(self, req_idx, num_positions):
        cu = self.cu_num_generated_tokens
        position = req_idx if cu is None else cu[req_idx]
        return m.SamplingMaskLists(
            self.token_ids[self.offsets[position] : self.offsets[position + 1]]
        )

    m.SamplingMaskLists.slice_request = slice_request


def _masks_one_position_keeps_offsets(m: ModuleType) -> None:
    def slice_request(self, req_idx, num_positions):
        cu = self.cu_num_generated_tokens
        start = req_idx if cu is None else cu[req_idx]
        end = start + num_positions
        low = self.offsets[start]
        return m.SamplingMaskLists(
            self.token_ids[low : self.offsets[end]], self.offsets[start : end + 1] - low
        )

    m.SamplingMaskLists.slice_request = slice_request


def _masks_nested_numpy_ints(m: ModuleType) -> None:
    def to_nested_list(self):
        if self.offsets is None:
            return [self.token_ids.tolist()]
        bounds = self.offsets.tolist()
        return [list(self.token_ids[bounds[i] : bounds[i + 1]]) for i in range(len(bounds) - 1)]

    m.SamplingMaskLists.to_nested_list = to_nested_list


def _masks_nested_flat_without_offsets(m: ModuleType) -> None:
    original = m.SamplingMaskLists.to_nested_list

    def to_nested_list(self):
        if self.offsets is None:
            return self.token_ids.tolist()
        return original(self)

    m.SamplingMaskLists.to_nested_list = to_nested_list


def _masks_merge_concatenates_offsets(m: ModuleType) -> None:
    def merge(chunks):
        return m.SamplingMaskLists(
            np.concatenate([c.token_ids for c in chunks]),
            np.concatenate([chunks[0].offsets[:1], *(c.offsets[1:] for c in chunks)]),
        )

    m.SamplingMaskLists.merge = staticmethod(merge)


# --- RoutedExperts*, AsyncModelRunnerOutput -----------------------------------------


def _experts_tolists_widens_routing(m: ModuleType) -> None:
    def tolists(self):
        return m.RoutedExpertsLists(
            self.routing_data.cpu().to(torch.int64).numpy(), self.slot_mapping.cpu().numpy()
        )

    m.RoutedExpertsTensors.tolists = tolists


def _kv_output_not_abstract(m: ModuleType) -> None:
    cls = m.AsyncModelRunnerOutput
    cls.__abstractmethods__ = frozenset(cls.__abstractmethods__ - {"get_kv_connector_output"})


def _checks(*names: str) -> tuple[str, ...]:
    return tuple(f"conformance.checks.test_{name}" for name in names)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "slice_drops_last_row",
        "LogprobsLists.slice:rows",
        "0.11.0",
        _checks("logprobs_lists_slice"),
        _slice_drops_last_row,
        "slice(start, end) returns rows start:end - 1",
    ),
    Mutant(
        "slice_keeps_cu_absolute",
        "LogprobsLists.slice:cu-rebased",
        "0.11.1",
        _checks("logprobs_lists_slice"),
        _slice_keeps_cu_absolute,
        "slice returns cu[start:end + 1] without rebasing it to 0",
    ),
    Mutant(
        "slice_request_ignores_cu",
        "LogprobsLists.slice_request",
        "0.12.0",
        _checks("logprobs_lists_slice_request"),
        _slice_request_ignores_cu,
        "slice_request starts at row req_idx even with a cu",
    ),
    Mutant(
        "tolists_float64_logprobs",
        "LogprobsTensors.tolists:numpy-arrays",
        "0.11.1",
        _checks("logprobs_tensors_tolists_numpy", "logprobs_tensors_tolists"),
        _tolists_float64_logprobs,
        "tolists() gives float64 logprobs",
    ),
    Mutant(
        "tolists_ignores_cu_field",
        "LogprobsTensors.cu_num_generated_tokens",
        "0.16.0",
        _checks("logprobs_tensors_cu_num_generated_tokens", "logprobs_tensors_tolists"),
        _tolists_ignores_cu_field,
        "tolists() without argument ignores the cu field",
    ),
    Mutant(
        "tolists_ignores_cu_tensor",
        "LogprobsTensors.cu_num_generated_tokens_tensor",
        "0.29.0",
        _checks(
            "logprobs_tensors_cu_num_generated_tokens_tensor",
            "logprobs_tensors_cu_num_generated_tokens",
        ),
        _tolists_ignores_cu_tensor,
        "tolists() without argument ignores the cu tensor",
    ),
    Mutant(
        "filter_forgets_ranks",
        "LogprobsTensors.filter",
        "0.14.0",
        _checks("logprobs_tensors_filter"),
        _filter_forgets_ranks,
        "filter(mask) leaves selected_token_ranks unfiltered",
    ),
    Mutant(
        "filter_takes_tensor_masks_only",
        "LogprobsTensors.filter",
        "0.33.0",
        _checks("logprobs_tensors_filter"),
        _filter_takes_tensor_masks_only,
        "filter(mask) fails on the numpy mask vLLM's parse_output passes",
    ),
    Mutant(
        "cat_in_reverse",
        "LogprobsTensors.cat",
        "0.27.0",
        _checks("logprobs_tensors_cat"),
        _cat_in_reverse,
        "cat concatenates its inputs in reverse order",
    ),
    Mutant(
        "merge_keeps_first_recving",
        "KVConnectorOutput.merge",
        "0.17.0",
        _checks("kv_connector_output_merge"),
        _merge_keeps_first_recving,
        "merge keeps the first output's finished_recving instead of the union",
    ),
    Mutant(
        "merge_carries_worker_meta",
        "KVConnectorOutput.merge",
        "0.18.0",
        _checks("kv_connector_output_merge"),
        _merge_carries_worker_meta,
        "merge carries the first output's kv_connector_worker_meta, which vLLM's leaves None",
    ),
    Mutant(
        "merge_keeps_first_stats",
        "KVConnectorOutput.merge",
        "0.17.0",
        _checks("kv_connector_output_merge"),
        _merge_keeps_first_stats,
        "merge keeps the first output's kv_connector_stats instead of aggregating them",
    ),
    Mutant(
        "with_kv_writes_shared_empty",
        "ModelRunnerOutput.with_kv_conn_output_only",
        "0.23.0",
        _checks("model_runner_output_with_kv_conn_output_only"),
        _with_kv_writes_shared_empty,
        "with_kv_conn_output_only writes kv into the shared EMPTY_MODEL_RUNNER_OUTPUT",
    ),
    Mutant(
        "with_ec_writes_shared_empty",
        "ModelRunnerOutput.with_ec_conn_output",
        "0.28.0",
        _checks("model_runner_output_with_ec_conn_output"),
        _with_ec_writes_shared_empty,
        "with_ec_conn_output writes ec into the shared EMPTY_MODEL_RUNNER_OUTPUT",
    ),
    Mutant(
        "ec_pickles_without_recving",
        "ECConnectorOutput.dataclass",
        "0.11.1",
        _checks("ec_connector_output"),
        _ec_pickles_without_recving,
        "ECConnectorOutput loses finished_recving in a pickle round trip",
    ),
    Mutant(
        "ec_is_empty_ignores_worker_meta",
        "ECConnectorOutput.is_empty",
        "0.28.0",
        _checks("ec_connector_output"),
        _ec_is_empty_ignores_worker_meta,
        "ECConnectorOutput.is_empty() ignores ec_connector_worker_meta",
    ),
    Mutant(
        "masks_offsets_not_rebased",
        "SamplingMaskLists.slice_request:offsets-always",
        "0.28.0",
        _checks("sampling_mask_lists_slice_request"),
        _masks_offsets_not_rebased,
        "SamplingMaskLists.slice_request keeps the offsets absolute",
    ),
    Mutant(
        "masks_one_position_uses_cu",
        "SamplingMaskLists.slice_request:one-position",
        "0.30.0",
        _checks("sampling_mask_lists_slice_request"),
        _masks_one_position_uses_cu,
        "SamplingMaskLists.slice_request(req_idx, 1) starts at cu[req_idx]",
    ),
    Mutant(
        "masks_one_position_keeps_offsets",
        "SamplingMaskLists.slice_request:offsets-for-several-positions",
        "0.32.0",
        _checks("sampling_mask_lists_slice_request"),
        _masks_one_position_keeps_offsets,
        "SamplingMaskLists.slice_request gives offsets for one position too",
    ),
    Mutant(
        "masks_nested_numpy_ints",
        "SamplingMaskLists.to_nested_list",
        "0.28.0",
        _checks("sampling_mask_lists_to_nested_list"),
        _masks_nested_numpy_ints,
        "SamplingMaskLists.to_nested_list() gives lists of numpy integers",
    ),
    Mutant(
        "masks_nested_flat_without_offsets",
        "SamplingMaskLists.to_nested_list:without-offsets",
        "0.30.0",
        _checks("sampling_mask_lists_to_nested_list"),
        _masks_nested_flat_without_offsets,
        "SamplingMaskLists.to_nested_list() without offsets gives the flat token ids",
    ),
    Mutant(
        "masks_merge_concatenates_offsets",
        "SamplingMaskLists.merge",
        "0.28.0",
        _checks("sampling_mask_lists_merge"),
        _masks_merge_concatenates_offsets,
        "SamplingMaskLists.merge concatenates the chunks' offsets without shifting them",
    ),
    Mutant(
        "experts_tolists_widens_routing",
        "RoutedExpertsTensors.to_lists",
        "0.22.0",
        _checks("routed_experts"),
        _experts_tolists_widens_routing,
        "RoutedExpertsTensors.tolists() gives int64 routing data",
    ),
    Mutant(
        "kv_output_not_abstract",
        "AsyncModelRunnerOutput.get_kv_connector_output",
        "0.33.0",
        _checks("async_model_runner_output_get_kv_connector_output"),
        _kv_output_not_abstract,
        "get_kv_connector_output is not abstract",
    ),
)

#: The mutants by name, also as module attributes (``release_mutants.catalogue:<name>``).
BY_NAME: dict[str, Mutant] = {mutant.name: mutant for mutant in MUTANTS}
globals().update(BY_NAME)
