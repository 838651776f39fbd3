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
  non-blocking copy to the host returns a buffer at once and fills it only when its
  stream gets there, so reading it too early shows stale values.  Any other use of the
  tensor is a blocking read: it waits for the whole runtime first, as real hardware does.
* :func:`installed` puts the runtime in place of ``torch.<device>`` (and ``torch.Event``
  / ``torch.Stream``) for a with-block, so that unchanged producer code drives it.

The simulated tensors live in CPU memory and report ``device`` ``cpu``: torch cannot be
made to name another device type for them.
"""

from __future__ import annotations

import inspect
import queue
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import torch

__all__ = [
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
        self._runtime._register(self)

    def _submit(self, work: Callable[[], object]) -> threading.Event:
        """Queue ``work``; the returned flag is set once it (and all before it) ran."""
        runtime = self._runtime
        done = threading.Event()
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
        return done

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

    def wait_event(self, event: SimulatedEvent) -> None:
        """Later work on this stream waits for ``event`` (as last recorded; none: no wait)."""
        marker = event._done
        if marker is not None:
            self._submit(lambda: self._runtime._wait(marker))

    def record_event(self, event: SimulatedEvent | None = None) -> SimulatedEvent:
        event = event if event is not None else self._runtime.Event()
        event.record(self)
        return event

    def query(self) -> bool:
        with self._lock:
            marker = self._last
        return marker is None or marker.is_set()

    def synchronize(self) -> None:
        with self._lock:
            marker = self._last
        if marker is not None:
            self._runtime._wait(marker)
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

    def record(self, stream: SimulatedStream | None = None) -> None:
        stream = stream if stream is not None else self._runtime.current_stream()
        # A no-op job: the FIFO runs it only after everything queued before the record.
        self._done = stream._submit(lambda: None)

    def query(self) -> bool:
        marker = self._done
        return marker is None or marker.is_set()

    def synchronize(self) -> None:
        marker = self._done
        if marker is not None:
            self._runtime._wait(marker)
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
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _streams and _errors
        self._streams: list[SimulatedStream] = []
        self._errors: list[BaseException] = []
        self._local = threading.local()  # the current stream is per host thread, as in torch
        # Classes bound to this runtime, so that torch.<device>.Stream() needs no argument.
        self.Stream = type("Stream", (SimulatedStream,), {"_runtime": self})
        self.Event = type("Event", (SimulatedEvent,), {"_runtime": self})
        self._default = self.Stream()

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
        for stream in streams:
            with stream._lock:
                marker = stream._last
            if marker is not None:
                self._wait(marker)
        self._raise_errors()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    # Simulated tensors and the kernels writing them.

    def device_tensor(self, initial: torch.Tensor) -> SimulatedDeviceTensor:
        """A device tensor holding a copy of ``initial``'s values."""
        data = initial.detach().clone()
        with torch._C.DisableTorchFunctionSubclass():
            data = data.as_subclass(torch.Tensor)  # a simulated initial becomes plain data
        return _wrap_tensor(data, self)

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
            for name in ("shape", "dtype", "device", "ndim", "layout", "requires_grad", "is_cuda")
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


class SimulatedDeviceTensor(torch.Tensor):
    """A tensor "on" a simulated device: its values are what that runtime's kernels wrote."""

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
        if func in _METADATA:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
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
        return _rewrap(result, originals, runtimes[0])


def _wrap_tensor(data: torch.Tensor, runtime: SimulatedRuntime) -> SimulatedDeviceTensor:
    tensor = data.as_subclass(SimulatedDeviceTensor)
    tensor._runtime = runtime
    return tensor


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    """A plain tensor sharing ``tensor``'s memory: torch functions on it don't come back here."""
    if type(tensor) is torch.Tensor:
        return tensor
    with torch._C.DisableTorchFunctionSubclass():
        return tensor.as_subclass(torch.Tensor)


def _check_broadcast(source: torch.Size, target: torch.Size) -> None:
    # Checked when queued: an error in a stream thread would surface far from its cause.
    if torch.broadcast_shapes(source, target) != target:
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
    with torch._C.DisableTorchFunctionSubclass():
        host = device_data.to(dtype=dtype or device_data.dtype, copy=True)
    source._runtime.current_stream()._submit(lambda: host.copy_(device_data))
    return host


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
    source._runtime.current_stream()._submit(lambda: host.copy_(device_data))
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


def _rewrap(result: Any, originals: dict[int, torch.Tensor], runtime: SimulatedRuntime) -> Any:
    """Tensors computed from device tensors stay on the device."""
    if isinstance(result, torch.Tensor):
        if id(result) in originals:
            return originals[id(result)]
        return _wrap_tensor(result, runtime)
    if isinstance(result, (list, tuple)):
        # torch.return_types are built from one sequence, like list and tuple.
        return type(result)(_rewrap(item, originals, runtime) for item in result)
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
