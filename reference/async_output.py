"""A concrete ``AsyncModelRunnerOutput`` that works on any torch device.

The model runner hands the scheduler an object right after sampling; the
device-to-host copies of the sampled ids and logprobs run behind its back, and
``get_output()`` is the one place that waits for them.  Getting that wait right is
the whole point: backends have shipped events recorded on the wrong stream and
placeholder events, and then read stale host memory.

On devices whose torch module offers streams and events (CUDA, XPU, ...) the
copies are issued on a side stream that first waits for the compute stream, and
an event recorded after them is what ``get_output()`` synchronises on.  On devices
without them (MPS) the copies go on the current queue and ``get_output()``
synchronises the device.  On CPU there is nothing to wait for.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from itertools import accumulate
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
import torch

from reference._arguments import require_int
from reference.constants import PLACEHOLDER_TOKEN_ID
from reference.outputs import (
    AsyncModelRunnerOutput,
    KVConnectorOutput,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
)
from reference.sampler_ops import unpad_sampled_token_ids

__all__ = [
    "DeviceAsyncModelRunnerOutput",
    "DeviceAsyncOutputCopies",
    "RevisionOutputTypes",
    "device_async_output_class",
    "device_runtime",
]


@dataclass(frozen=True)
class RevisionOutputTypes:
    """The classes a revision's async output reads and builds, and how it represents them.

    ``sampled_rows_as_numpy``: ``ModelRunnerOutput.sampled_token_ids`` holds one numpy
    array per request (0.11.1) instead of a list of Python ints.
    ``logprobs_take_cu``: ``LogprobsTensors.tolists`` accepts ``cu_num_generated_tokens``
    (every revision but 0.10.2 and 0.11.0, whose LogprobsLists has no such field).
    """

    sampler_output: type
    logprobs_tensors: type
    model_runner_output: type
    sampled_rows_as_numpy: bool = False
    logprobs_take_cu: bool = True


class DeviceAsyncOutputCopies:
    """Start the device-to-host copies of a ``SamplerOutput`` now; finish them in ``get_output``.

    The revision-independent body of every revision's ``DeviceAsyncModelRunnerOutput``:
    a concrete class mixes it into the revision's ``AsyncModelRunnerOutput`` and sets
    ``output_types`` to the revision's classes.

    ``sampled_token_ids`` rows follow ``req_ids``.  ``logprobs_tensors`` rows are
    either one per generated token (the valid positions, request by request) or one
    per cell of the padded ``[num_reqs, max_num_generated_tokens]`` matrix in
    row-major order; in the latter case the rows of padding positions are dropped.
    The resulting ``LogprobsLists`` carries ``cu_num_generated_tokens`` whenever a
    request may own other than exactly one row (``max_num_generated_tokens != 1``,
    or a request whose only position is padding) and the revision has that field.

    The constructor returns without waiting for the device.  ``get_output()``
    blocks until exactly these copies are complete, builds the
    ``ModelRunnerOutput`` and may be called once; a second call raises
    ``RuntimeError``.
    """

    output_types: ClassVar[RevisionOutputTypes]

    def __init__(
        self,
        sampler_output: Any,
        req_ids: Sequence[str],
        *,
        vocab_size: int | None = None,
        prompt_logprobs_dict: Mapping[str, Any] | None = None,
        pooler_output: Sequence[torch.Tensor | None] | None = None,
        kv_connector_output: Any = None,
        num_nans_in_logits: dict[str, int] | None = None,
    ) -> None:
        _check_sampler_output(sampler_output, req_ids, self.output_types.sampler_output)
        if vocab_size is not None:
            vocab_size = require_int("vocab_size", vocab_size, minimum=1)
        self._req_ids = list(req_ids)
        self._vocab_size = vocab_size
        self._prompt_logprobs_dict = _cpu_prompt_logprobs(prompt_logprobs_dict or {})
        self._pooler_output = _aligned_pooler_output(pooler_output, len(self._req_ids))
        self._kv_connector_output = kv_connector_output
        self._num_nans_in_logits = num_nans_in_logits
        self._consumed = False
        self._lock = threading.Lock()

        device = sampler_output.sampled_token_ids.device
        self._device_module = _device_module(device)
        self._event: Any = None
        # Holding the device tensors keeps the caching allocator from reusing their
        # memory while the side stream may still be reading it.
        self._device_source: Any = sampler_output
        self._host_token_ids, self._host_logprobs = self._start_copies(sampler_output, device)

    def _start_copies(self, sampler_output: Any, device: torch.device) -> tuple[torch.Tensor, Any]:
        if device.type == "cpu":
            return sampler_output.sampled_token_ids, sampler_output.logprobs_tensors
        module = self._device_module
        if module is None:
            # No stream API: queue the copies where the data is produced; get_output()
            # synchronises the whole device.
            return _copy_to_host(sampler_output)
        compute_stream = module.current_stream(device)
        copy_stream = module.Stream(device)
        # The copies must not start before the kernels that produce the values.
        copy_stream.wait_stream(compute_stream)
        with module.stream(copy_stream):
            host = _copy_to_host(sampler_output)
            self._event = module.Event()
            self._event.record(copy_stream)
        return host

    def get_output(self) -> Any:
        with self._lock:
            if self._consumed:
                raise RuntimeError(
                    "get_output() was already called on this AsyncModelRunnerOutput; "
                    "the spec allows one call per object"
                )
            self._consumed = True
        self._wait_for_copies()
        self._device_source = None

        types = self.output_types
        sampled: Sequence[Sized]
        if types.sampled_rows_as_numpy:
            sampled = _unpad_rows_as_arrays(self._host_token_ids, self._vocab_size)
        else:
            sampled = unpad_sampled_token_ids(self._host_token_ids, vocab_size=self._vocab_size)
        logprobs_lists = None
        if self._host_logprobs is not None:
            logprobs_lists = _logprobs_lists(
                self._host_logprobs, self._host_token_ids, sampled, self._vocab_size, types
            )
        values = {
            "req_ids": self._req_ids,
            # Gone from 0.34.0 on: the scheduler maps rows by req_ids.
            "req_id_to_index": {req_id: i for i, req_id in enumerate(self._req_ids)},
            "sampled_token_ids": sampled,
            "logprobs": logprobs_lists,
            "prompt_logprobs_dict": self._prompt_logprobs_dict,
            "pooler_output": self._pooler_output,
            "kv_connector_output": self._kv_connector_output,
            "num_nans_in_logits": self._num_nans_in_logits,
        }
        fields = {f.name for f in dataclasses.fields(types.model_runner_output)}
        return types.model_runner_output(**{k: v for k, v in values.items() if k in fields})

    def _wait_for_copies(self) -> None:
        if self._event is not None:
            self._event.synchronize()
            return
        device = self._host_token_ids.device
        if self._device_source is not None:
            device = self._device_source.sampled_token_ids.device
        if device.type != "cpu":
            # Devices without events (MPS): wait for everything queued so far.
            getattr(torch, device.type).synchronize()


def _device_module(device: torch.device) -> ModuleType | None:
    """torch's module for ``device`` when it has the stream API this class needs."""
    return device_runtime(device.type)


