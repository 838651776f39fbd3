"""A device runtime (streams, events) simulated with threads, for race checks on CPU machines.

vLLM's hardware plugins return an ``AsyncModelRunnerOutput`` whose constructor starts
non-blocking device-to-host copies on a side stream and records an event, and whose
``get_output()`` must wait on that event before reading the host copies.  A producer that
reads first, or copies on a stream that never waited for the compute stream, passes on a
CPU (where every copy is synchronous) and fails only on hardware.  This module makes the
race visible without hardware:

* :class:`SimulatedRuntime` offers what a ``torch.<device>`` runtime module offers
  (``Stream``, ``Event``, ``current_stream``, ``stream``, ``synchronize``...); each stream
  is a FIFO run by its own daemon thread.
* :meth:`SimulatedRuntime.device_tensor` makes a :class:`SimulatedDeviceTensor`, whose
  values a "kernel" (:meth:`SimulatedRuntime.write_later`) writes after a delay.  A
  non-blocking copy to the host (:class:`HostCopy`) returns a buffer of sentinel values
  at once; its stream reads the device values when it gets there, and the host sees
  them only once it *waited* for that point (an event recorded after the copy, the
  stream, the runtime).  So a read before the wait it belongs to sees the sentinels on
  every run, and is named (:meth:`SimulatedRuntime.early_reads`,
  :meth:`SimulatedRuntime.copies_not_arrived`).  Any other use of the tensor is a
  blocking read: it waits for the whole runtime first, as real hardware does.
* :func:`installed` puts the runtime in place of ``torch.<device>`` (and ``torch.Event``
  / ``torch.Stream``) for a with-block, so that unchanged producer code drives it.

The simulated tensors live in CPU memory, but answer ``device``, ``is_cpu``, ``is_cuda``
and ``get_device()`` as tensors of the simulated type (a :class:`SimulatedDevice` where
torch cannot name the type), so producers take their device path.
"""

from __future__ import annotations

import inspect
import queue
import threading
import types
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import torch
from torch.overrides import TorchFunctionMode

__all__ = [
    "HostCopy",
    "InFlightHostTensor",
    "SimulatedDevice",
    "SimulatedDeviceTensor",
    "SimulatedEvent",
    "SimulatedRuntime",
    "SimulatedStream",
    "installed",
]

# How often a wait looks whether the runtime was closed meanwhile, so that nothing
# (a host thread or a stream waiting on another stream) can outlive close().
_POLL_S = 0.01
# close() gives each stream thread this long to notice; they are daemons past that.
_JOIN_S = 1.0

_MISSING = object()

