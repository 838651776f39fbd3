"""The simulated device runtime: a producer's race shows on a CPU machine."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from conformance.producers.simulated_device import (
    SimulatedDeviceTensor,
    SimulatedRuntime,
    installed,
)

STALE = [0, 0, 0, 0]  # what the device tensors hold until the kernel writes
WRITTEN = [11, 12, 13, 14]
DELAY_S = 0.3
#: A kernel long enough that work not waiting for it is told from work waiting, even on
#: two busy cores: the bound checked is half of it.
LONG_KERNEL_S = 4.0
SENTINEL_OFFSET = __import__("zlib").crc32(b"sampled ids") % 97
_MISSING = object()
_CUDA_NAMES = (
    "Event",
    "Stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "synchronize",
    "is_available",
    "device_count",
    "current_device",
)


def runtime_module(device_type: str) -> Any:
    """torch.<device_type>, as plugin code reaches it (typed loosely: torch has no torch.npu)."""
    return getattr(torch, device_type)


def _pending_tensor(runtime: SimulatedRuntime, delay_s: float = DELAY_S) -> SimulatedDeviceTensor:
    """A device tensor of zeros that a kernel on the default stream overwrites after delay_s."""
    tensor = runtime.device_tensor(torch.zeros(4, dtype=torch.int64), label="sampled ids")
    runtime.write_later(tensor, torch.tensor(WRITTEN), delay_s)
    return tensor


class AsyncOutput:
    """A producer shaped like vLLM's AsyncModelRunnerOutput, with its two possible bugs as flags.

    It reaches the runtime as plugin code does: through torch.<device_type>.
    """

    def __init__(
        self,
        device_type: str,
        device_ids: torch.Tensor,
        copy_stream: Any,
        *,
        wait_for_compute: bool = True,
        synchronize: bool = True,
    ) -> None:
        runtime = runtime_module(device_type)
        # vLLM 0.12+ uses torch.Event(); earlier releases and 0.29+ the runtime's own.
        self._event = torch.cuda.Event(blocking=True) if device_type == "cuda" else torch.Event()
        self._synchronize = synchronize
        default_stream = runtime.current_stream()
        with runtime.stream(copy_stream):
            if wait_for_compute:
                copy_stream.wait_stream(default_stream)
            # The three spellings of a host copy plugins use.
            self._ids = device_ids.to("cpu", non_blocking=True)
            self._ids_as_float = device_ids.to(device="cpu", dtype=torch.float64, non_blocking=True)
            self._ids_again = device_ids.to(torch.device("cpu"), non_blocking=True)
            self._event.record()

    def get_output(self) -> list[list[Any]]:
        if self._synchronize:
            self._event.synchronize()
        return [self._ids.tolist(), self._ids_as_float.tolist(), self._ids_again.tolist()]


def _run_producer(device_type: str, **flags: bool) -> list[list[Any]]:
    return _run_producer_noting_reads(device_type, **flags)[0]


def _run_producer_noting_reads(
    device_type: str, **flags: bool
) -> tuple[list[list[Any]], list[str]]:
    with installed(SimulatedRuntime(device_type)) as runtime:
        device_ids = _pending_tensor(runtime)
        copy_stream = runtime_module(device_type).Stream()
        output = AsyncOutput(device_type, device_ids, copy_stream, **flags)
        return output.get_output(), runtime.early_reads()


@pytest.mark.parametrize("device_type", ["cuda", "npu"])
def test_a_producer_that_waits_on_its_event_reads_the_written_values(device_type: str) -> None:
    cuda, had_npu = torch.cuda, hasattr(torch, "npu")
    started = time.monotonic()
    ids, as_float, again = _run_producer(device_type)
    assert time.monotonic() - started >= DELAY_S * 0.9  # it did wait for the kernel
    assert ids == again == WRITTEN
    assert as_float == [float(v) for v in WRITTEN]
    assert torch.cuda is cuda
    assert hasattr(torch, "npu") == had_npu


@pytest.mark.parametrize("device_type", ["cuda", "npu"])
def test_a_producer_that_reads_before_waiting_reads_stale_values(device_type: str) -> None:
    had_npu = hasattr(torch, "npu")
    (ids, as_float, again), early = _run_producer_noting_reads(device_type, synchronize=False)
    # Sentinels, whatever the device held: a read before the wait never sees real values.
    assert ids == again == [torch.iinfo(torch.int64).min + 1 + SENTINEL_OFFSET] * 4
    assert all(v < -1e300 for v in as_float)
    assert early == ["sampled ids read before its copy arrived"]
    assert hasattr(torch, "npu") == had_npu


def test_a_copy_stream_that_does_not_wait_for_compute_copies_stale_values() -> None:
    ids, _, _ = _run_producer("cuda", wait_for_compute=False)
    assert ids == STALE


@pytest.mark.parametrize(
    "read",
    [
        lambda t: t.tolist(),
        lambda t: t.cpu().tolist(),
        lambda t: t.to("cpu").tolist(),
        lambda t: t.numpy(force=True).tolist(),
        lambda t: [int(v) for v in t],
    ],
    ids=["tolist", "cpu", "to_cpu", "numpy_force", "iterate"],
)
def test_a_blocking_read_waits_for_the_device(read: Callable[[torch.Tensor], list[int]]) -> None:
    with installed(SimulatedRuntime("npu")) as runtime:
        assert read(_pending_tensor(runtime)) == WRITTEN


@pytest.mark.parametrize("to_numpy", [torch.Tensor.numpy, np.asarray], ids=["numpy", "asarray"])
def test_device_memory_is_no_numpy_array(to_numpy: Callable[[torch.Tensor], Any]) -> None:
    # As torch on hardware: a device tensor must be copied to the host first.
    match = "can't convert npu:0 device type tensor to numpy"
    with installed(SimulatedRuntime("npu")) as runtime, pytest.raises(TypeError, match=match):
        to_numpy(_pending_tensor(runtime))


def test_a_blocking_read_waits_for_its_own_stream_only() -> None:
    # On hardware .item()/.tolist() synchronise the current stream: a copy queued on a
    # side stream may still be in flight after it.
    with installed(SimulatedRuntime("cuda")) as runtime:
        values = _pending_tensor(runtime)
        flag = runtime.device_tensor(torch.zeros(1), label="flag")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            in_flight = values.to("cpu", non_blocking=True)
        flag.item()  # waits for the default stream, which the copy is not on
        assert runtime.copies_not_arrived() == ["sampled ids"]
        side.synchronize()
        assert in_flight.tolist() == WRITTEN and runtime.early_reads() == []


def test_a_blocking_read_on_a_stream_that_never_waited_reads_unfinished_values() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        values = _pending_tensor(runtime, delay_s=LONG_KERNEL_S)
        with torch.cuda.stream(torch.cuda.Stream()):
            assert values.tolist() != WRITTEN  # ordered after none of the kernel
        [line] = runtime.unordered_reads()
        assert line.startswith("sampled ids") and "by a blocking read (tolist)" in line


def test_an_array_of_a_host_copy_in_flight_aliases_it() -> None:
    # np.asarray(host) before the wait, read after it: right on hardware, no read.
    with installed(SimulatedRuntime("cuda")) as runtime:
        in_flight = _pending_tensor(runtime).to("cpu", non_blocking=True)
        aliased = np.asarray(in_flight)
        assert runtime.early_reads() == []
        converted_early = np.asarray(in_flight, dtype=np.int32)  # a conversion reads
        torch.cuda.synchronize()
        assert aliased.tolist() == WRITTEN
        assert converted_early.tolist() != WRITTEN
        assert runtime.early_reads() == ["sampled ids read before its copy arrived"]


def test_host_reads_are_plain_tensors_and_device_ops_stay_on_the_device() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime)
        assert type(tensor.cpu()) is torch.Tensor
        in_flight = tensor.to("cpu", non_blocking=True)
        torch.cuda.synchronize()
        # Once its copy landed, what it computes is a plain host tensor.
        assert type(in_flight + 0) is torch.Tensor and (in_flight + 0).tolist() == WRITTEN
        plus_one = tensor + 1
        both = torch.cat([tensor, plus_one[:2]])
        assert isinstance(plus_one, SimulatedDeviceTensor)
        assert isinstance(both, SimulatedDeviceTensor)
        assert both.tolist() == [*WRITTEN, 12, 13]
        # A view shares the device memory: a later kernel shows through it.
        view = tensor[1:]
        runtime.write_later(tensor, torch.tensor([5, 6, 7, 8]), 0.0)
        assert view.tolist() == [6, 7, 8]


def test_a_landed_host_copy_deep_copies_and_shows_as_a_torch_tensor() -> None:
    # The checks keep a deep copy of what a step returned, whatever the backend put
    # there; a message shows a backend's host copy as the torch tensor it is to it.
    import copy

    from conformance.oracle.compare import kind_of

    with installed(SimulatedRuntime("cuda")) as runtime:
        in_flight = _pending_tensor(runtime).to("cpu", non_blocking=True)
        torch.cuda.synchronize()
        kept = copy.deepcopy({"ids": in_flight})["ids"]
        assert type(kept) is torch.Tensor and kept.tolist() == WRITTEN
        assert repr(in_flight).startswith("tensor([11, 12")
        assert kind_of(in_flight).startswith("torch.Tensor tensor(")
        assert runtime.early_reads() == []


def test_a_landed_host_copys_numpy_view_compares_as_the_numpy_array_it_is() -> None:
    # An async output may take .numpy() views of its host copies when built and hand
    # them over after its wait (Model Runner V2 does): to it they are numpy arrays.
    from conformance.oracle.compare import differences_between, kind_of

    with installed(SimulatedRuntime("cuda")) as runtime:
        view = _pending_tensor(runtime).to("cpu", non_blocking=True).numpy()
        torch.cuda.synchronize()
        expected = np.array(WRITTEN, dtype=view.dtype)
        assert differences_between(expected, view, "rows") == []
        assert kind_of(view).startswith("numpy.ndarray array(")
        assert differences_between(expected, view.tolist(), "rows") != []
        assert runtime.early_reads() == []


@pytest.mark.parametrize("device_type", ["cuda", "npu", "xpu"])
def test_installed_restores_torch_exactly_even_when_the_body_raises(device_type: str) -> None:
    cuda_before = {name: vars(torch.cuda).get(name, _MISSING) for name in _CUDA_NAMES}
    top_before = {
        name: vars(torch).get(name, _MISSING) for name in ("Event", "Stream", device_type)
    }
    cuda_module = torch.cuda
    runtime = SimulatedRuntime(device_type)
    with pytest.raises(ZeroDivisionError), installed(runtime):
        module = runtime_module(device_type)
        assert module.Event is torch.Event is runtime.Event
        assert module.Stream is torch.Stream is runtime.Stream
        assert module.is_available() and module.device_count() == 1
        assert module.current_device() == 0
        assert module.current_stream() is module.default_stream()
        assert torch.cuda is cuda_module  # patched in place, never replaced
        1 / 0  # noqa: B018
    assert {name: vars(torch.cuda).get(name, _MISSING) for name in _CUDA_NAMES} == cuda_before
    for name, before in top_before.items():
        assert vars(torch).get(name, _MISSING) is before
    with pytest.raises(RuntimeError, match="closed"):  # installed() closed the runtime
        runtime.write_later(runtime.device_tensor(torch.zeros(1)), torch.ones(1), 0.0)


@pytest.mark.parametrize("synchronize", [True, False])
def test_a_nonblocking_copy_into_a_host_buffer(synchronize: bool) -> None:
    with installed(SimulatedRuntime("npu")) as runtime:
        host = torch.full((4,), -1, dtype=torch.int64)
        assert host.copy_(_pending_tensor(runtime), non_blocking=True) is host
        if synchronize:
            runtime_module("npu").synchronize()
        # Until the host waits, the buffer holds the copy's sentinels, never real values.
        sentinels = [torch.iinfo(torch.int64).min + 1 + SENTINEL_OFFSET] * 4
        assert host.tolist() == (WRITTEN if synchronize else sentinels)
        assert runtime.copies_not_arrived() == ([] if synchronize else ["sampled ids"])


def test_event_query_says_whether_the_work_before_it_is_done() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        assert torch.cuda.Event().query()  # never recorded: complete, as on CUDA
        torch.cuda.Event().synchronize()  # and returns at once
        _pending_tensor(runtime)
        event = torch.cuda.Event()
        event.record()
        assert not event.query()
        assert not runtime.idle()
        event.synchronize()
        assert event.query()
        assert runtime.idle()


def test_an_event_wait_orders_a_side_stream_after_it() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime)
        event = torch.cuda.Event()
        event.record()
        side = torch.cuda.Stream()
        event.wait(side)
        with torch.cuda.stream(side):
            host = tensor.to("cpu", non_blocking=True)
        side.synchronize()
        assert host.tolist() == WRITTEN


def test_metadata_reads_do_not_wait_and_close_abandons_pending_work() -> None:
    runtime = SimulatedRuntime("npu")
    with installed(runtime):
        tensor = _pending_tensor(runtime, delay_s=LONG_KERNEL_S)
        npu = runtime_module("npu")
        side = npu.Stream()
        side.wait_stream(npu.current_stream())  # a stream blocked behind the kernel
        started = time.monotonic()
        assert tensor.shape == (4,) and tensor.size() == (4,) and len(tensor) == 4
        assert tensor.dtype == torch.int64 and tensor.dim() == 1 and tensor.numel() == 4
        assert tensor.device.type == "npu" and str(tensor.device) == "npu:0"
        assert time.monotonic() - started < LONG_KERNEL_S / 2
        assert not runtime.idle()
    assert time.monotonic() - started < LONG_KERNEL_S / 2  # close() did not sit out the kernel
    runtime.close()  # idempotent


def test_a_failed_kernel_surfaces_at_the_next_synchronize() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = runtime.device_tensor(torch.zeros(2))
        runtime.write_later(tensor, torch.ones(2), 0.0)
        runtime.default_stream()._submit(lambda: 1 / 0)
        with pytest.raises(RuntimeError, match="work failed"):
            torch.cuda.synchronize()
        torch.cuda.synchronize()  # reported once


def test_views_of_an_in_flight_copy_see_it_arrive_and_note_early_reads() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime)
        event = torch.cuda.Event()
        host = tensor.to("cpu", non_blocking=True)
        event.record()
        view = host[1:]  # a view is not a read
        late = tensor.to("cpu", non_blocking=True)  # after the event: not covered by it
        assert runtime.early_reads() == []
        event.synchronize()
        assert view.tolist() == WRITTEN[1:] and host.numpy().tolist() == WRITTEN
        assert runtime.copies_not_arrived() == ["sampled ids"]
        assert late.tolist() != WRITTEN
        assert runtime.early_reads() == ["sampled ids read before its copy arrived"]


@pytest.mark.parametrize(
    "rows_of", [list, lambda t: t.unbind(0), lambda t: t.split(1)], ids=["iter", "unbind", "split"]
)
def test_the_rows_of_an_in_flight_copy_are_views_not_reads(rows_of: Callable[[Any], Any]) -> None:
    # vLLM's pooling copy hands out list(host_rows) before its wait: no read yet.
    with installed(SimulatedRuntime("cuda")) as runtime:
        device = runtime.device_tensor(torch.zeros(2, 2), label="pooled rows")
        runtime.write_later(device, torch.tensor([[1.0, 2.0], [3.0, 4.0]]), DELAY_S)
        event = torch.cuda.Event()
        rows = rows_of(device.to("cpu", non_blocking=True))
        event.record()
        assert runtime.early_reads() == []
        event.synchronize()
        assert [row.flatten().tolist() for row in rows] == [[1.0, 2.0], [3.0, 4.0]]
        assert runtime.early_reads() == [] and runtime.copies_not_arrived() == []
        # Reading a row before its wait is still named.
        late = device.to("cpu", non_blocking=True)
        next(iter(late)).sum()
        assert runtime.early_reads() == ["pooled rows read before its copy arrived"]


def test_device_factories_make_tensors_of_the_simulated_device_within_their_block() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        rows = runtime.device_tensor(torch.arange(6.0).reshape(3, 2), label="pooled rows")
        with runtime.device_factories():
            index = torch.tensor([0, 2], device=rows.device, dtype=torch.long)
            empty = torch.empty(4, device="cuda")
            moved = torch.tensor([1, 2]).to("cuda:0", non_blocking=True)
            on_host = torch.zeros(2)
            picked = rows.index_select(0, index)
        for made in (index, empty, moved, picked):
            assert isinstance(made, SimulatedDeviceTensor) and made.device.type == "cuda"
        assert type(on_host) is torch.Tensor and on_host.device.type == "cpu"
        assert picked.cpu().tolist() == [[0.0, 1.0], [4.0, 5.0]]
        assert moved.cpu().tolist() == [1, 2] and index.dtype == torch.long
        # Outside the block a CPU-only torch refuses the device, as before.
        if not torch.backends.cuda.is_built():
            with pytest.raises((AssertionError, RuntimeError)):
                torch.tensor([0], device="cuda")


def test_an_event_recorded_after_a_wait_covers_the_side_stream_copy() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            host = tensor.to("cpu", non_blocking=True)
        # The default stream waits for the side stream: its event covers the copy.
        torch.cuda.current_stream().wait_stream(side)
        event = torch.cuda.Event()
        event.record()
        event.synchronize()
        assert host.tolist() == WRITTEN
        assert runtime.early_reads() == []


def test_a_numpy_array_taken_before_the_wait_and_read_after_it_is_right() -> None:
    # The array aliases the pinned buffer: legal on hardware when read after the wait.
    with installed(SimulatedRuntime("npu")) as runtime:
        npu = runtime_module("npu")
        host = _pending_tensor(runtime).to("cpu", non_blocking=True)
        event = npu.Event() if hasattr(npu, "Event") else torch.Event()
        event.record()
        array = host.numpy()
        event.synchronize()
        assert array.tolist() == WRITTEN
        assert runtime.early_reads() == [] and runtime.copies_not_arrived() == []


@pytest.mark.parametrize(
    "read",
    [
        lambda array: np.arange(2)[None, :] < array[:, None],  # a view's values, compared
        lambda array: array[1:].sum(),  # a slice's, summed
        lambda array: np.asanyarray(array)[0],  # an element of it as numpy hands it on
    ],
    ids=["view-compared", "slice-summed", "asanyarray-element"],
)
def test_a_view_of_a_numpy_array_read_before_the_wait_is_an_early_read(read) -> None:
    # vLLM's SamplingMaskTensors.tolists compares counts[:, None]: a view of the host
    # copy's array, read.  The view is the buffer still, so the read is the copy's.
    with installed(SimulatedRuntime("cuda")) as runtime:
        array = _pending_tensor(runtime).to("cpu", non_blocking=True).numpy()
        read(array)
        assert runtime.early_reads() == ["sampled ids read before its copy arrived"]


def test_a_kernel_or_copy_of_a_shape_that_does_not_fit_is_refused_when_queued() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = runtime.device_tensor(torch.zeros(2, 3))
        runtime.write_later(tensor, torch.ones(3), 0.0)  # broadcasts: fine
        with pytest.raises(ValueError, match=r"shape \(2,\) into \(2, 3\)"):
            runtime.write_later(tensor, torch.ones(2), 0.0)
        with pytest.raises(ValueError, match="cannot copy"):
            torch.zeros(4).copy_(tensor, non_blocking=True)


def test_inline_copies_run_on_the_host_thread_and_still_land_only_at_the_wait() -> None:
    import threading

    with installed(SimulatedRuntime("cuda")) as runtime:
        device_ids = runtime.device_tensor(torch.tensor(WRITTEN), label="sampled ids")
        copy_stream = torch.cuda.Stream()
        with runtime.copies_inline():
            threads_before = threading.active_count()
            output = AsyncOutput("cuda", device_ids, copy_stream)
            early = output._ids.tolist()  # the copy ran, but nobody waited for it
            assert runtime.idle() and threading.active_count() == threads_before
            assert early != WRITTEN
            assert runtime.early_reads() == ["sampled ids read before its copy arrived"]
            assert output.get_output()[0] == WRITTEN
        assert not runtime.inline


def test_the_reference_on_inline_copies_gives_what_it_gives_threaded() -> None:
    from reference.revisions import reference_module

    module = reference_module("0.33.0")
    found = []
    for inline in (False, True):
        with installed(SimulatedRuntime("cuda")) as runtime:
            ids = runtime.device_tensor(torch.tensor([[101, -1], [102, 103]], dtype=torch.int32))
            with runtime.copies_inline() if inline else runtime.stream(None):
                made = module.RunnerAsyncModelRunnerOutput(
                    model_runner_output=module.ModelRunnerOutput(
                        req_ids=["a", "b"], req_id_to_index={"a": 0, "b": 1}
                    ),
                    sampled_token_ids=ids,
                    async_output_copy_stream=torch.cuda.Stream(),
                    vocab_size=1000,
                )
                found.append(made.get_output().sampled_token_ids)
            assert runtime.early_reads() == []
    assert found == [[[101], [102, 103]]] * 2


def test_device_work_is_queued_and_a_copy_ordered_after_none_of_it_reads_it_unfinished() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime, delay_s=LONG_KERNEL_S)
        started = time.monotonic()
        # The producer's own device work waits for nothing: queued behind the kernel.
        counts = (tensor != 12).sum().to(torch.int32)
        shifted = torch.cat([tensor * 2, tensor[:1]])
        assert time.monotonic() - started < LONG_KERNEL_S / 2
        assert isinstance(counts, SimulatedDeviceTensor)
        idle = torch.cuda.Stream()
        with torch.cuda.stream(idle):
            early = counts.to("cpu", non_blocking=True)
        # A stream that waited for the one computing it copies the values.
        ordered = torch.cuda.Stream()
        ordered.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(ordered):
            right = shifted.to("cpu", non_blocking=True)
        torch.cuda.synchronize()
        assert early.tolist() == 0  # none of the work's values, however fast it ran
        assert right.tolist() == [22, 24, 26, 28, 11]
        assert counts.item() == 3  # a host read waits
        [line] = runtime.unordered_reads()
        assert line.startswith("a tensor computed from sampled ids (computed at ")
        assert "test_conformance_simulated_device.py:" in line
        assert "make the stream made at " in line and "wait for the default stream first" in line


def test_in_place_device_work_writes_the_device_tensor_on_its_stream() -> None:
    with installed(SimulatedRuntime("cuda")) as runtime:
        values = runtime.device_tensor(torch.arange(4), label="sampled ids")
        other = runtime.device_tensor(torch.full((4,), 7), label="drafts")
        total = runtime.device_tensor(torch.zeros(4, dtype=torch.int64), label="total")
        assert values.add_(10) is values
        values.masked_fill_(values == 12, -1)
        torch.add(values, other, out=total)
        other.copy_(values)
        other.zero_()
        torch.cuda.synchronize()
        assert values.cpu().tolist() == [10, 11, -1, 13]
        assert total.cpu().tolist() == [17, 18, 6, 20]
        assert other.cpu().tolist() == [0, 0, 0, 0]


def test_a_host_buffer_shaped_like_a_device_tensor_is_a_host_tensor() -> None:
    # A producer's staging buffer: empty_like/new_empty of a device tensor on the host,
    # pinned where torch can pin (on a CPU-only torch, host memory as it is), then a
    # non-blocking copy into it and record_stream on the copy stream, as plugins write it.
    with installed(SimulatedRuntime("cuda")) as runtime:
        values = runtime.device_tensor(torch.arange(6).reshape(2, 3), label="sampled ids")
        with runtime.device_factories():
            staged = torch.empty_like(values, device="cpu", pin_memory=True)
            zeros = values.new_zeros((2, 3), device="cpu")
            copy_stream = torch.cuda.Stream()
            copy_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(copy_stream):
                staged.copy_(values, non_blocking=True)
                values.record_stream(copy_stream)
                done = torch.cuda.Event()
                done.record()
        for host in (staged, zeros):
            assert type(host) is torch.Tensor and host.device.type == "cpu"
        done.synchronize()
        assert staged.tolist() == [[0, 1, 2], [3, 4, 5]] and zeros.sum().item() == 0
        with pytest.raises(RuntimeError, match="the stream is a cuda stream"):
            staged.record_stream(copy_stream)
        assert runtime.early_reads() == []


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
def test_new_tensor_on_the_host_copies_the_device_values_as_a_host_read_does() -> None:
    # new_tensor copies its data: unlike new_zeros, it reads the device tensor, so it
    # waits for the kernel writing it (a blocking copy on hardware), never taking stale
    # memory.
    with installed(SimulatedRuntime("cuda")) as runtime:
        tensor = _pending_tensor(runtime)
        host = tensor.new_tensor(tensor, device="cpu")
        assert type(host) is torch.Tensor and host.device.type == "cpu"
        assert host.tolist() == WRITTEN
        assert runtime.early_reads() == []


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
@pytest.mark.parametrize(
    ("make", "on_host", "dtype"),
    [
        (lambda t: torch.tensor(t, device="cpu"), True, torch.int64),
        (lambda t: torch.as_tensor(t, device="cpu", dtype=torch.int32), True, torch.int32),
        (lambda t: torch.asarray(t, device="cpu"), True, torch.int64),
        (lambda t: torch.tensor(t), False, torch.int64),
        (lambda t: torch.asarray(t, copy=True, dtype=torch.int32), False, torch.int32),
    ],
    ids=["tensor-cpu", "as_tensor-cpu-int32", "asarray-cpu", "tensor", "asarray-copy-int32"],
)
def test_a_tensor_made_from_device_data_copies_it_as_hardware_does(
    make: Callable[[torch.Tensor], torch.Tensor], on_host: bool, dtype: torch.dtype
) -> None:
    # torch.tensor(data) reads a tensor's memory without asking it: onto the host it is a
    # blocking copy (waits for the device), on the device a copy queued after the kernel.
    with installed(SimulatedRuntime("cuda")) as runtime, runtime.device_factories():
        tensor = _pending_tensor(runtime)
        made = make(tensor)
        assert isinstance(made, SimulatedDeviceTensor) is not on_host
        assert made.dtype == dtype and made is not tensor
        assert made.tolist() == WRITTEN
        assert runtime.early_reads() == []
        assert torch.as_tensor(tensor) is tensor  # nothing to convert: the same tensor


@pytest.mark.parametrize("device_type", ["cuda", "npu"])
def test_streams_as_torch_spells_them_device_generic_code_included(device_type: str) -> None:
    # `with stream:`, torch.cuda.StreamContext and torch.accelerator's stream calls, as
    # device-generic plugin code writes them; a stream tells its device and ids.
    before = dict(vars(torch.accelerator))
    with installed(SimulatedRuntime(device_type)) as runtime:
        module = runtime_module(device_type)
        values = _pending_tensor(runtime)
        side = module.Stream(priority=-1)
        assert str(side.device) == f"{device_type}:0" and side.device_index == 0
        assert side.priority == -1 and side.stream_id != module.Stream().stream_id
        with side:
            assert module.current_stream() is side
            assert torch.accelerator.current_stream() is side
            side.wait_stream(module.default_stream())
            in_flight = values.to("cpu", non_blocking=True)
        assert module.current_stream() is module.default_stream()
        with module.StreamContext(side):
            assert torch.accelerator.current_stream() is side
        torch.accelerator.set_stream(side)
        assert module.current_stream() is side
        torch.accelerator.set_stream(module.default_stream())
        assert torch.accelerator.is_available() and str(
            torch.accelerator.current_accelerator()
        ).startswith(device_type)
        torch.accelerator.synchronize()
        assert in_flight.tolist() == WRITTEN and runtime.early_reads() == []
    assert vars(torch.accelerator) == before  # restored, exactly


def test_reading_an_empty_host_copy_early_reads_nothing() -> None:
    # Zero requests with logprobs: the copy holds no element, so reading it before the
    # wait reads no unfinished value, on hardware as here.
    with installed(SimulatedRuntime("cuda")) as runtime:
        empty = runtime.device_tensor(torch.zeros(0, 5), label="logprobs")
        in_flight = empty.to("cpu", non_blocking=True)
        assert in_flight.tolist() == [] and in_flight.numpy().tolist() == []
        assert runtime.early_reads() == []
        values = _pending_tensor(runtime).to("cpu", non_blocking=True)
        assert values[:0].tolist() == [] and runtime.early_reads() == []
        values.tolist()  # four elements read before the wait: named
        assert runtime.early_reads() == ["sampled ids read before its copy arrived"]


def test_a_host_copy_read_through_its_numpy_array_is_named_by_its_attribute() -> None:
    # The array names no attribute itself; the producer's attribute holding the host copy
    # does, not the one holding the device tensor it was copied from.
    class Producer:
        def __init__(self, device_values: torch.Tensor) -> None:
            self.device_values = device_values
            self.host_values = device_values.to("cpu", non_blocking=True)

        def read(self) -> list[int]:
            return self.host_values.numpy().tolist()

    with installed(SimulatedRuntime("cuda")) as runtime:
        producer = Producer(_pending_tensor(runtime))
        assert producer.read() != WRITTEN
        [detail] = runtime.early_read_details()
        assert detail.startswith("Producer.host_values, the host copy of Producer.device_values")
