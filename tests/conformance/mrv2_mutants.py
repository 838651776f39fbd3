"""Model Runner V2's own AsyncOutput of the release on the path, changed to race.

``make()``: a backend judging two mutants of the class side by side (the race check's
self-test for that runner): ``without-wait``, whose ``get_output()`` no longer waits for
its copy event, and ``copy-first``, whose copies no longer wait for the main stream's
work (its ``copy_stream.wait_stream(main_stream)`` gone).  Import it only with a release
(installed or a stub tree) first on the path.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
import vllm
from racing_streams import EventNeverWaitedFor, StreamThatNeverWaits
from vllm.v1 import outputs
from vllm.v1.outputs import AsyncModelRunnerOutput
from vllm.v1.worker.gpu.async_utils import AsyncOutput

from conformance import Backend, constructed_like_vllm
from conformance.backends.backend import AsyncOutputProducer


class WithoutWait(AsyncOutput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.copy_event = EventNeverWaitedFor(self.copy_event)


class CopyFirst(AsyncOutput):
    def __init__(self, *args, **kwargs):
        kwargs["copy_stream"] = StreamThatNeverWaits(kwargs["copy_stream"])
        super().__init__(*args, **kwargs)


class FiltersPlaceholders(AsyncOutput):
    """Unpads by value (drops -1, as the first runner's parse_output does) where Model
    Runner V2 unpads by count: what the device left past num_sampled stays."""

    def get_output(self):
        self.copy_event.synchronize()
        width = self.sampled_token_ids.shape[1]
        self.num_sampled_tokens_np = np.full_like(self.num_sampled_tokens_np, width)
        output = super().get_output()
        output.sampled_token_ids = [[t for t in row if t != -1] for row in output.sampled_token_ids]
        return output


class LeavesPromptLogprobsOnTheDevice(AsyncOutput):
    """Hands over the prompt logprobs as the runner computed them, on the device."""

    def __init__(self, *args, **kwargs):
        self._as_computed = dict(kwargs["model_runner_output"].prompt_logprobs_dict)
        super().__init__(*args, **kwargs)

    def get_output(self):
        output = super().get_output()
        output.prompt_logprobs_dict = self._as_computed
        return output


class DropsPromptTokenLogprobs(AsyncOutput):
    """Hands over no prompt token logprobs (0.31.0 on) though the runner computed them."""

    def get_output(self):
        output = super().get_output()
        output.prompt_token_id_logprobs_dict = {}
        return output


class DropsSamplingMasks(AsyncOutput):
    """Hands over no sampling masks (0.28.0 on) though the sampler recorded them."""

    def get_output(self):
        output = super().get_output()
        output.sampling_masks = None
        return output


class ListsSamplingMasksBeforeWaiting(AsyncOutput):
    """Converts the host copy of the sampling masks right after queuing it, before the
    wait: it reads what has not arrived."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        copied = self.sampling_mask_tensors
        early = copied.tolists(self.num_sampled_tokens_np) if copied is not None else None
        self._early = early

    def get_output(self):
        output = super().get_output()
        output.sampling_masks = self._early
        return output


class ListsSamplingMasksWithoutCounts(AsyncOutput):
    """Lists the masks as 0.30.0's async output did, without the sampled counts: with
    several slots per request (drafts), it cannot tell the slots holding a token."""

    def get_output(self):
        masks, self.sampling_mask_tensors = self.sampling_mask_tensors, None
        output = super().get_output()
        output.sampling_masks = masks.tolists() if masks is not None else None
        return output


class WaitsOnAnIdleStream(AsyncOutput):
    """Its copies wait on a new stream that ran nothing, not on the runner's main stream."""

    def __init__(self, *args, **kwargs):
        kwargs["main_stream"] = torch.cuda.Stream()
        super().__init__(*args, **kwargs)


def _counts_on_the_device(step):
    """``num_sampled`` computed by the plugin on the device, from the padded ids (its
    own device work, queued on the current stream): the step's count, by value."""
    ids = step.sampled_token_ids
    kept = (ids != -1) & (ids < step.vocab_size)
    counts = kept.sum(dim=1).to(torch.int32)
    if step.invalid_req_indices:
        counts[step.invalid_req_indices] = 0
    return counts


def _fed_its_own_counts(main_stream) -> object:
    """Model Runner V2's own AsyncOutput, fed by a ``make_async_output`` that computes
    ``num_sampled`` on the device itself; ``main_stream(step)`` is what it hands over as
    the stream that work is on."""
    build = constructed_like_vllm(AsyncOutput)

    def make_async_output(step):
        counts = _counts_on_the_device(step)
        sampler = dataclasses.replace(step.sampler_output, num_sampled=counts)
        return build(
            dataclasses.replace(
                step, num_sampled=counts, sampler_output=sampler, main_stream=main_stream(step)
            )
        )

    make_async_output.runner = build.runner  # type: ignore[attr-defined]
    return make_async_output


def _one_made(make_async_output, name: str) -> Backend:
    return Backend(
        name=name,
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=make_async_output,
    )


def counts_on_an_idle_main_stream() -> Backend:
    """The issue's plugin: its counts computed on the current stream, a new idle stream
    handed over as the main stream, so the copies wait for nothing."""
    return _one_made(
        _fed_its_own_counts(lambda step: torch.cuda.Stream()), "vllm-mrv2-idle-main-stream"
    )


def counts_on_the_main_stream() -> Backend:
    """The same plugin handing over the stream its counts are computed on: correct."""
    return _one_made(
        _fed_its_own_counts(lambda step: torch.cuda.current_stream()), "vllm-mrv2-own-counts"
    )


def as_the_readme_declares() -> Backend:
    """vLLM's own AsyncOutput, declared as the README declares a plugin: its types on cpu
    and the accelerator, no ``producer_devices``."""
    return Backend(
        name="vllm-mrv2-readme-declaration",
        module=outputs,
        devices=("cpu", "cuda"),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(AsyncOutput),
    )


def unpads_by_value() -> Backend:
    return _one(FiltersPlaceholders, "vllm-mrv2-unpads-by-value")


def leaves_prompt_logprobs_on_the_device() -> Backend:
    return _one(LeavesPromptLogprobsOnTheDevice, "vllm-mrv2-prompt-logprobs-on-the-device")


def drops_prompt_token_logprobs() -> Backend:
    return _one(DropsPromptTokenLogprobs, "vllm-mrv2-drops-prompt-token-logprobs")


def drops_sampling_masks() -> Backend:
    return _one(DropsSamplingMasks, "vllm-mrv2-drops-sampling-masks")


def lists_sampling_masks_before_waiting() -> Backend:
    return _one(ListsSamplingMasksBeforeWaiting, "vllm-mrv2-lists-sampling-masks-early")


def lists_sampling_masks_without_counts() -> Backend:
    return _one(ListsSamplingMasksWithoutCounts, "vllm-mrv2-lists-sampling-masks-without-counts")


def waits_on_an_idle_stream() -> Backend:
    return _one(WaitsOnAnIdleStream, "vllm-mrv2-waits-on-an-idle-stream")


class KeepsTheOutputAsBuilt(AsyncOutput):
    """Hands over a copy of the runner's output made when built: the KV connector's
    output the runner puts on it afterwards (0.22.0 on) is lost."""

    def __init__(self, *args, **kwargs):
        kwargs["model_runner_output"] = dataclasses.replace(kwargs["model_runner_output"])
        super().__init__(*args, **kwargs)


class KeepsTheKvOutputAsBuilt(AsyncOutput):
    """Answers get_kv_connector_output() with what the runner's output held when built."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kv_as_built = self.model_runner_output.kv_connector_output

    def get_kv_connector_output(self):
        return self.kv_as_built


class KvOutputThroughGetOutput(AsyncOutput):
    """Answers get_kv_connector_output() through get_output(): where that failed (when
    vLLM asks), it raises again."""

    def get_kv_connector_output(self):
        return self.get_output().kv_connector_output


class DropsTheBoundariesOnTheDevice(AsyncOutput):
    """Copies the logprobs without their request boundaries held on the device only
    (adaptive verification): each request then reads other requests' rows."""

    def __init__(self, *args, **kwargs):
        sampler_output = kwargs["sampler_output"]
        tensors = sampler_output.logprobs_tensors
        if tensors is not None:
            tensors = tensors._replace(cu_num_generated_tokens_tensor=None)
            kwargs["sampler_output"] = dataclasses.replace(sampler_output, logprobs_tensors=tensors)
        super().__init__(*args, **kwargs)


class DropsNanCounts(AsyncOutput):
    """Hands over no NaN counts though the sampler counted them on the device."""

    def get_output(self):
        output = super().get_output()
        output.num_nans_in_logits = {}
        return output


def drops_nan_counts() -> Backend:
    return _one(DropsNanCounts, "vllm-mrv2-drops-nan-counts")


class MapsNanCountsBySortedIds(AsyncOutput):
    """Maps the NaN counts to the request ids sorted, not in the order of the rows."""

    def get_output(self):
        output = super().get_output()
        counts = output.num_nans_in_logits
        if counts:
            output.num_nans_in_logits = dict(zip(sorted(counts), counts.values(), strict=True))
        return output


def maps_nan_counts_by_sorted_ids() -> Backend:
    return _one(MapsNanCountsBySortedIds, "vllm-mrv2-maps-nan-counts-by-sorted-ids")


class NanCountsOfNumpy(AsyncOutput):
    """Maps the NaN counts as numpy's int32, not the Python ints of num_nans.tolist()."""

    def get_output(self):
        output = super().get_output()
        counts = output.num_nans_in_logits
        if counts:
            output.num_nans_in_logits = {r: np.int32(n) for r, n in counts.items()}
        return output


def nan_counts_of_numpy() -> Backend:
    return _one(NanCountsOfNumpy, "vllm-mrv2-nan-counts-of-numpy")


def drops_the_boundaries_on_the_device() -> Backend:
    return _one(DropsTheBoundariesOnTheDevice, "vllm-mrv2-drops-the-boundaries-on-the-device")


def keeps_the_output_as_built() -> Backend:
    return _one(KeepsTheOutputAsBuilt, "vllm-mrv2-keeps-the-output-as-built")


def keeps_the_kv_output_as_built() -> Backend:
    return _one(KeepsTheKvOutputAsBuilt, "vllm-mrv2-keeps-the-kv-output-as-built")


def kv_output_through_get_output() -> Backend:
    return _one(KvOutputThroughGetOutput, "vllm-mrv2-kv-output-through-get-output")


def _one(cls: type, name: str) -> Backend:
    return Backend(
        name=name,
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(cls),
    )


def make() -> Backend:
    copy_first = constructed_like_vllm(CopyFirst)
    return Backend(
        name="vllm-mrv2-mutants",
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(WithoutWait),
        other_async_outputs=(
            AsyncOutputProducer("copy-first", copy_first, runner=copy_first.runner),
        ),
    )


def pooling_copy() -> Backend:
    """A plugin whose pooling async output is Model Runner V2's of the release, unchanged."""
    from vllm.v1.worker.gpu.async_utils import AsyncPoolingOutput

    return _pooling_only(AsyncPoolingOutput, "plugin-with-mrv2-pooling")


def pooling_kv_output_through_get_output() -> Backend:
    """A plugin whose pooling async output answers get_kv_connector_output() through
    get_output(): where that failed (when vLLM asks), it raises again."""
    from vllm.v1.worker.gpu.async_utils import AsyncPoolingOutput

    class KvThroughGetOutput(AsyncPoolingOutput):
        def get_kv_connector_output(self):
            return self.get_output().kv_connector_output

    return _pooling_only(KvThroughGetOutput, "plugin-with-pooling-kv-through-get-output")


def _pooling_only(cls: type, name: str) -> Backend:
    """A plugin whose one async output is the pooling class ``cls``."""
    pooling = constructed_like_vllm(cls)
    return Backend(
        name=name,
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        other_async_outputs=(
            AsyncOutputProducer("pooling", pooling, kind="pooling", runner=pooling.runner),
        ),
    )


class ReadsCountsBeforeWaiting(AsyncModelRunnerOutput):
    """A plugin's own async output shaped like Model Runner V2's, its planted bug: get_output()
    reads ``num_sampled_tokens`` before waiting for the copy event."""

    def __init__(
        self, model_runner_output, sampler_output, num_sampled_tokens, main_stream, copy_stream
    ):
        self.model_runner_output = model_runner_output
        self.copy_event = torch.cuda.Event()
        with torch.cuda.stream(copy_stream):
            copy_stream.wait_stream(main_stream)
            self.sampled_token_ids = sampler_output.sampled_token_ids.to("cpu", non_blocking=True)
            self.num_sampled_tokens = num_sampled_tokens.to("cpu", non_blocking=True)
            self.copy_event.record(copy_stream)

    def get_output(self):
        counts = self.num_sampled_tokens.tolist()
        self.copy_event.synchronize()
        rows = self.sampled_token_ids.tolist()
        for row, count in zip(rows, counts, strict=True):
            del row[count:]
        self.model_runner_output.sampled_token_ids = rows
        return self.model_runner_output

    def get_kv_connector_output(self):
        return self.model_runner_output.kv_connector_output


def reads_counts_before_waiting() -> Backend:
    return _one(ReadsCountsBeforeWaiting, "plugin-reads-counts-before-waiting")


class ReadsCountArrayBeforeWaiting(AsyncOutput):
    """Model Runner V2's own class, its planted bug: get_output() reads the counts' numpy
    array before waiting for the copy event."""

    def get_output(self):
        counts = self.num_sampled_tokens_np.tolist()
        output = super().get_output()
        for token_ids, count in zip(output.sampled_token_ids, counts, strict=True):
            del token_ids[count:]
        return output


def reads_count_array_before_waiting() -> Backend:
    return _one(ReadsCountArrayBeforeWaiting, "vllm-mrv2-reads-count-array-before-waiting")
