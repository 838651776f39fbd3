"""Each backend's operation timed interleaved with another backend's, in one process.

On a shared 2-core machine the same code runs up to 2x slower for seconds at a
time (measured here: ``tolists()`` of 0.13.0 and of 0.14.0, identical code,
4.5 us in one half-second window and 9 us in the next, both alike).  asv times
one backend after another, so its medians rank releases partly by when each
ran.  Here a backend's call and the partner's call alternate in rounds
(:mod:`interleaved`), so both see the same machine, and the ratio
is a side-by-side measurement.

The partner is the first backend of the run that has the operation (the 2025.10
reference for most; the first release with it for ``filter``, ``cat`` and the cu
tensor), so within one operation every ratio shares a denominator: the ratio of
two releases' ratios is their step, still side by side.  The partner against
itself shows the method's noise floor (1.0 when there is none).

One shape per operation: the representative shape of its benchmark (quick mode's),
written into the ``operation`` value, e.g. ``ToLists.time_tolists(num_tokens=1024,
num_logprobs=5)``, so a result says exactly what it compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

# Modules, not their classes: asv would discover an imported class here again.
from . import (
    async_output,
    empty_cpu,
    gather,
    lists_slice,
    logprobs_ops,
    padding,
    pickling,
    tolists,
    transfer,
)
from .common import (
    Benchmark,
    DeviceBenchmark,
    backend_params,
    device_params,
    many_backends,
    quick,
    representative_shape,
    selected_specs,
)
from .interleaved import ratio_samples

#: The backend-dependent timed operations compared side by side.
COMPARED: tuple[tuple[type[Benchmark], str], ...] = (
    (tolists.ToLists, "time_tolists"),
    (tolists.ToListsWithCu, "time_tolists_with_cu"),
    (tolists.ToListsWithCuTensor, "time_tolists_with_cu_tensor"),
    (lists_slice.Slice, "time_slice_per_request"),
    (lists_slice.SliceWithCu, "time_slice_per_request_with_cu"),
    (pickling.PickleModelRunnerOutput, "time_dumps"),
    (pickling.PickleModelRunnerOutput, "time_loads"),
    (empty_cpu.EmptyCpu, "time_empty_cpu"),
    (transfer.Transfer, "time_to_cpu_nonblocking_and_wait"),
    (transfer.TransferWithCuTensor, "time_to_cpu_nonblocking_with_cu_tensor_and_wait"),
    (logprobs_ops.Filter, "time_filter"),
    (logprobs_ops.Cat, "time_cat"),
    # The producers: each release's own beside the reference's.
    (gather.GatherLogprobs, "time_gather_logprobs"),
    (padding.Unpad, "time_unpad_sampled_token_ids"),
    (async_output.AsyncOutput, "time_async_output_get_output"),
)


def operation_label(cls: type[Benchmark], method: str) -> str:
    """``ToLists.time_tolists(num_tokens=1024, num_logprobs=5)``."""
    shape = ", ".join(f"{k}={v}" for k, v in representative_shape(cls).items())
    return f"{cls.__name__}.{method}({shape})"


OPERATIONS: dict[str, tuple[type[Benchmark], str]] = {
    operation_label(cls, method): (cls, method) for cls, method in COMPARED
}


def operation_call(spec: str, device: str, operation: str) -> Callable[[], object]:
    """Backend ``spec``'s timed call of ``operation`` on ``device``, set up and ready.

    Raises ``NotImplementedError`` (asv: skipped) where the backend's revision lacks
    the operation or the device cannot run it, as the benchmark itself does."""
    cls, method = OPERATIONS[operation]
    shape = tuple(representative_shape(cls).values())
    if "device" in cls.param_names:
        params: tuple[Any, ...] = (spec, device, *shape)
    elif device != "cpu":
        raise NotImplementedError(f"{operation} is host work: measured on cpu only")
    else:
        params = (spec, *shape)
    instance = cls()
    instance.setup(*params)
    bound = getattr(instance, method)
    return lambda: bound(*params)


def partner_of(device: str, operation: str) -> tuple[str, Callable[[], object]]:
    """The first backend of the run that has ``operation``, and its call."""
    reasons = []
    for spec in selected_specs():
        try:
            return spec, operation_call(spec, device, operation)
        except NotImplementedError as why:
            reasons.append(str(why))
    raise NotImplementedError(f"no backend of the run has {operation}: {'; '.join(reasons)}")


class SideBySide(DeviceBenchmark):
    """A backend's operation over the partner's, timed interleaved (best of rounds)."""

    # In a run of one backend one operation is enough to say why all are skipped.
    params: ClassVar[list[list[Any]]] = [
        backend_params(),
        device_params(),
        list(OPERATIONS) if many_backends() else list(OPERATIONS)[:1],
    ]
    param_names: ClassVar[list[str]] = ["backend", "device", "operation"]
    # Interleaved already: a second asv round would only repeat the same comparison.
    rounds = 1

    def setup(self, backend: str, device: str, operation: str) -> None:
        if not many_backends():
            raise NotImplementedError("one backend in the run: nothing to put side by side")
        self.ours = operation_call(backend, device, operation)
        self.partner, self.theirs = partner_of(device, operation)

    def track_ratio_to_partner(self, backend: str, device: str, operation: str) -> dict[str, Any]:
        # Quick mode: a quarter of the time, for runs of a few minutes.
        return ratio_samples(self.ours, self.theirs, 0.1 if quick() else 0.4)

    track_ratio_to_partner.unit = "ratio"  # type: ignore[attr-defined]