# What installed() patches on torch.cuda, and what the module it puts at torch.<other> offers.
_RUNTIME_NAMES = (
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


class SimulatedStream:
    """A stream of one runtime: work submitted to it runs in order on its own thread.

    Instantiate it through ``runtime.Stream`` (``torch.<device>.Stream`` once installed),
    the subclass bound to that runtime.
    """

    _runtime: ClassVar[SimulatedRuntime]

    def __init__(self, device: Any = None, priority: int = 0, **_ignored: Any) -> None:
        if not hasattr(type(self), "_runtime"):
            raise TypeError("create streams through a runtime: SimulatedRuntime(...).Stream()")
        self._queue: queue.SimpleQueue[tuple[Callable[[], object], threading.Event] | None] = (
            queue.SimpleQueue()
        )
        # Guards _last and _thread: a submission and its place in the order are one step.
        self._lock = threading.Lock()
        self._last: threading.Event | None = None
        self._thread: threading.Thread | None = None
        # The order the host can see: job numbers, what later work on this stream is
        # ordered after on other streams (by their job numbers), and the host copies
        # queued here that have not landed yet.
        self._seq = 0
        self._clock: dict[SimulatedStream, int] = {}
        self._in_flight: list[tuple[int, HostCopy]] = []
        self._runtime._register(self)

    def _coverage(self) -> dict[SimulatedStream, int]:
        """What a host wait for the work queued here so far covers, on every stream."""
        with self._lock:
            return {**self._clock, self: self._seq}

    def _order_after(self, coverage: dict[SimulatedStream, int]) -> None:
        with self._lock:
            for stream, seq in coverage.items():
                if stream is not self and seq > self._clock.get(stream, 0):
                    self._clock[stream] = seq

    def _land(self, up_to: int) -> None:
        """Host copies queued here up to job ``up_to`` are visible to the host from now."""
        with self._lock:
            due = [copy for seq, copy in self._in_flight if seq <= up_to]
            self._in_flight = [(seq, copy) for seq, copy in self._in_flight if seq > up_to]
        for copy in due:
            copy.land()

    def _submit(self, work: Callable[[], object]) -> threading.Event:
        """Queue ``work``; the returned flag is set once it (and all before it) ran."""
        runtime = self._runtime
        done = threading.Event()
        if runtime.inline:
            return self._run_inline(work, done)
        with self._lock:
            if runtime._closed.is_set():
                raise RuntimeError(f"simulated {runtime.device_type} runtime is closed")
            if self._thread is None:
                # Started on first use: most streams a producer creates stay idle.
                self._thread = threading.Thread(
                    target=self._work, name=f"simulated-{runtime.device_type}-stream", daemon=True
                )
                self._thread.start()
            self._queue.put((work, done))
            self._last = done
            self._seq += 1
        return done

    def _run_inline(self, work: Callable[[], object], done: threading.Event) -> threading.Event:
        """Run ``work`` now, on the caller's thread, after the work queued before it."""
        runtime = self._runtime
        with self._lock:
            if runtime._closed.is_set():
                raise RuntimeError(f"simulated {runtime.device_type} runtime is closed")
            before = self._last
            self._last = done
            self._seq += 1
        if before is not None:
            before.wait()
        try:
            work()
        except BaseException as error:  # surfaces at the next synchronize, as threaded
            runtime._record_error(error)
        finally:
            done.set()
        return done

    def _submit_copy(self, copy: HostCopy) -> None:
        """Queue ``copy``: the stream reads the device values in its order; the host sees
        them only once it waited for work queued at or after it."""
        with self._lock:
            seq = self._seq + 1
            self._in_flight.append((seq, copy))
        self._submit(copy.stage_view if self._runtime.inline else copy.stage)

    def _work(self) -> None:
        runtime = self._runtime
        while (item := self._queue.get()) is not None:
            work, done = item
            try:
                if not runtime._closed.is_set():  # after close(), queued work is abandoned
                    work()
            except BaseException as error:  # surfaces at the next synchronize, as on CUDA
                runtime._record_error(error)
            finally:
                done.set()

    def _stop(self) -> threading.Thread | None:
        self._queue.put(None)
        return self._thread

    def wait_stream(self, stream: SimulatedStream) -> None:
        """Later work on this stream waits for all work queued on ``stream`` up to now."""
        with stream._lock:
            marker = stream._last
        if stream is not self and marker is not None:
            self._submit(lambda: self._runtime._wait(marker))
            self._order_after(stream._coverage())

    def wait_event(self, event: SimulatedEvent) -> None:
        """Later work on this stream waits for ``event`` (as last recorded; none: no wait)."""
        marker = event._done
        if marker is not None:
            self._submit(lambda: self._runtime._wait(marker))
            self._order_after(event._covers)

    def record_event(self, event: SimulatedEvent | None = None) -> SimulatedEvent:
        event = event if event is not None else self._runtime.Event()
        event.record(self)
        return event

    def query(self) -> bool:
        coverage = self._coverage()
        with self._lock:
            marker = self._last
        done = marker is None or marker.is_set()
        if done:
            self._runtime._land(coverage)
        return done

    def synchronize(self) -> None:
        coverage = self._coverage()
        with self._lock:
            marker = self._last
        if marker is not None:
            self._runtime._wait(marker)
        self._runtime._land(coverage)
        self._runtime._raise_errors()


class SimulatedEvent:
    """An event of one runtime; create it through ``runtime.Event``."""

    _runtime: ClassVar[SimulatedRuntime]

    def __init__(
        self,
        device: Any = None,
        *,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
        **_ignored: Any,
    ) -> None:
        if not hasattr(type(self), "_runtime"):
            raise TypeError("create events through a runtime: SimulatedRuntime(...).Event()")
        # None until recorded: CUDA treats an unrecorded event as complete.
        self._done: threading.Event | None = None
        # The work a wait for this event covers, per stream (job numbers).
        self._covers: dict[SimulatedStream, int] = {}

    def record(self, stream: SimulatedStream | None = None) -> None:
        stream = stream if stream is not None else self._runtime.current_stream()
        # A no-op job: the FIFO runs it only after everything queued before the record.
        self._done = stream._submit(lambda: None)
        self._covers = stream._coverage()

    def query(self) -> bool:
        marker = self._done
        done = marker is None or marker.is_set()
        if done:
            self._runtime._land(self._covers)
        return done

    def synchronize(self) -> None:
        marker = self._done
        if marker is not None:
            self._runtime._wait(marker)
        self._runtime._land(self._covers)
        self._runtime._raise_errors()

    def wait(self, stream: SimulatedStream | None = None) -> None:
        stream = stream if stream is not None else self._runtime.current_stream()
        stream.wait_event(self)

    def elapsed_time(self, end_event: SimulatedEvent) -> float:
        raise NotImplementedError("simulated events keep no time")


class SimulatedRuntime:
    """A device runtime (streams, events) simulated with threads; installed as torch.<device_type>."""

    Stream: type[SimulatedStream]
    Event: type[SimulatedEvent]

    def __init__(self, device_type: str) -> None:
        if not device_type.isidentifier() or device_type == "cpu":
            raise ValueError(f"not a device type to simulate: {device_type!r}")
        self.device_type = device_type
        #: Work runs as it is queued, on the queuing thread (:meth:`copies_inline`).
        self.inline = False
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _streams and _errors
        self._streams: list[SimulatedStream] = []
        self._errors: list[BaseException] = []
        self._early_reads: list[str] = []  # labels, once each
        self._local = threading.local()  # the current stream is per host thread, as in torch
        # Classes bound to this runtime, so that torch.<device>.Stream() needs no argument.
        self.Stream = type("Stream", (SimulatedStream,), {"_runtime": self})
        self.Event = type("Event", (SimulatedEvent,), {"_runtime": self})
        self._default = self.Stream()

    @contextmanager
    def copies_inline(self) -> Iterator[SimulatedRuntime]:
        """Within the block, a copy engine that finishes each piece of work as it is
        queued, on the queuing thread: the host still sees a copy only once it waited
        for it, but no thread runs beside the host.  For measuring what the host
        itself allocates (a count no other thread's allocations may enter); the race
        check needs the threads, whose delays make an early read visible."""
        previous, self.inline = self.inline, True
        try:
            yield self
        finally:
            self.inline = previous

    @contextmanager
    def device_factories(self) -> Iterator[SimulatedRuntime]:
        """Within the block (on this thread), a tensor made for this device is a simulated
        one: a factory call naming it (``torch.tensor(ids, device=rows.device)``,
        ``torch.empty(n, device="cuda")``) or a host tensor's ``.to()`` it.  Producers make
        index tensors so (vLLM's pooling copy does); a CPU-only torch could not.  Scoped to
        the checks' steps: every torch call in the block passes through it."""
        with _DeviceFactories(self):
            yield self

    # The runtime-module surface.

    def current_stream(self, device: Any = None) -> SimulatedStream:
        stream: SimulatedStream | None = getattr(self._local, "stream", None)
        return stream if stream is not None else self._default

    def default_stream(self, device: Any = None) -> SimulatedStream:
        return self._default

    def set_stream(self, stream: SimulatedStream | None) -> None:
        if stream is not None:  # torch treats None as "leave it"
            self._local.stream = stream

    @contextmanager
    def stream(self, stream: SimulatedStream | None) -> Iterator[SimulatedStream | None]:
        if stream is None:
            yield None
            return
        previous = self.current_stream()
        self._local.stream = stream
        try:
            yield stream
        finally:
            self._local.stream = previous

    def synchronize(self, device: Any = None) -> None:
        """Wait for the work of every stream of this runtime."""
        with self._lock:
            streams = list(self._streams)
        coverage = {stream: stream._coverage()[stream] for stream in streams}
        for stream in streams:
            with stream._lock:
                marker = stream._last
            if marker is not None:
                self._wait(marker)
        self._land(coverage)
        self._raise_errors()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    # Simulated tensors and the kernels writing them.

    def device_tensor(
        self, initial: torch.Tensor, label: str | None = None
    ) -> SimulatedDeviceTensor:
        """A device tensor holding a copy of ``initial``'s values; ``label`` names it in
        race reports (its host copies and what is computed from it carry it)."""
        data = initial.detach().clone()
        with torch._C.DisableTorchFunctionSubclass():
            data = data.as_subclass(torch.Tensor)  # a simulated initial becomes plain data
        return _wrap_tensor(data, self, label)

    def write_later(
        self, target: SimulatedDeviceTensor, values: torch.Tensor, delay_s: float
    ) -> None:
        """Queue on the current stream a kernel that sleeps ``delay_s``, then writes ``values``
        into ``target`` in place."""
        if not isinstance(target, SimulatedDeviceTensor) or target._runtime is not self:
            raise TypeError("write_later writes into a device tensor of this runtime")
        device_data = _plain(target)
        # Fixed at launch, as a kernel's inputs are: later changes to `values` don't leak in.
        payload = _plain(values).detach().clone()
        _check_broadcast(payload.shape, device_data.shape)

        def kernel() -> None:
            if not self._closed.wait(delay_s):  # close() cuts the sleep short
                device_data.copy_(payload)

        self.current_stream()._submit(kernel)

    def idle(self) -> bool:
        """True when every stream's queued work is done."""
        with self._lock:
            streams = list(self._streams)
        return all(stream.query() for stream in streams)

    def close(self) -> None:
        """Abandon queued work and stop the stream threads; idempotent, never hangs."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            streams = list(self._streams)
        threads = [stream._stop() for stream in streams]
        for thread in threads:
            if thread is not None:
                thread.join(_JOIN_S)

    # Internals shared with streams, events and tensors.

    def _register(self, stream: SimulatedStream) -> None:
        with self._lock:
            self._streams.append(stream)

    def _wait(self, marker: threading.Event) -> None:
        # Polls so that a wait whose work close() abandoned still returns.
        while not marker.wait(_POLL_S):
            if self._closed.is_set():
                return

    def _land(self, coverage: dict[SimulatedStream, int]) -> None:
        for stream, seq in coverage.items():
            stream._land(seq)

    def _note_early_read(self, copy: HostCopy) -> None:
        with self._lock:
            if copy.label not in self._early_reads:
                self._early_reads.append(copy.label)

    def early_reads(self) -> list[str]:
        """One line per host copy read before the wait it belongs to, in the order read.

        A ``.numpy()`` view aliases the buffer and is no read (:class:`InFlightHostTensor`):
        a copy never waited for is named by :meth:`copies_not_arrived` instead."""
        with self._lock:
            return [f"{label} read before its copy arrived" for label in self._early_reads]

    def copies_not_arrived(self) -> list[str]:
        """The labels of the host copies queued and not yet waited for, in queue order."""
        with self._lock:
            streams = list(self._streams)
        labels: list[str] = []
        for stream in streams:
            with stream._lock:
                labels += [c.label for _, c in stream._in_flight if c.label not in labels]
        return labels

    def _record_error(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)

    def _raise_errors(self) -> None:
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise RuntimeError(f"simulated {self.device_type} work failed") from errors[0]

    def _as_module(self) -> types.ModuleType:
        module = types.ModuleType(f"torch.{self.device_type}", "simulated device runtime")
        for name in _RUNTIME_NAMES:
            setattr(module, name, getattr(self, name))
        return module


# Attribute reads that need no device values, so must not wait for the device.  A property
# read reaches __torch_function__ as its getter (``Tensor.shape.__get__``).
_METADATA: frozenset[Any] = frozenset(
    [
        *(
            inspect.getattr_static(torch.Tensor, name).__get__
            for name in ("shape", "dtype", "ndim", "layout", "requires_grad")
        ),
        torch.Tensor.dim,
        torch.Tensor.size,
        torch.Tensor.stride,
        torch.Tensor.numel,
        torch.Tensor.element_size,
        torch.Tensor.__len__,
        torch.Tensor.is_contiguous,
    ]
)
# Blocking reads whose result is host data, not a tensor still on the device.
_HOST_READS: frozenset[Any] = frozenset(
    {torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.tolist, torch.Tensor.item}
)


_DEVICE_GETTER = inspect.getattr_static(torch.Tensor, "device").__get__
_IS_CUDA_GETTER = inspect.getattr_static(torch.Tensor, "is_cuda").__get__
_IS_CPU_GETTER = inspect.getattr_static(torch.Tensor, "is_cpu").__get__


class SimulatedDevice:
    """``tensor.device`` of a simulated tensor whose type torch cannot name (``npu``, ``tt``).

    Compares equal to ``"npu"``, ``"npu:0"`` and to another of its kind; ``.type`` and
    ``.index`` as on ``torch.device``.
    """

    def __init__(self, device_type: str) -> None:
        self.type = device_type
        self.index = 0

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type={self.type!r}, index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SimulatedDevice):
            return other.type == self.type
        return isinstance(other, str) and other in (self.type, str(self))

    def __hash__(self) -> int:
        return hash(self.type)


def _device_of(runtime: SimulatedRuntime) -> Any:
    """What ``tensor.device`` says for a tensor of ``runtime``: its device type, never cpu
    (so producers take their device path: ``to_cpu_nonblocking`` copies only off the CPU)."""
    try:
        return torch.device(runtime.device_type, 0)
    except RuntimeError:
        return SimulatedDevice(runtime.device_type)


class SimulatedDeviceTensor(torch.Tensor):
    """A tensor "on" a simulated device: its values are what that runtime's kernels wrote.

    ``_label`` names it in race reports (``logprobs.logprob_token_ids``); a tensor computed
    from labelled ones carries the first one's label.
    """

    _runtime: SimulatedRuntime
    _label: str | None = None

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in _METADATA:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        if func == _DEVICE_GETTER and isinstance(args[0], SimulatedDeviceTensor):
            return _device_of(args[0]._runtime)
        if func == _IS_CUDA_GETTER and isinstance(args[0], SimulatedDeviceTensor):
            return args[0]._runtime.device_type == "cuda"
        if func == _IS_CPU_GETTER and isinstance(args[0], SimulatedDeviceTensor):
            return False
        if func is torch.Tensor.get_device and isinstance(args[0], SimulatedDeviceTensor):
            return 0
        if func is torch.Tensor.copy_:
            host = _nonblocking_copy_into_host(args, kwargs)
            if host is not None:
                return host
        to_device: torch.device | None = None
        if func is torch.Tensor.to:
            to_device, dtype, non_blocking = _parse_to(args[1:], kwargs)
            if to_device is not None and to_device.type == "cpu" and non_blocking:
                return _nonblocking_to_host(args[0], dtype)
        runtimes = _runtimes_in((args, kwargs))
        if not runtimes:  # a simulated tensor where we don't look: nothing to wait for
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        for runtime in runtimes:
            runtime.synchronize()  # a blocking read waits for the device, as on hardware
        host_read = func in _HOST_READS or (to_device is not None and to_device.type == "cpu")
        # `.to("<simulated type>")`: already there; keep only the rest of the conversion.
        if (
            func is torch.Tensor.to
            and to_device is not None
            and not host_read
            and to_device.type == runtimes[0].device_type
        ):
            kwargs = {k: v for k, v in kwargs.items() if k != "device"}
            args = (args[0], *(a for a in args[1:] if not _names_device(a)))
        # Host reads get a snapshot, so their result never aliases device memory.
        originals: dict[int, torch.Tensor] = {}
        plain_args, plain_kwargs = _unwrap((args, kwargs), originals, snapshot=host_read)
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*plain_args, **plain_kwargs)
        if host_read:
            return result
        return _rewrap(result, originals, runtimes[0], _label_in((args, kwargs)))

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickled as its values: the runtime it belongs to does not travel.
        return _plain(self).clone().__reduce_ex__(protocol)


class _DeviceFactories(TorchFunctionMode):
    """:meth:`SimulatedRuntime.device_factories`: tensors made for the simulated device are
    made on the host and wrapped as that device's (their values there at once, as a
    factory's or a host-to-device copy's are by the time a later kernel reads them)."""

    def __init__(self, runtime: SimulatedRuntime) -> None:
        super().__init__()
        self._runtime = runtime

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if self._names_me(kwargs.get("device")):
            made = func(*args, **{**kwargs, "device": "cpu"})
            return self._wrapped(made)
        if (
            func is torch.Tensor.to
            and args
            and type(args[0]) is torch.Tensor
            and args[0].device.type == "cpu"
        ):
            target, dtype, _ = _parse_to(args[1:], kwargs)
            if target is not None and self._names_me(target):
                with torch._C.DisableTorchFunctionSubclass():
                    data = args[0].to(dtype=dtype or args[0].dtype, copy=True)
                return self._wrapped(data)
        return func(*args, **kwargs)

    def _names_me(self, device: Any) -> bool:
        if device is None:
            return False
        if isinstance(device, SimulatedDevice):
            return device.type == self._runtime.device_type
        if isinstance(device, torch.device):
            return device.type == self._runtime.device_type
        return isinstance(device, str) and device.split(":")[0] == self._runtime.device_type

    def _wrapped(self, made: Any) -> Any:
        if isinstance(made, torch.Tensor) and not isinstance(made, SimulatedDeviceTensor):
            return _wrap_tensor(_plain(made), self._runtime)
        return made


def _wrap_tensor(
    data: torch.Tensor, runtime: SimulatedRuntime, label: str | None = None
) -> SimulatedDeviceTensor:
    tensor = data.as_subclass(SimulatedDeviceTensor)
    tensor._runtime = runtime
    if label is not None:
        tensor._label = label
    return tensor


def _label_in(tree: Any) -> str | None:
    if isinstance(tree, SimulatedDeviceTensor):
        return tree._label
    if isinstance(tree, (list, tuple)):
        items: Any = tree
    elif isinstance(tree, dict):
        items = tree.values()
    else:
        return None
    for item in items:
        label = _label_in(item)
        if label is not None:
            return label
    return None


class HostCopy:
    """One non-blocking device-to-host copy: queued on a stream, visible to the host late.

    The host buffer holds sentinel values (:func:`sentinel_fill`) from the moment the
    copy is queued.  The stream reads the device values when it gets there (so a
    stream that did not wait for the one computing them reads stale ones); the host
    sees them only once it waited for that work: an event recorded after the copy, the
    stream, or the whole runtime.  So a read before the wait it belongs to sees the
    sentinels, on every run, and is named by the copy's label.
    """

    def __init__(self, label: str, host: torch.Tensor, source: torch.Tensor) -> None:
        self.label = label
        self.host = host  # plain, the destination's memory
        self._source = source  # plain, the device tensor's memory
        self._staged: torch.Tensor | None = None
        self.landed = False

    def stage(self) -> None:
        """Run on the stream: read the device values as they are at this point of its order."""
        with torch._C.DisableTorchFunctionSubclass():
            self._staged = self._source.to(dtype=self.host.dtype, copy=True)

    def stage_view(self) -> None:
        """:meth:`stage` for a runtime whose copies run inline: the device values as they
        are when the copy lands (no buffer the host would not have, where the dtypes
        match), which is the same values wherever nothing writes the source in between."""
        if self._source.dtype != self.host.dtype:
            self.stage()
            return
        self._staged = self._source

    def land(self) -> None:
        """Run on the host once it waited for the copy: the values appear in the buffer."""
        staged = self._staged
        if staged is not None:
            with torch._C.DisableTorchFunctionSubclass():
                self.host.copy_(staged)
        self.landed = True


def sentinel_fill(host: torch.Tensor, label: str) -> None:
    """Fill ``host`` with values no real copy of ``label`` holds: far out of range, one per label."""
    k = zlib.crc32(label.encode()) % 97
    dtype = host.dtype
    with torch._C.DisableTorchFunctionSubclass():
        if dtype == torch.bool:
            host.fill_(True)
        elif dtype.is_floating_point or dtype.is_complex:
            host.fill_(torch.finfo(dtype).min / 4 * (1 + k / 100))
        elif dtype.is_signed:
            host.fill_(torch.iinfo(dtype).min + 1 + k)
        else:
            host.fill_(torch.iinfo(dtype).max - k)


#: Host-tensor calls whose result aliases the buffer without reading it.
_SHARES_MEMORY: frozenset[Any] = frozenset(
    {torch.Tensor.numpy, torch.Tensor.data_ptr, torch.Tensor.untyped_storage}
)


class InFlightHostTensor(torch.Tensor):
    """The host tensor ``device_tensor.to("cpu", non_blocking=True)`` returns.

    Until its copy lands (:class:`HostCopy`), reading its values is noted as an early
    read of the copy's label (and yields the sentinels); taking a view of it (a slice,
    a reshape) is not a read, and the view shares its copy.  Once landed it is a plain
    host tensor: what it computes is plain, and it pickles as one.
    """

    _copy: HostCopy
    _runtime: SimulatedRuntime

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
        if func in _METADATA or func in (_DEVICE_GETTER, _IS_CUDA_GETTER, _IS_CPU_GETTER):
            return result
        if func in _SHARES_MEMORY:
            # The array aliases the buffer: read after the wait it is right, as on hardware
            # (read before, it holds the sentinels, and the values compared show it).
            return result
        pending = [t for t in _tensors_in((args, kwargs)) if isinstance(t, InFlightHostTensor)]
        pending = [t for t in pending if not t._copy.landed]
        if not pending:
            return _plain_result(result)
        # A view of an in-flight buffer is the buffer still; anything else read its values.
        first = pending[0]
        if len(pending) == 1:
            if isinstance(result, torch.Tensor) and _shares_memory(result, first._copy.host):
                return _in_flight(result, first._copy, first._runtime)
            # Its rows one by one (iterating it, unbind, split): views too, not a read.
            parts = list(result) if func is torch.Tensor.__iter__ else result
            if _all_views_of(parts, first._copy.host):
                views = [_in_flight(part, first._copy, first._runtime) for part in parts]
                return iter(views) if func is torch.Tensor.__iter__ else type(result)(views)
        for tensor in pending:
            tensor._runtime._note_early_read(tensor._copy)
        return _plain_result(result)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return _plain(self).clone().__reduce_ex__(protocol)


def _in_flight(data: torch.Tensor, copy: HostCopy, runtime: SimulatedRuntime) -> torch.Tensor:
    with torch._C.DisableTorchFunctionSubclass():
        tensor = _plain(data).as_subclass(InFlightHostTensor)
    tensor._copy = copy
    tensor._runtime = runtime
    return tensor


def _all_views_of(parts: Any, host: torch.Tensor) -> bool:
    """True when ``parts`` is a list or tuple of tensors, each sharing ``host``'s memory."""
    return (
        isinstance(parts, (list, tuple))
        and len(parts) > 0
        and all(isinstance(p, torch.Tensor) and _shares_memory(p, host) for p in parts)
    )


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    with torch._C.DisableTorchFunctionSubclass():
        try:
            return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
        except (RuntimeError, NotImplementedError):
            return False