def device_runtime(kind: str) -> ModuleType | None:
    """``torch.<kind>`` when it offers streams and events (None on CPU, MPS, or without them)."""
    if kind == "cpu":
        return None
    module = getattr(torch, kind, None)
    # Spelled out, not all() over a generator: this runs at every decode step.
    if (
        module is None
        or not hasattr(module, "Stream")
        or not hasattr(module, "Event")
        or not hasattr(module, "current_stream")
        or not hasattr(module, "stream")
    ):
        return None
    return module


def _copy_to_host(sampler_output: Any) -> tuple[torch.Tensor, Any]:
    token_ids = sampler_output.sampled_token_ids.to("cpu", non_blocking=True)
    logprobs = sampler_output.logprobs_tensors
    return token_ids, (logprobs.to_cpu_nonblocking() if logprobs is not None else None)


def _check_sampler_output(
    sampler_output: Any, req_ids: Sequence[str], sampler_output_type: type[Any]
) -> None:
    if not isinstance(sampler_output, sampler_output_type):
        raise TypeError(
            f"sampler_output must be a SamplerOutput, got {type(sampler_output).__name__}"
        )
    token_ids = sampler_output.sampled_token_ids
    if not isinstance(token_ids, torch.Tensor) or token_ids.dim() != 2:
        raise ValueError(
            "sampler_output.sampled_token_ids must be a 2-D tensor [num_reqs, "
            f"max_num_generated_tokens], got {getattr(token_ids, 'shape', type(token_ids))}"
        )
    if token_ids.shape[0] != len(req_ids):
        raise ValueError(
            f"req_ids has {len(req_ids)} entries but sampler_output.sampled_token_ids "
            f"has {token_ids.shape[0]} rows; they must match"
        )
    logprobs = sampler_output.logprobs_tensors
    if logprobs is not None and logprobs.logprob_token_ids.device != token_ids.device:
        raise ValueError(
            "sampler_output.logprobs_tensors must be on the device of sampled_token_ids "
            f"({token_ids.device}), got {logprobs.logprob_token_ids.device}"
        )


def _cpu_prompt_logprobs(prompt_logprobs_dict: Mapping[str, Any]) -> dict[str, Any]:
    # The scheduler reads these in another process; ModelRunnerOutput requires CPU.
    for req_id, tensors in prompt_logprobs_dict.items():
        if tensors is not None and tensors.logprob_token_ids.device.type != "cpu":
            raise ValueError(
                f"prompt_logprobs_dict[{req_id!r}] must hold CPU tensors, got "
                f"{tensors.logprob_token_ids.device}; copy them to the host first"
            )
    return dict(prompt_logprobs_dict)


