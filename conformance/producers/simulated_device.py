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
  :meth:`SimulatedRuntime.copies_not_arrived`).
* A producer's own device work on these tensors (elementwise ops, reductions, ``cat``,
  ``to(dtype)``, indexing into a new tensor, in-place writes) is queued on the current
  stream, as on hardware: its result is a device tensor whose values are there once that
  stream got to it.  Only host reads (``tolist``, ``item``, ``.cpu()``, ``numpy()``,
  printing, ``bool()``, a shape that depends on the values) wait, for the whole
  runtime.  A copy or kernel queued on a stream ordered after none of the work still
  computing its input (no ``wait_stream``/``wait_event`` covering it, no host wait) is
  named when queued (:meth:`SimulatedRuntime.unordered_reads`) and reads none of that
  work's values, however fast the threads ran: on hardware it would read them unfinished.
* :func:`installed` puts the runtime in place of ``torch.<device>`` (and ``torch.Event``
  / ``torch.Stream``) for a with-block, so that unchanged producer code drives it.

The simulated tensors live in CPU memory, but answer ``device``, ``is_cpu``, ``is_cuda``
and ``get_device()`` as tensors of the simulated type (a :class:`SimulatedDevice` where
torch cannot name the type), so producers take their device path.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import queue
import sys
import threading
import types
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from conformance.source_paths import module_path

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
    "StreamContext",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "synchronize",
    "is_available",
    "device_count",
    "current_device",
    "device",
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
        self.priority = priority
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
        #: What race reports call it; the checks name the streams of their steps.
        self.name: str | None = None if self._runtime._streams else "the default stream"
        self._site = _caller_site()
        self._runtime._register(self)

    # What torch's streams tell of themselves, for code that logs or keys by them.

    @property
    def device(self) -> Any:
        return _device_of(self._runtime)

    @property
    def device_index(self) -> int:
        return 0

    @property
    def stream_id(self) -> int:
        return id(self)

    cuda_stream = stream_id
    native_handle = stream_id

    def __enter__(self) -> SimulatedStream:
        """``with stream:``, as ``torch.Stream``: the current stream within the block."""
        entered = self._runtime._local.__dict__.setdefault("entered", [])
        entered.append(self._runtime.current_stream())
        self._runtime.set_stream(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._runtime._local.stream = self._runtime._local.entered.pop()

    def describe(self) -> str:
        """``the default stream``, ``the stream made at worker.py:57``: for race reports."""
        if self.name is not None:
            return self.name
        return f"the stream made at {self._site}" if self._site else "a stream"

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
        return self._enqueue(work)[0]

    def _enqueue(self, work: Callable[[], object]) -> tuple[threading.Event, int]:
        """:meth:`_submit`, also giving the job's number on this stream."""
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
            seq = self._seq
        return done, seq

    def _run_inline(
        self, work: Callable[[], object], done: threading.Event
    ) -> tuple[threading.Event, int]:
        """Run ``work`` now, on the caller's thread, after the work queued before it."""
        runtime = self._runtime
        with self._lock:
            if runtime._closed.is_set():
                raise RuntimeError(f"simulated {runtime.device_type} runtime is closed")
            before = self._last
            self._last = done
            self._seq += 1
            seq = self._seq
        if before is not None:
            before.wait()
        try:
            work()
        except BaseException as error:  # surfaces at the next synchronize, as threaded
            runtime._record_error(error)
        finally:
            done.set()
        return done, seq

    def _submit_copy(self, copy: HostCopy) -> None:
        """Queue ``copy``: the stream reads the device values in its order; the host sees
        them only once it waited for work queued at or after it."""
        with self._lock:
            seq = self._seq + 1
            self._in_flight.append((seq, copy))
        copy.stream, copy.seq = self, seq
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
        self._early_read_details: dict[str, str] = {}  # label: where it was read, copied
        # Device work not known done: per device memory (its storage's address), the
        # writes queued into it (:class:`_Write`), so that a read on a stream ordered
        # after none of them is seen when it is queued, whatever the threads' timing.
        self._writes: dict[int, list[_Write]] = {}
        # What the host waited for, per stream (job numbers): work it covers is done.
        self._host_known: dict[SimulatedStream, int] = {}
        # Reads of unfinished values: (reading stream, by what, writing stream): names.
        self._unordered: dict[tuple[str, str, str], list[str]] = {}
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

    def StreamContext(self, stream: SimulatedStream | None) -> Any:
        """``torch.cuda.StreamContext(stream)``: :meth:`stream` as a class torch names."""
        return self.stream(stream)

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

    def device(self, device: Any = None) -> contextlib.AbstractContextManager[None]:
        """``torch.<type>.device(...)``: the one simulated device, so a no-op."""
        return contextlib.nullcontext()

    # Simulated tensors and the kernels writing them.

    def device_tensor(
        self, initial: torch.Tensor, label: str | None = None
    ) -> SimulatedDeviceTensor:
        """A device tensor holding a copy of ``initial``'s values; ``label`` names it in
        race reports (its host copies and what is computed from it carry it)."""
        data = initial.detach().clone()
        with torch._C.DisableTorchFunctionSubclass():
            data = data.as_subclass(torch.Tensor)  # a simulated initial becomes plain data
        self._forget_writes(data)
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

        stream = self.current_stream()
        _, seq = stream._enqueue(kernel)
        self._note_write(device_data, _Write(stream, seq, fresh=False, site=None))

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
        with self._lock:
            for stream, seq in coverage.items():
                if seq > self._host_known.get(stream, 0):
                    self._host_known[stream] = seq
        for stream, seq in coverage.items():
            stream._land(seq)

    def _note_early_read(self, copy: HostCopy, read: Any = None) -> None:
        if _holds_nothing(read):
            return  # no value read, so none unfinished: hardware reads nothing either
        with self._lock:
            known = copy.label in self._early_reads
        if known:
            return
        # Looked up outside the lock: the producer's frames, for its own names.
        own = _producer_name(read, copy)
        detail = copy.describe_early_read(_caller_site(), own, _covering_event(copy))
        with self._lock:
            if copy.label not in self._early_reads:
                self._early_reads.append(copy.label)
                self._early_read_details[copy.label] = detail

    def early_read_details(self) -> list[str]:
        """:meth:`early_reads`, each saying where the producer read it, where its copy
        started and what it should have waited for."""
        with self._lock:
            return [self._early_read_details[label] for label in self._early_reads]

    # Device work queued and not known done: who reads it before it ran.

    def _note_write(self, data: torch.Tensor, write: _Write) -> None:
        """``write`` (a kernel queued on a stream) writes ``data``'s memory; ``fresh``
        writes make that memory, so the writes queued before into it are history."""
        key = _storage_key(data)
        if key is None:
            return
        with self._lock:
            if write.fresh:
                self._writes[key] = [write]
            else:
                self._writes.setdefault(key, []).append(write)

    def _forget_writes(self, data: torch.Tensor) -> None:
        """``data``'s memory holds finished values (made on the host, as factories are)."""
        key = _storage_key(data)
        if key is not None:
            with self._lock:
                self._writes.pop(key, None)

    def _unfinished_writes(self, data: torch.Tensor, stream: SimulatedStream) -> list[_Write]:
        """The writes into ``data``'s memory that work queued on ``stream`` now is not
        ordered after: neither queued on it, nor waited for by it, nor by the host."""
        key = _storage_key(data)
        if key is None:
            return []
        clock = stream._coverage()
        with self._lock:
            writes = self._writes.get(key, [])
            known = dict(self._host_known)
            pending = [w for w in writes if known.get(w.stream, 0) < w.seq]
            if pending:
                self._writes[key] = pending
            else:
                self._writes.pop(key, None)
        return [w for w in pending if w.stream is not stream and clock.get(w.stream, 0) < w.seq]

    def _check_read(
        self, data: torch.Tensor, label: str, stream: SimulatedStream, what: str
    ) -> bool:
        """Note a read of ``data`` (``label``) by ``what`` queued on ``stream`` that is
        ordered after none of the work still computing it; True when that work made its
        memory (so the values read are none of that work's: the read gets zeros)."""
        unfinished = self._unfinished_writes(data, stream)
        if not unfinished:
            return False
        write = unfinished[-1]
        name = label
        if write.site:
            at = f"at {write.site}"
            name = f"{label[:-1]} {at})" if label.endswith(")") else f"{label} (computed {at})"
        key = (stream.describe(), what, write.stream.describe())
        with self._lock:
            names = self._unordered.setdefault(key, [])
            if name not in names:
                names.append(name)
        return any(w.fresh for w in unfinished)

    def unordered_reads(self) -> list[str]:
        """One line per stream that read device values (by copies or kernels) it was
        ordered after none of the work computing: on hardware such a read finds unfinished
        values, however fast that work was here.  Each names the values, the work and
        the stream to wait for."""
        with self._lock:
            found = {key: list(names) for key, names in self._unordered.items()}
        return [
            f"{', '.join(names)} read by {what} on {reader} before the work computing "
            f"{'them' if len(names) > 1 else 'it'} on {writer} was done ({reader} waited "
            f"for none of it): make {reader} wait for {writer} first (wait_stream, or "
            "wait_event on an event recorded after that work)"
            for (reader, what, writer), names in found.items()
        ]

    def early_reads(self) -> list[str]:
        """One line per host copy read before the wait it belongs to, in the order read.

        A ``.numpy()`` view aliases the buffer and is no read (:class:`InFlightHostTensor`):
        a copy never waited for is named by :meth:`copies_not_arrived` instead."""
        with self._lock:
            return [f"{label} read before its copy arrived" for label in self._early_reads]

    def copies_not_arrived(self) -> list[str]:
        """The labels of the host copies queued and not yet waited for, in queue order."""
        return [copy.label for copy in self._copies_not_arrived()]

    def unwaited_copies(self, holder: Any = None) -> list[tuple[str, str, str | None]]:
        """``(label, line, event)`` per host copy queued and not yet waited for: the line
        names it by ``holder``'s attribute holding it (``holder``: the async output handed
        over), ``event`` is ``holder``'s event recorded after it (what to wait for), if any."""
        owners = _objects_held(holder)
        return [
            (
                copy.label,
                f"{_attribute_holding(owners, None, copy) or copy.shown}: get_output() "
                "returned before its copy arrived (no wait covered it)",
                _event_covering(owners, copy),
            )
            for copy in self._copies_not_arrived()
        ]

    def _copies_not_arrived(self) -> list[HostCopy]:
        with self._lock:
            streams = list(self._streams)
        copies: list[HostCopy] = []
        for stream in streams:
            with stream._lock:
                labels = {c.label for c in copies}
                copies += [c for _, c in stream._in_flight if c.label not in labels]
        return copies

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


#: Device memory is no numpy array: torch raises (``numpy(force=True)`` copies first).
_TO_NUMPY: frozenset[Any] = frozenset(
    [inspect.getattr_static(torch.Tensor, name) for name in ("numpy", "__array__")]
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
    #: Made by the producer's device work (not by the runner's step).
    _computed: bool = False

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
        if (
            func in _TO_NUMPY
            and isinstance(args[0], SimulatedDeviceTensor)
            and not (func is torch.Tensor.numpy and kwargs.get("force"))
        ):
            raise TypeError(
                f"can't convert {args[0].device} device type tensor to numpy. Use "
                "Tensor.cpu() to copy the tensor to host memory first."
            )
        elsewhere = _made_elsewhere(func, args, kwargs)
        if elsewhere is not _NOT_ELSEWHERE:
            return elsewhere
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
        host_read = (
            func in _HOST_READS
            or (to_device is not None and to_device.type == "cpu")
            or _names_the_host(kwargs.get("device"))  # x.new_tensor(data, device="cpu")
        )
        # `.to("<simulated type>")`: already there; keep only the rest of the conversion.
        if (
            func is torch.Tensor.to
            and to_device is not None
            and not host_read
            and to_device.type == runtimes[0].device_type
        ):
            kwargs = {k: v for k, v in kwargs.items() if k != "device"}
            args = (args[0], *(a for a in args[1:] if not _names_device(a)))
        if not host_read:
            # Device work: queued on the current stream, as on hardware.
            queued = _queue_device_work(runtimes[0], func, args, kwargs)
            if queued is not _NOT_QUEUED:
                return queued
        _wait_as_a_blocking_read(func, (args, kwargs))
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


def _wait_as_a_blocking_read(func: Any, tree: Any) -> None:
    """What a blocking read (``.item()``, ``.cpu()``, ``.tolist()``, a data-dependent op)
    waits for on hardware: the current stream's work, and no other stream's.  A device
    tensor still being computed on a stream the current one never waited for is read
    unfinished there: named by ``unordered_reads``."""
    what = f"a blocking read ({getattr(func, '__name__', 'a torch call')})"
    streams: set[SimulatedStream] = set()
    for leaf in _leaves(tree):
        if isinstance(leaf, SimulatedDeviceTensor):
            runtime = leaf._runtime
            stream = runtime.current_stream()
            runtime._check_read(_plain(leaf), leaf._label or "a device tensor", stream, what)
            streams.add(stream)
    for stream in streams:
        stream.synchronize()


def _recording_streams(record_stream: Callable[..., Any], runtime: SimulatedRuntime) -> Any:
    """``Tensor.record_stream`` that takes ``runtime``'s streams (torch's own parses its
    argument as a ``torch.Stream`` before any ``__torch_function__`` sees the call).

    On hardware it tells the caching allocator that the stream uses the tensor's memory,
    so the memory is not handed out again before the work queued there so far is done.
    The simulated device's memory is host memory freed only when no reference to it is
    left, never reused early: nothing to record.  One of the runtime's streams with a
    tensor not on its device is refused, as torch refuses a stream of another device."""

    @functools.wraps(record_stream)
    def recording(tensor: torch.Tensor, stream: Any) -> None:
        if not isinstance(stream, SimulatedStream) or stream._runtime is not runtime:
            return record_stream(tensor, stream)
        if not isinstance(tensor, SimulatedDeviceTensor) or tensor._runtime is not runtime:
            raise RuntimeError(
                f"record_stream(): the tensor is on {tensor.device}, the stream is a "
                f"{runtime.device_type} stream"
            )
        return None

    return recording


_NOT_QUEUED = object()
_NOT_ELSEWHERE = object()


def _made_elsewhere(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``torch.empty_like(x, device="cpu")``, ``x.new_zeros(n, device="cpu")``: a new tensor
    shaped like a device tensor, on another device (the host's staging buffer of a copy).
    It reads none of the device values: made at once, a tensor of that device.
    ``_NOT_ELSEWHERE`` for any other call, and for one that reads device values:
    ``new_tensor`` copies its data, and a device tensor past the first argument is data
    (those read as any host read does, waiting first)."""
    name = getattr(func, "__name__", "")
    device = kwargs.get("device")
    if device is None or not (name.endswith("_like") or name.startswith("new_")):
        return _NOT_ELSEWHERE
    if name == "new_tensor" or _runtimes_in((*args[1:], *kwargs.values())):
        return _NOT_ELSEWHERE
    runtimes = _runtimes_in(args[:1])
    kind = _type_named(device)
    if not runtimes or kind is None or kind == runtimes[0].device_type:
        return _NOT_ELSEWHERE
    plain = tuple(_plain(a) if isinstance(a, SimulatedDeviceTensor) else a for a in args)
    with torch._C.DisableTorchFunctionSubclass():
        return func(*plain, **kwargs)


#: Calls that read no device values and whose result aliases the tensor (or is no tensor
#: data at all): they run at once, wait for nothing and queue nothing.
_NO_READ: frozenset[Any] = frozenset(
    {
        torch.Tensor.__hash__,
        torch.Tensor.data_ptr,
        torch.Tensor.untyped_storage,
        torch.Tensor.storage_offset,
        torch.Tensor.is_floating_point,
        torch.Tensor.is_complex,
        torch.Tensor.detach,
        torch.Tensor.requires_grad_,
        torch.Tensor.retain_grad,
    }
)
#: In-place operators whose name does not end in ``_``.
_IN_PLACE_DUNDERS = frozenset(
    f"__i{name}__"
    for name in (
        *("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow"),
        *("lshift", "rshift", "and", "or", "xor"),
    )
) | {"__setitem__"}


def _queue_device_work(
    runtime: SimulatedRuntime, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``func`` on device tensors as hardware runs it: a view at once (it reads no
    values), anything else as a kernel queued on the current stream, its result a device
    tensor whose values are there once that kernel ran.  ``_NOT_QUEUED`` where hardware
    would wait on the host too: a result that is host data (``bool()``, ``repr``,
    ``torch.equal``), one whose shape depends on the values (boolean indexing,
    ``nonzero``), a host tensor written from the device; and where the arguments are
    wrong (the blocking path raises torch's own error, at the producer's line)."""
    if func in _NO_READ:
        return _run_now(runtime, func, args, kwargs)
    if func is torch.Tensor.__iter__:
        # Iterating a device tensor gives its rows, device tensors still (views).
        return iter(_run_now(runtime, torch.Tensor.unbind, (args[0],), {}))
    targets = _in_place_targets(func, args, kwargs)
    if targets is None or _depends_on_values(func, args):
        return _NOT_QUEUED
    # The result's shape, dtype and aliasing, from a rehearsal on zeros of the same
    # layouts (meta tensors would say it too, but their first use costs a second of
    # imports): no device value is read.
    dummies: dict[int, Any] = {}
    try:
        with torch._C.DisableTorchFunctionSubclass():
            dummy_args, dummy_kwargs = _as_dummies((args, kwargs), dummies)
            shaped = func(*dummy_args, **dummy_kwargs)
    except Exception:  # wrong arguments: the blocking path raises torch's own error
        return _NOT_QUEUED
    leaves = _leaves(shaped)
    if any(leaf is not None and not isinstance(leaf, torch.Tensor) for leaf in leaves):
        return _NOT_QUEUED  # host data: a host read
    if not targets:
        if id(shaped) in dummies:  # `.to(its own dtype)`, `.contiguous()`: itself
            return dummies[id(shaped)][0]
        if any(_aliases_any(leaf, dummies) for leaf in leaves):
            return _run_now(runtime, func, args, kwargs)  # a view: it reads no values
    stream = runtime.current_stream()
    site = _caller_site()
    name = getattr(func, "__name__", "device work")
    label = _label_in((args, kwargs)) or "a device tensor"
    target_ids = {id(t) for t in targets}
    zeroed: set[int] = set()
    for tensor in _tensors_in((args, kwargs)):
        if isinstance(tensor, SimulatedDeviceTensor):
            data = _plain(tensor)
            read_by = f"{name} queued at {site}" if site else name
            tensor_label = _display_name(tensor, tensor._label or label)
            unfinished = runtime._check_read(data, tensor_label, stream, read_by)
            if unfinished and id(tensor) not in target_ids:
                zeroed.add(id(tensor))
    kernel_args, kernel_kwargs = _kernel_inputs((args, kwargs), zeroed)
    if targets:
        outputs: list[torch.Tensor] = []
    else:
        outputs = [_fresh_like(leaf) for leaf in leaves if isinstance(leaf, torch.Tensor)]

    def kernel() -> None:
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*kernel_args, **kernel_kwargs)
            if targets:
                return  # written in place, into the targets' own memory
            made = [leaf for leaf in _leaves(result) if isinstance(leaf, torch.Tensor)]
            for output, value in zip(outputs, made, strict=True):
                output.copy_(value)

    _, seq = stream._enqueue(kernel)
    for target in targets:
        runtime._note_write(_plain(target), _Write(stream, seq, fresh=False, site=site))
    for output in outputs:
        runtime._note_write(output, _Write(stream, seq, fresh=True, site=site))
    if targets:
        if shaped is None:
            return None
        if id(shaped) in dummies:
            return dummies[id(shaped)][0]
        return targets[0]
    made = iter(outputs)
    return _rebuild(shaped, lambda _: _computed(_wrap_tensor(next(made), runtime, label)))


def _computed(tensor: SimulatedDeviceTensor) -> SimulatedDeviceTensor:
    tensor._computed = True
    return tensor


def _run_now(
    runtime: SimulatedRuntime, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``func`` on the device tensors' memory, now: for calls that read no values."""
    originals: dict[int, torch.Tensor] = {}
    plain_args, plain_kwargs = _unwrap((args, kwargs), originals, snapshot=False)
    with torch._C.DisableTorchFunctionSubclass():
        result = func(*plain_args, **plain_kwargs)
    return _rewrap(result, originals, runtime, _label_in((args, kwargs)))


def _in_place_targets(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[torch.Tensor] | None:
    """The tensors ``func`` writes into (``out=``, ``x.add_()``, ``x[i] = v``); None where
    one is a host tensor (written from the device, that is a host read)."""
    name = getattr(func, "__name__", "")
    targets = _tensors_in(kwargs.get("out"))
    in_place = name in _IN_PLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))
    if in_place and args and isinstance(args[0], torch.Tensor):
        targets.append(args[0])
    if any(not isinstance(t, SimulatedDeviceTensor) for t in targets):
        return None
    return targets


#: Calls whose result's shape depends on the values (hardware waits for them too).
_DATA_DEPENDENT: frozenset[Any] = frozenset(
    {
        torch.nonzero,
        torch.Tensor.nonzero,
        torch.argwhere,
        torch.Tensor.argwhere,
        torch.masked_select,
        torch.Tensor.masked_select,
        torch.unique,
        torch.Tensor.unique,
        torch.unique_consecutive,
        torch.Tensor.unique_consecutive,
        torch.repeat_interleave,
        torch.Tensor.repeat_interleave,
        torch.bincount,
        torch.Tensor.bincount,
    }
)


def _depends_on_values(func: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``func``'s result has a shape only the values say: boolean indexing too."""
    if func in _DATA_DEPENDENT or (func is torch.where and len(args) == 1):
        return True
    if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__):
        index = args[1] if len(args) > 1 else None
        return any(t.dtype in (torch.bool, torch.uint8) for t in _tensors_in(index))
    return False


def _as_dummies(tree: Any, dummies: dict[int, Any]) -> Any:
    """``tree`` with every tensor zeros of its shape, dtype and strides, on the host."""
    if isinstance(tree, torch.Tensor):
        size, stride = tree.size(), tree.stride()
        extent = 1 + sum((n - 1) * st for n, st in zip(size, stride, strict=True))
        extent = extent if all(size) else 0
        dummy = torch.zeros(extent, dtype=tree.dtype).as_strided(size, stride)
        dummies[id(dummy)] = (tree, dummy)  # kept alive, so that its id stays its own
        return dummy
    if isinstance(tree, (list, tuple)):
        return type(tree)(_as_dummies(item, dummies) for item in tree)
    if isinstance(tree, dict):
        return {key: _as_dummies(item, dummies) for key, item in tree.items()}
    return tree


def _aliases_any(leaf: Any, dummies: dict[int, Any]) -> bool:
    if not isinstance(leaf, torch.Tensor):
        return False
    key = _storage_key(leaf)
    return key is not None and any(_storage_key(d) == key for _, d in dummies.values())


def _kernel_inputs(tree: Any, zeroed: set[int]) -> Any:
    """What a kernel reads: device memory by reference (read when it runs; zeros for a
    tensor whose computing work this stream never waited for), host tensors as they are
    now (fixed at launch, as a kernel's host inputs are)."""
    if isinstance(tree, SimulatedDeviceTensor):
        data = _plain(tree)
        if id(tree) in zeroed:
            with torch._C.DisableTorchFunctionSubclass():
                return torch.zeros_like(data)
        return data
    if isinstance(tree, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            return _plain(tree).clone()
    if isinstance(tree, (list, tuple)):
        return type(tree)(_kernel_inputs(item, zeroed) for item in tree)
    if isinstance(tree, dict):
        return {key: _kernel_inputs(item, zeroed) for key, item in tree.items()}
    return tree


def _leaves(tree: Any) -> list[Any]:
    """What ``tree`` holds below its lists, tuples and dicts (an op's result, a call's
    arguments), in order."""
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]


def _rebuild(result: Any, make: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(result, torch.Tensor):
        return make(result)
    if isinstance(result, (list, tuple)):
        # torch.return_types are built from one sequence, like list and tuple.
        return type(result)(_rebuild(item, make) for item in result)
    return result


def _fresh_like(meta: torch.Tensor) -> torch.Tensor:
    """Host memory for a kernel's result of ``meta``'s shape: zeros until the kernel ran."""
    if 0 in meta.stride() and meta.numel() > 1:
        return torch.zeros(meta.size(), dtype=meta.dtype)
    return torch.empty_strided(meta.size(), meta.stride(), dtype=meta.dtype).zero_()


#: torch's own, kept before any runtime is installed: an installed cuda runtime says it is.
_CUDA_IS_AVAILABLE = torch.cuda.is_available


@functools.cache
def _pins_host_memory() -> bool:
    """Whether this torch can pin host memory (a CPU-only build has no allocator for it).
    Asked on first need, never at import: asking initialises the CUDA driver, and a
    process that did so cannot use CUDA in the children it forks (asv's forkserver
    imports this module before it forks each benchmark)."""
    return bool(_CUDA_IS_AVAILABLE())


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
        if func in _FROM_DATA and args and isinstance(args[0], SimulatedDeviceTensor):
            made = _from_device_data(func, args[0], args[1:], kwargs)
            if made is not None:
                return made
        pinning = kwargs.get("pin_memory") or func is torch.Tensor.pin_memory
        if pinning and not _pins_host_memory():
            # Pinned memory is the copy engine's fast path on hardware; the simulated
            # device reads any host memory, and a CPU-only torch has no pinned allocator.
            if func is torch.Tensor.pin_memory:
                return args[0].clone()
            kwargs = {**kwargs, "pin_memory": False}
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
        return _names_runtime(device, self._runtime)

    def _wrapped(self, made: Any) -> Any:
        if isinstance(made, torch.Tensor) and not isinstance(made, SimulatedDeviceTensor):
            self._runtime._forget_writes(_plain(made))
            return _wrap_tensor(_plain(made), self._runtime)
        return made


#: Factories whose data may be a tensor: torch reads a tensor's memory there without
#: asking it, so a device tensor would be read at once, however far its device lags.
_FROM_DATA = frozenset({torch.tensor, torch.as_tensor, torch.asarray})


def _from_device_data(
    func: Any, tensor: SimulatedDeviceTensor, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor | None:
    """``torch.tensor(t)``, ``torch.as_tensor(t, device="cpu")``, ... of a device tensor
    as hardware does them: a copy queued on the device, or onto the host a blocking one
    (waiting for the device first).  None for a call it does not read so (another
    device named, arguments it does not know): torch's own then."""
    if args or not set(kwargs) <= {"dtype", "device", "copy", "requires_grad", "pin_memory"}:
        return None  # torch's own says what is wrong with the call
    device = kwargs.get("device")
    to_host = _names_the_host(device)
    if device is not None and not to_host and not _names_runtime(device, tensor._runtime):
        return None
    copy = func is torch.tensor or bool(kwargs.get("copy"))
    dtype = kwargs.get("dtype") or tensor.dtype
    if not (to_host or copy or kwargs.get("requires_grad")) and dtype == tensor.dtype:
        return tensor  # as torch's own: the same tensor, on its device
    source = tensor.detach()
    made = source.to("cpu", dtype, copy=copy) if to_host else source.to(dtype, copy=copy)
    if kwargs.get("requires_grad"):
        made.requires_grad_(True)
    return made


def _names_runtime(device: Any, runtime: SimulatedRuntime) -> bool:
    return _type_named(device) == runtime.device_type


def _type_named(device: Any) -> str | None:
    """The device type a ``device=`` argument names (``"npu:0"``, a ``torch.device``, a
    :class:`SimulatedDevice`); None for none or an index."""
    if isinstance(device, str):
        return device.split(":")[0]
    return device.type if isinstance(device, (SimulatedDevice, torch.device)) else None


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


@dataclass(frozen=True)
class _Write:
    """A kernel queued on ``stream`` (its job ``seq``) that writes a device memory;
    ``fresh``: the one that made it (a result of the producer's device work)."""

    stream: SimulatedStream
    seq: int
    fresh: bool
    site: str | None


def _storage_key(data: torch.Tensor) -> int | None:
    """The address of ``data``'s memory (None where it has none to read)."""
    with torch._C.DisableTorchFunctionSubclass():
        try:
            storage = data.untyped_storage()
            return int(storage.data_ptr()) if storage.nbytes() else None
        except (RuntimeError, NotImplementedError):
            return None


#: Where a read or a copy is never the producer's own line: this module, the standard
#: library's context managers, and the step's stand-in for vLLM's sampling-mask class
#: (what its ``tolists`` reads, the producer's call of it read).
_SKIPPED_FILES = frozenset(
    os.path.abspath(f)
    for f in (
        __file__,
        contextlib.__file__,
        threading.__file__,
        os.path.join(os.path.dirname(__file__), "sampling_masks.py"),
    )
    if f
)
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _caller_site() -> str | None:
    """``path:line`` of the innermost frame outside this module, torch and the standard
    library's context managers: the producer's line that queued the work or read."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if name not in _SKIPPED_FILES and not name.startswith(_TORCH_DIR):
            return f"{module_path(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _producer_name(tensor: Any, copy: HostCopy | None = None) -> str | None:
    """What the producer calls ``tensor`` where it copies or reads it: an attribute of its
    object (``AsyncOutput.num_sampled_tokens``), looked up in the few frames around the
    call (a helper's parameter names nothing: ``x`` of ``async_copy_to_np(x)``).  With
    ``copy``, the attribute holding that copy's host buffer names it too: a read through a
    view of it (its ``.numpy()``, a row) names no attribute itself."""
    return _attribute_holding(_producer_objects(sys._getframe(1)), tensor, copy)


def _attribute_holding(
    owners: Iterable[tuple[Any, dict[str, Any]]], tensor: Any, copy: HostCopy | None
) -> str | None:
    """``Owner.attribute`` of the first of ``owners`` holding ``tensor`` or ``copy``'s
    host buffer."""
    for owner, attributes in owners:
        for attribute, value in attributes.items():
            if (tensor is not None and value is tensor) or (
                copy is not None and getattr(value, "_copy", None) is copy
            ):
                return f"{type(owner).__name__}.{attribute}"
    return None


def _objects_held(holder: Any) -> list[tuple[Any, dict[str, Any]]]:
    """``[(holder, its attributes)]``, or nothing where it keeps none in a ``__dict__``."""
    attributes = getattr(holder, "__dict__", None)
    return [(holder, attributes)] if isinstance(attributes, dict) else []


def _producer_objects(frame: types.FrameType | None) -> Iterator[tuple[Any, dict[str, Any]]]:
    """``(self, its attributes)`` of the few producer frames from ``frame`` outwards (the
    suite's and torch's own frames passed over)."""
    looked = 0
    while frame is not None and looked < 4:
        name = os.path.abspath(frame.f_code.co_filename)
        if name in _SKIPPED_FILES or name.startswith(_TORCH_DIR):
            frame = frame.f_back
            continue
        looked += 1
        owner = frame.f_locals.get("self")
        attributes = getattr(owner, "__dict__", None)
        if isinstance(attributes, dict):
            yield owner, attributes
        frame = frame.f_back


def _covering_event(copy: HostCopy) -> str | None:
    """The producer's name for an event recorded after ``copy`` on its stream (what its
    read should have waited for), found among the attributes of the objects in the
    frames around the read."""
    return _event_covering(_producer_objects(sys._getframe(1)), copy)


def _event_covering(owners: Iterable[tuple[Any, dict[str, Any]]], copy: HostCopy) -> str | None:
    """``Owner.attribute`` of an event among ``owners``' recorded after ``copy``."""
    if copy.stream is None:
        return None
    for owner, attributes in owners:
        for attribute, value in attributes.items():
            event = getattr(value, "_event", value)  # a wrapper of an event: the event
            covers = getattr(event, "_covers", None)
            if isinstance(covers, dict) and covers.get(copy.stream, 0) >= copy.seq:
                return f"{type(owner).__name__}.{attribute}"
    return None


def _display_name(tensor: torch.Tensor, label: str) -> str:
    """``label`` with the producer's own name for ``tensor`` where it differs."""
    own = _producer_name(tensor)
    computed = isinstance(tensor, SimulatedDeviceTensor) and tensor._computed
    if own is None or own == label or own.endswith(f".{label}"):
        return f"a tensor computed from {label}" if computed else label
    return f"{own} ({'computed from ' if computed else ''}{label})"


def what_to_wait_for(event: str | None) -> str:
    """What a read of a host copy waits for first: the producer's event named ``event``,
    recorded after the copy, or else what would do."""
    if event:
        return f"{event}.synchronize() (recorded after the copy)"
    return "an event recorded after the copy on that stream, or that stream"


class HostCopy:
    """One non-blocking device-to-host copy: queued on a stream, visible to the host late.

    The host buffer holds sentinel values (:func:`sentinel_fill`) from the moment the
    copy is queued.  The stream reads the device values when it gets there (so a
    stream that did not wait for the one computing them reads stale ones); the host
    sees them only once it waited for that work: an event recorded after the copy, the
    stream, or the whole runtime.  So a read before the wait it belongs to sees the
    sentinels, on every run, and is named by the copy's label.
    """

    def __init__(
        self, label: str, host: torch.Tensor, source: torch.Tensor, unfinished: bool = False
    ) -> None:
        self.label = label
        self.host = host  # plain, the destination's memory
        self._source = source  # plain, the device tensor's memory
        self._staged: torch.Tensor | None = None
        self.landed = False
        #: The source's memory is made by work this copy's stream is not ordered after:
        #: the copy reads none of its values (zeros), however fast that work ran here.
        self.unfinished = unfinished
        #: The producer's line that started the copy, and the stream it is queued on.
        self.site = _caller_site()
        self.stream: SimulatedStream | None = None
        #: The label with the producer's own name for the source, for race reports.
        self.shown = label
        self.seq = 0  # its job number on its stream, once queued

    def describe_early_read(
        self, read_site: str | None, own: str | None = None, event: str | None = None
    ) -> str:
        """The early read of this copy, for a race report: what (``own``: the producer's
        name for the host copy), where, and what to wait for (``event``: the producer's
        name for an event recorded after the copy)."""
        shown = f"{own}, the host copy of {self.shown}," if own else self.shown
        at = f" at {read_site}" if read_site else ""
        started = f" (its copy started at {self.site}" if self.site else " (its copy started"
        on = f" on {self.stream.describe()})" if self.stream is not None else ")"
        return (
            f"{shown} read{at} before its copy arrived{started}{on}; wait first for "
            f"{what_to_wait_for(event)}"
        )

    def stage(self) -> None:
        """Run on the stream: read the device values as they are at this point of its order."""
        with torch._C.DisableTorchFunctionSubclass():
            if self.unfinished:
                self._staged = torch.zeros_like(self._source, dtype=self.host.dtype)
                return
            self._staged = self._source.to(dtype=self.host.dtype, copy=True)

    def stage_view(self) -> None:
        """:meth:`stage` for a runtime whose copies run inline: the device values as they
        are when the copy lands (no buffer the host would not have, where the dtypes
        match), which is the same values wherever nothing writes the source in between."""
        if self._source.dtype != self.host.dtype or self.unfinished:
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
#: ``np.asarray(t)``: ``.numpy()`` when no other dtype is asked, a converted copy else.
_ARRAY_OF = torch.Tensor.__array__


class InFlightHostTensor(torch.Tensor):
    """The host tensor ``device_tensor.to("cpu", non_blocking=True)`` returns.

    Until its copy lands (:class:`HostCopy`), reading its values is noted as an early
    read of the copy's label (and yields the sentinels); taking a view of it (a slice,
    a reshape) is not a read, and the view shares its copy.  Once landed it is a plain
    host tensor: what it computes is plain, and it pickles as one.
    """

    _copy: HostCopy
    _runtime: SimulatedRuntime

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        # A plain copy of the values (the checks keep what a step returned): torch's
        # default refuses a tensor subclass without new_empty.
        with torch._C.DisableTorchFunctionSubclass():
            copied = torch.Tensor.clone(self).as_subclass(torch.Tensor)
        memo[id(self)] = copied
        return copied

    def __repr__(self, *, tensor_contents: Any = None) -> Any:  # type: ignore[override]
        # What the backend holds is a torch tensor to it: messages show one, and showing
        # it is no read of the backend's.
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.__repr__(self.as_subclass(torch.Tensor))

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
        if func in _SHARES_MEMORY or (func is _ARRAY_OF and _aliases_tensor(result, args[0])):
            # The array aliases the buffer: read after the wait it is right, as on hardware
            # (read before, it holds the sentinels, and the read is noted by the array).
            source = args[0]
            if (
                func in (torch.Tensor.numpy, _ARRAY_OF)
                and isinstance(source, InFlightHostTensor)
                and not source._copy.landed
            ):
                return _in_flight_array(result, source._copy, source._runtime)
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
            tensor._runtime._note_early_read(tensor._copy, tensor)
        return _plain_result(result)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return _plain(self).clone().__reduce_ex__(protocol)


class InFlightArray(np.ndarray):
    """``.numpy()`` of a host copy not yet arrived: the buffer's memory, as on hardware.

    Taking it, or a view of it (a row, a slice), reads nothing; reading its values
    (``tolist()``, an element, arithmetic, a numpy function, a copy) before the copy
    arrived is noted as an early read of the copy, named by the producer's attribute.
    What a read computes is a plain array."""

    _copy: HostCopy | None
    _runtime: SimulatedRuntime | None

    def __array_finalize__(self, obj: Any) -> None:
        self._copy = getattr(obj, "_copy", None)
        self._runtime = getattr(obj, "_runtime", None)

    def _note_read(self) -> None:
        copy, runtime = self._copy, self._runtime
        if copy is not None and runtime is not None and not copy.landed:
            runtime._note_early_read(copy, self)

    def _plain(self) -> np.ndarray:
        return self.view(np.ndarray)

    def tolist(self) -> Any:
        self._note_read()
        return self._plain().tolist()

    def item(self, *args: Any) -> Any:
        self._note_read()
        return self._plain().item(*args)

    def copy(self, order: Any = "C") -> np.ndarray:
        self._note_read()
        return self._plain().copy(order)

    def astype(self, *args: Any, **kwargs: Any) -> np.ndarray:
        self._note_read()
        return self._plain().astype(*args, **kwargs)

    def __getitem__(self, key: Any) -> Any:
        found = self._plain()[key]
        if isinstance(found, np.ndarray) and np.may_share_memory(found, self._plain()):
            # A view (``a[:, None]``, a row) is the buffer still, its copy not yet arrived.
            if self._copy is None or self._runtime is None:
                return found
            return _in_flight_array(found, self._copy, self._runtime)
        self._note_read()  # an element, or a gather: values read
        return found

    def __iter__(self) -> Iterator[Any]:
        if self.ndim > 1:
            return (self[i] for i in range(len(self)))
        self._note_read()
        return iter(self._plain())

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _note_arrays_read((inputs, kwargs))
        return getattr(ufunc, method)(*_plain_arrays(inputs), **_plain_arrays(kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        _note_arrays_read((args, kwargs))
        return func(*_plain_arrays(args), **_plain_arrays(kwargs))

    def __reduce__(self) -> Any:
        return self._plain().copy().__reduce__()

    def __int__(self) -> int:
        self._note_read()
        return int(self._plain())

    def __float__(self) -> float:
        self._note_read()
        return float(self._plain())

    def __index__(self) -> int:
        self._note_read()
        return self._plain().__index__()

    def __bool__(self) -> bool:
        self._note_read()
        return bool(self._plain())


def _holds_nothing(read: Any) -> bool:
    """Whether ``read`` (a host tensor or array read early) has no element to read."""
    if isinstance(read, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            return read.numel() == 0
    return isinstance(read, np.ndarray) and read.size == 0


def _aliases_tensor(array: Any, tensor: torch.Tensor) -> bool:
    """Whether the numpy ``array`` is ``tensor``'s memory (not a converted copy of it)."""
    if not isinstance(array, np.ndarray):
        return False
    # An empty array holds no memory to compare: it reads nothing either way.
    return array.size == 0 or array.__array_interface__["data"][0] == tensor.data_ptr()


def _in_flight_array(array: Any, copy: HostCopy, runtime: SimulatedRuntime) -> Any:
    if not isinstance(array, np.ndarray):
        return array
    found = array.view(InFlightArray)
    found._copy, found._runtime = copy, runtime
    return found


def _note_arrays_read(tree: Any) -> None:
    for leaf in _leaves(tree):
        if isinstance(leaf, InFlightArray):
            leaf._note_read()


def _plain_arrays(tree: Any) -> Any:
    if isinstance(tree, InFlightArray):
        return tree.view(np.ndarray)
    if isinstance(tree, list):
        return [_plain_arrays(item) for item in tree]
    if isinstance(tree, tuple):
        return tuple(_plain_arrays(item) for item in tree)
    if isinstance(tree, dict):
        return {key: _plain_arrays(item) for key, item in tree.items()}
    return tree


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


def _names_the_host(device: Any) -> bool:
    """Whether a ``device=`` argument names the host."""
    return _type_named(device) == "cpu"


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
    stream = runtime.current_stream()
    shown = _display_name(source, label)
    unfinished = runtime._check_read(device_data, shown, stream, "copies to the host")
    copy = HostCopy(label, host, device_data, unfinished)
    copy.shown = shown
    stream._submit_copy(copy)
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
    runtime = source._runtime
    stream = runtime.current_stream()
    shown = _display_name(source, label)
    unfinished = runtime._check_read(device_data, shown, stream, "copies to the host")
    copy = HostCopy(label, plain_host, expanded, unfinished)
    copy.shown = shown
    stream._submit_copy(copy)
    return host


def _runtimes_in(tree: Any) -> list[SimulatedRuntime]:
    found: list[SimulatedRuntime] = []
    for leaf in _leaves(tree):
        if isinstance(leaf, SimulatedDeviceTensor) and leaf._runtime not in found:
            found.append(leaf._runtime)
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


def _accelerator_surface(runtime: SimulatedRuntime) -> dict[str, Any]:
    """``torch.accelerator``'s stream calls, answered by ``runtime`` (device-generic plugin
    code reaches the runtime so; a CPU-only torch has no accelerator to answer them)."""
    surface: dict[str, Any] = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_accelerator": lambda check_available=False: _device_of(runtime),
        "current_device_index": lambda: 0,
        "current_device_idx": lambda: 0,
        "current_stream": lambda device=None: runtime.current_stream(),
        "set_stream": runtime.set_stream,
        "synchronize": lambda device=None: runtime.synchronize(),
    }
    return {name: value for name, value in surface.items() if hasattr(torch.accelerator, name)}


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
        for name, value in _accelerator_surface(runtime).items():
            patch(torch.accelerator, name, value)
        patch(
            torch.Tensor, "record_stream", _recording_streams(torch.Tensor.record_stream, runtime)
        )
        yield runtime
    finally:
        for owner, name, previous in reversed(saved):
            if previous is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, previous)
        runtime.close()