def _plain_result(result: Any) -> Any:
    if isinstance(result, InFlightHostTensor):
        return _plain(result)
    if isinstance(result, (list, tuple)) and any(isinstance(r, InFlightHostTensor) for r in result):
        return type(result)(_plain_result(r) for r in result)
    return result


def _tensors_in(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in _tensors_in(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in _tensors_in(item)]
    return []


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    """A plain tensor sharing ``tensor``'s memory: torch functions on it don't come back here."""
    if type(tensor) is torch.Tensor:
        return tensor
    with torch._C.DisableTorchFunctionSubclass():
        return tensor.as_subclass(torch.Tensor)


def _check_broadcast(source: torch.Size, target: torch.Size) -> None:
    # Checked when queued: an error in a stream thread would surface far from its cause.
    # By hand: torch.broadcast_shapes imports torch._refs on first use (0.6 s).
    fits = len(source) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(source), reversed(target), strict=False)
    )
    if not fits:
        raise ValueError(f"cannot copy values of shape {tuple(source)} into {tuple(target)}")


def _parse_to(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[torch.device | None, torch.dtype | None, bool]:
    """``Tensor.to``'s target device, dtype and non_blocking, whichever form they came in."""
    if args and isinstance(args[0], SimulatedDeviceTensor):
        return None, None, False  # `.to(other_device_tensor)`: stays on the device
    try:
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(
            *args, **{k: v for k, v in kwargs.items() if k != "copy"}
        )
    except (TypeError, RuntimeError):
        return None, None, False  # let the real call report the bad arguments
    return device, dtype, bool(non_blocking)


def _names_device(arg: Any) -> bool:
    return isinstance(arg, (str, torch.device)) or (
        isinstance(arg, int) and not isinstance(arg, bool)
    )


def _nonblocking_to_host(source: SimulatedDeviceTensor, dtype: torch.dtype | None) -> torch.Tensor:
    """The host buffer of ``source.to("cpu", non_blocking=True)``: stale now, right once the
    copy queued on the current stream ran."""
    device_data = _plain(source)
    runtime = source._runtime
    label = source._label or "a device tensor"
    with torch._C.DisableTorchFunctionSubclass():
        host = torch.empty_like(device_data, dtype=dtype or device_data.dtype, device="cpu")
    sentinel_fill(host, label)
    copy = HostCopy(label, host, device_data)
    runtime.current_stream()._submit_copy(copy)
    return _in_flight(host, copy, runtime)


def _nonblocking_copy_into_host(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor | None:
    """``host.copy_(device, non_blocking=True)`` queued on the current stream; None for any
    other copy_, which is a blocking one."""
    if len(args) < 2:
        return None
    host, source = args[0], args[1]
    non_blocking = kwargs.get("non_blocking", args[2] if len(args) > 2 else False)
    if (
        not non_blocking
        or isinstance(host, SimulatedDeviceTensor)
        or not isinstance(source, SimulatedDeviceTensor)
    ):
        return None
    device_data = _plain(source)
    _check_broadcast(device_data.shape, host.shape)
    label = source._label or "a device tensor"
    plain_host = _plain(host)
    sentinel_fill(plain_host, label)
    with torch._C.DisableTorchFunctionSubclass():
        expanded = device_data.expand(plain_host.shape)
    source._runtime.current_stream()._submit_copy(HostCopy(label, plain_host, expanded))
    return host


def _runtimes_in(tree: Any) -> list[SimulatedRuntime]:
    found: list[SimulatedRuntime] = []

    def visit(node: Any) -> None:
        if isinstance(node, SimulatedDeviceTensor):
            if node._runtime not in found:
                found.append(node._runtime)
        elif isinstance(node, (list, tuple)):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            for item in node.values():
                visit(item)

    visit(tree)
    return found


def _unwrap(tree: Any, originals: dict[int, torch.Tensor], snapshot: bool) -> Any:
    """``tree`` with each simulated tensor as plain data: a view, or a copy when ``snapshot``.

    ``originals`` maps each tensor passed on to the caller's, so that an in-place op (which
    returns its input) hands back the caller's object.
    """
    if isinstance(tree, SimulatedDeviceTensor):
        data = _plain(tree)
        if snapshot:
            with torch._C.DisableTorchFunctionSubclass():
                return data.clone()
        originals[id(data)] = tree
        return data
    if isinstance(tree, torch.Tensor):
        originals[id(tree)] = tree
        return tree
    if isinstance(tree, (list, tuple)):
        return type(tree)(_unwrap(item, originals, snapshot) for item in tree)
    if isinstance(tree, dict):
        return {key: _unwrap(item, originals, snapshot) for key, item in tree.items()}
    return tree


def _rewrap(
    result: Any,
    originals: dict[int, torch.Tensor],
    runtime: SimulatedRuntime,
    label: str | None = None,
) -> Any:
    """Tensors computed from device tensors stay on the device."""
    if isinstance(result, torch.Tensor):
        if id(result) in originals:
            return originals[id(result)]
        return _wrap_tensor(result, runtime, label)
    if isinstance(result, (list, tuple)):
        # torch.return_types are built from one sequence, like list and tuple.
        return type(result)(_rewrap(item, originals, runtime, label) for item in result)
    return result


@contextmanager
def installed(runtime: SimulatedRuntime) -> Iterator[SimulatedRuntime]:
    """Install ``runtime`` as ``torch.<device_type>`` (and ``torch.Event`` / ``torch.Stream``
    as its classes) for the with-block, restoring exactly what was there, then close it.

    ``torch.cuda`` stays the same module (code holds references to it): only its runtime
    attributes are patched.  Any other type gets a module of its own at ``torch.<type>``.
    """
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        # vars(), not getattr(): an attribute a module's __getattr__ makes up is not there.
        saved.append((owner, name, vars(owner).get(name, _MISSING)))
        setattr(owner, name, value)

    try:
        if runtime.device_type == "cuda":
            for name in _RUNTIME_NAMES:
                patch(torch.cuda, name, getattr(runtime, name))
        else:
            patch(torch, runtime.device_type, runtime._as_module())
        patch(torch, "Event", runtime.Event)
        patch(torch, "Stream", runtime.Stream)
        yield runtime
    finally:
        for owner, name, previous in reversed(saved):
            if previous is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, previous)
        runtime.close()