def _aligned_pooler_output(
    pooler_output: Sequence[torch.Tensor | None] | None, num_reqs: int
) -> list[torch.Tensor | None]:
    if pooler_output is None:
        return [None] * num_reqs
    if len(pooler_output) != num_reqs:
        raise ValueError(
            f"pooler_output must have one entry per request ({num_reqs}), got {len(pooler_output)}"
        )
    return list(pooler_output)


def _unpad_rows_as_arrays(host_token_ids: torch.Tensor, vocab_size: int | None) -> list[np.ndarray]:
    """One array per row without padding (the rows keep the tensor's dtype)."""
    array = host_token_ids.numpy()
    keep = array != PLACEHOLDER_TOKEN_ID
    if vocab_size is not None:
        keep &= array < vocab_size
    return [row[mask] for row, mask in zip(array, keep, strict=True)]


def _logprobs_lists(
    host_logprobs: Any,
    host_token_ids: torch.Tensor,
    sampled: Sequence[Sized],
    vocab_size: int | None,
    types: RevisionOutputTypes,
) -> Any:
    num_reqs, max_len = host_token_ids.shape
    total = sum(map(len, sampled))
    num_rows = host_logprobs.logprob_token_ids.shape[0]
    if num_rows == num_reqs * max_len and num_rows != total:
        # One row per padded cell: keep the rows of the tokens unpadding kept.
        keep = host_token_ids != PLACEHOLDER_TOKEN_ID
        if vocab_size is not None:
            keep &= host_token_ids < vocab_size
        rows = keep.flatten()
        # _replace keeps the optional fields later revisions add after the three tensors.
        host_logprobs = host_logprobs._replace(
            logprob_token_ids=host_logprobs.logprob_token_ids[rows],
            logprobs=host_logprobs.logprobs[rows],
            selected_token_ranks=host_logprobs.selected_token_ranks[rows],
        )
    elif num_rows != total:
        raise ValueError(
            f"sampler_output.logprobs_tensors has {num_rows} rows; expected one per "
            f"generated token ({total}) or one per padded position ({num_reqs * max_len})"
        )
    if not types.logprobs_take_cu:
        # 0.10.2 and 0.11.0 have no cu: rows are per generated token, in request order.
        return host_logprobs.tolists()
    cu = None
    # Without cu a consumer reads request i's logprobs at row i (``slice(i, i + 1)``),
    # which is only true when every request owns exactly one row.  With one token per
    # request a request that produced nothing owns no row, so cu is needed there too.
    if max_len != 1 or total != num_reqs:
        cu = [0, *accumulate(map(len, sampled))]
    return host_logprobs.tolists(cu)


def _get_kv_connector_output(self: DeviceAsyncOutputCopies) -> Any:
    """The step's KVConnectorOutput as given, to salvage when get_output() fails."""
    return self._kv_connector_output


def device_async_output_class(
    async_model_runner_output: type,
    output_types: RevisionOutputTypes,
    *,
    with_kv_connector_output: bool = False,
) -> type:
    """A concrete ``DeviceAsyncModelRunnerOutput`` of a revision's ``AsyncModelRunnerOutput``.

    ``with_kv_connector_output`` adds ``get_kv_connector_output()`` (abstract from 0.33.0).
    """
    body: dict[str, Any] = {
        "output_types": output_types,
        "__doc__": DeviceAsyncOutputCopies.__doc__,
    }
    if with_kv_connector_output:
        body["get_kv_connector_output"] = _get_kv_connector_output
    return type(
        "DeviceAsyncModelRunnerOutput", (DeviceAsyncOutputCopies, async_model_runner_output), body
    )


class DeviceAsyncModelRunnerOutput(DeviceAsyncOutputCopies, AsyncModelRunnerOutput):
    __doc__ = DeviceAsyncOutputCopies.__doc__

    output_types = RevisionOutputTypes(
        sampler_output=SamplerOutput,
        logprobs_tensors=LogprobsTensors,
        model_runner_output=ModelRunnerOutput,
    )

    # The 2025.10 signatures, for readers and type checkers of ``import reference``.
    def __init__(
        self,
        sampler_output: SamplerOutput,
        req_ids: Sequence[str],
        *,
        vocab_size: int | None = None,
        prompt_logprobs_dict: Mapping[str, LogprobsTensors | None] | None = None,
        pooler_output: Sequence[torch.Tensor | None] | None = None,
        kv_connector_output: KVConnectorOutput | None = None,
        num_nans_in_logits: dict[str, int] | None = None,
    ) -> None:
        super().__init__(
            sampler_output,
            req_ids,
            vocab_size=vocab_size,
            prompt_logprobs_dict=prompt_logprobs_dict,
            pooler_output=pooler_output,
            kv_connector_output=kv_connector_output,
            num_nans_in_logits=num_nans_in_logits,
        )

    def get_output(self) -> ModelRunnerOutput:
        output: ModelRunnerOutput = super().get_output()
        return output
