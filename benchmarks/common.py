"""What every benchmark shares: backends, devices, skipping, synchronisation, data.

Each benchmark file is only about what it measures; this module owns the rest
(scipy's ``benchmarks/common.py`` habit):

* **Backends.** The first asv parameter, ``backend``, is the list of backend specs
  :func:`benchmarks.backends.selected_specs` reads (``$OUTPUTS_BENCH_BACKENDS``,
  else ``$OUTPUTS_BACKEND``, else ``reference``), so one run measures several
  side by side and every stored result says what it measured.  ``setup`` calls
  :meth:`Benchmark.use_backend`, which resolves the spec once per process and
  skips (``NotImplementedError``) where the backend's revision lacks the
  operation or the backend lacks the producer.  How each revision spells an
  operation is :mod:`benchmarks.revision_calls`.
* **Device.** ``device`` is an asv parameter over the device types of the one
  device layer (``conformance.backends.devices``: cpu, cuda, xpu, mps).  A device that is
  absent here, that the backend does not support, or that ``$OUTPUTS_BENCH_DEVICES``
  (comma-separated) leaves out raises ``NotImplementedError`` in ``setup``, which
  asv records as skipped, not failed.
* **Synchronisation.** Inputs are built in ``setup``, which synchronises at its
  end; every timed method that touches a device calls :meth:`DeviceBenchmark.sync`
  before returning, because a non-blocking copy or a kernel is not done until then.
  Device tensors are never built in ``setup_cache``: asv runs benchmarks in other
  processes than the one that ran it.
* **Data.** Token ids are drawn from a realistic vocabulary (tens of thousands to
  ~150k): ids below 257 are cached Python ints and make ``tolist`` look several
  times faster than it is.  asv re-runs ``setup`` before every timed call
  (asv-runner >= 0.3: with a ``setup``, each call is timed on its own), so the
  data builders are cached per process: ``setup`` stays cheap and leaves the
  caches warm instead of charging the timed call for its own allocations.
* **Quick mode.** ``$OUTPUTS_BENCH_QUICK=1`` gives every size parameter one
  representative value (:func:`sizes`), ``device`` only the devices
  ``$OUTPUTS_BENCH_DEVICES`` names (all when unset), and fewer, shorter samples
  (:class:`Benchmark`), for runs over many backends.
* **Representative shapes.** ``$OUTPUTS_BENCH_SHAPES=representative`` (the main
  job, ``nox -s suite``) gives every size parameter its representative value but
  those of the targets' benchmarks (``sizes(..., target=True)``: a target holds
  at every shape), with the usual samples; ``nox -s bench`` measures the full grid.
* **Many backends.** asv forks one process per benchmark, parameter set and
  round (tens of thousands in a run over every release), so in such a run each
  costs as little as it can: the forkserver parent resolves every backend once at
  import (:func:`warm_backends`; the children inherit them), ``device`` is only
  the devices ``$OUTPUTS_BENCH_DEVICES`` names (``nox -s bench-releases`` sets
  the ones present), a baseline (:func:`baseline`: the same work whatever the
  backend) is measured under the first backend only, and a benchmark of
  producers only over the backends that have them (:func:`backend_params`).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from functools import cache
from itertools import accumulate
from typing import Any, ClassVar

import numpy as np
import torch

from . import devices
from .backends import Subject, resolve, selected_specs

#: The built-in device types of the one device layer, in its order.
DEVICES = devices.candidate_devices()
# Environment variable narrowing the devices actually run (the parameter list stays
# the same, so results from different machines line up).
DEVICES_ENV_VAR = "OUTPUTS_BENCH_DEVICES"
QUICK_ENV_VAR = "OUTPUTS_BENCH_QUICK"

# Qwen2/Llama-3 sized vocabulary: ids up to ~150k as the issue asks.
VOCAB_SIZE = 151_936
# Lowest id drawn: far above CPython's small-int cache (-5..256).
MIN_TOKEN_ID = 10_000
SEED = 20251001


ROUNDS_ENV_VAR = "OUTPUTS_BENCH_ROUNDS"


def asv_rounds(default: int) -> int:
    """asv's rounds of each benchmark: ``$OUTPUTS_BENCH_ROUNDS`` where it is a whole
    number from 1, else ``default``.  A ratio's track times both sides interleaved in
    each round: one round still has its interval, at half the processes (a device's
    time, lent by the minute)."""
    stated = os.environ.get(ROUNDS_ENV_VAR, "").strip()
    return int(stated) if stated.isdigit() and int(stated) >= 1 else default


def quick() -> bool:
    """Whether ``$OUTPUTS_BENCH_QUICK`` asks for one representative shape per benchmark."""
    return os.environ.get(QUICK_ENV_VAR, "").strip().lower() not in ("", "0", "false", "no")


SHAPES_ENV_VAR = "OUTPUTS_BENCH_SHAPES"
REPRESENTATIVE = "representative"


def representative_shapes() -> bool:
    """Whether ``$OUTPUTS_BENCH_SHAPES=representative`` keeps the full grid to the targets."""
    return os.environ.get(SHAPES_ENV_VAR, "").strip().lower() == REPRESENTATIVE


class Sizes(list[Any]):
    """A size parameter's values, knowing which one represents them (:func:`sizes`)."""

    representative: Any


def sizes(values: Sequence[Any], representative: Any, *, target: bool = False) -> Sizes:
    """A size parameter's values: all of them, or only ``representative`` in quick mode
    and, unless it is a ``target``'s, under :func:`representative_shapes`."""
    assert representative in values, f"{representative!r} is not one of {values!r}"
    narrow = quick() or (representative_shapes() and not target)
    out = Sizes([representative] if narrow else values)
    out.representative = representative
    return out


def representative_shape(cls: type[Benchmark]) -> dict[str, Any]:
    """The representative value of each size parameter of benchmark class ``cls``."""
    return {
        name: values.representative
        for name, values in zip(cls.param_names, cls.params, strict=True)
        if isinstance(values, Sizes)
    }


def backend(spec: str) -> Subject:
    """The backend a ``backend`` parameter value names (resolved once per process)."""
    return resolve(spec)


def device_available(device: str) -> bool:
    """Whether torch can use ``device`` on this machine."""
    return devices.is_present(device)


@cache
def declared_devices() -> tuple[str, ...]:
    """The built-in device types, then any other type a backend of the run declares
    (``npu``, ``hpu``: a plugin's device is measured like the built-in ones)."""
    declared: list[str] = []
    for spec in selected_specs():
        subject = loadable(spec)
        declared += [d for d in (subject.devices if subject else ()) if d not in declared]
    return devices.candidate_devices(tuple(declared))


def enabled_devices() -> tuple[str, ...]:
    """Devices ``$OUTPUTS_BENCH_DEVICES`` allows (every declared device when unset)."""
    raw = os.environ.get(DEVICES_ENV_VAR, "")
    wanted = tuple(dict.fromkeys(d.strip() for d in raw.split(",") if d.strip()))
    return wanted or declared_devices()


def undeclared_devices() -> list[str]:
    """Names in ``$OUTPUTS_BENCH_DEVICES`` that no backend of the run declares."""
    return [d for d in enabled_devices() if d not in declared_devices()]


def many_backends() -> bool:
    """Whether this run measures several backends side by side."""
    return len(selected_specs()) > 1


def device_params() -> list[str]:
    """The ``device`` parameter: every device type, so that results of different
    machines line up; in quick mode or a run over several backends only those
    ``$OUTPUTS_BENCH_DEVICES`` names (there, an absent device would cost a process
    per backend, shape and round just to be skipped)."""
    if quick() or many_backends() or representative_shapes():
        return list(enabled_devices())
    # An asked-for device no backend declares stays in: its skip names it.
    return list(declared_devices()) + undeclared_devices()


def loadable(spec: str) -> Subject | None:
    """The backend ``spec`` names, or None when it cannot be loaded here.

    The error is not lost: ``setup`` resolves the spec again in the benchmark
    process, and asv reports what it raises there."""
    try:
        return backend(spec)
    except Exception:  # reported by setup, in the benchmark's own result
        return None


def warm_backends() -> None:
    """Resolve every backend of the run in this process, once.

    asv's forkserver imports the benchmark modules once and forks a process per
    benchmark, parameter set and round; resolved here, every child inherits the
    loaded modules instead of importing and loading them itself (~40 ms each).
    Nothing here touches a device: a parent that initialised one could not fork
    children that use it."""
    for spec in selected_specs():
        loadable(spec)


def preflight() -> str | None:
    """Why this run cannot measure what it was asked to (one line), or None.

    Run before asv (``nox -s bench``): a backend that does not load in this
    interpreter (a plugin not installed here) or a device no backend declares would
    otherwise fail every benchmark with the same long traceback.
    """
    for spec in selected_specs():
        try:
            backend(spec)
        except Exception as error:
            first = (str(error).splitlines() or [""])[0]
            return (
                f"backend {spec!r} does not load in the benchmarks' interpreter "
                f"({type(error).__name__}: {first}); install it there (nox -s bench: "
                "OUTPUTS_BENCH_INSTALL=<path or requirement of your plugin>)"
            )
    unknown = undeclared_devices()
    if unknown:
        return (
            f"${DEVICES_ENV_VAR} names {', '.join(unknown)}, which no backend of the run "
            f"declares (devices: {', '.join(declared_devices())}); declare it in the "
            "backend's conformance.Backend(devices=...) or fix the name"
        )
    return None


def backend_params(*producers: str) -> list[str]:
    """The ``backend`` parameter: every backend of the run, or, for a benchmark of
    ``producers``, the backends that provide them (all of them when none does, so
    each result still says why it was skipped).  A backend that cannot be loaded
    stays in: its setup reports the error."""
    specs = selected_specs()
    if not producers:
        return specs
    subjects = {spec: loadable(spec) for spec in specs}
    providing = [
        spec
        for spec, subject in subjects.items()
        if subject is None or all(name in subject.producers for name in producers)
    ]
    return providing or specs


def baseline(method: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a benchmark method as a baseline: the same work whatever the backend.

    In a run over several backends it is measured under the first one only
    (:meth:`Benchmark.__init_subclass__` narrows its ``backend`` parameter); the
    backends' own operations are compared with it in that run."""
    method._baseline = True  # type: ignore[attr-defined]
    return method


def require_device(device: str, subject: Subject | None = None) -> None:
    """Raise ``NotImplementedError`` (asv: skipped) unless ``device`` can be benchmarked."""
    if device not in enabled_devices():
        raise NotImplementedError(f"{device} left out by ${DEVICES_ENV_VAR}")
    if device not in declared_devices():
        raise NotImplementedError(f"{device}: no backend of the run declares this device")
    if not device_available(device):
        raise NotImplementedError(f"no {device} device on this machine")
    if subject is not None and device not in subject.devices:
        raise NotImplementedError(f"backend {subject.spec!r} does not support {device}")


def synchronize(device: str) -> None:
    """Wait until all work queued on ``device`` is done (nothing to wait for on CPU)."""
    devices.synchronize(device)


def median_device_seconds(device: str, call: Callable[[], object], repeats: int) -> float:
    """The median seconds of ``repeats`` calls of ``call`` as ``device``'s events time them.

    One untimed call first (the allocator, the first touch of host pages); events
    bracket each call on the current stream, so the figure is the device's own work
    without Python's overhead.  Never zero (the timer's resolution), so a rate divides.
    """
    event_type = getattr(torch, device).Event
    call()
    synchronize(device)
    seconds = []
    for _ in range(repeats):
        start, end = event_type(enable_timing=True), event_type(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in ms
    synchronize(device)
    return max(statistics.median(seconds), 1e-9)


def require_accelerator(device: str) -> None:
    """Skip on CPU, where there is no device-to-host link to measure."""
    if device == "cpu":
        raise NotImplementedError("cpu has no device-to-host link")


class Benchmark:
    """Defaults shared by every benchmark class.

    Chosen so the whole suite runs in a few minutes on two cores: two rounds of 3 to
    10 samples of ~10 ms each (at most 2 s per round), after a 0.1 s warm-up.
    """

    rounds = asv_rounds(2)
    repeat = (3, 10, 2.0)
    sample_time = 0.01
    warmup_time = 0.1
    timeout = 120.0
    if quick():
        # Quick mode (many backends): one round of 3 to 5 short samples.  Still a
        # median of warm calls, unlike asv's --quick, which times one cold call.
        rounds = 1
        repeat = (3, 5, 0.25)
        sample_time = 0.005
        warmup_time = 0.02
    subject: Subject
    # Declared, not set: a class without parameters has none (asv reads them by name).
    params: ClassVar[list[list[Any]]]
    param_names: ClassVar[list[str]]
    #: Each benchmark class's own setup, taking its parameters (asv calls it by name).
    setup: Callable[..., None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A baseline gets the class's parameters with the first backend only (asv
        # reads ``params`` from the method before the class); the same list when
        # the run has one backend.
        for member in vars(cls).values():
            if getattr(member, "_baseline", False) and "params" in dir(cls):
                member.params = [cls.params[0][:1], *cls.params[1:]]
                member.param_names = list(cls.param_names)

    def use_backend(self, spec: str, *behaviours: str) -> Subject:
        """Resolve the backend; skip unless its revision has every one of ``behaviours``."""
        self.subject = backend(spec)
        self.subject.require(*behaviours)
        return self.subject


class DeviceBenchmark(Benchmark):
    """A benchmark whose first two parameters are ``backend`` and ``device``.

    Subclasses list their own parameters after these two and call
    :meth:`use` (backend, device, behaviours) first in ``setup``.
    """

    params: ClassVar[list[list[Any]]] = [backend_params(), device_params()]
    param_names: ClassVar[list[str]] = ["backend", "device"]
    device: str = "cpu"

    def use(self, spec: str, device: str, *behaviours: str) -> Subject:
        """Skip unless ``device`` can run here for this backend, then resolve the backend."""
        # The device first: on a CPU-only machine most combinations stop here, cheaply.
        require_device(device)
        subject = self.use_backend(spec, *behaviours)
        require_device(device, subject)
        self.device = device
        return subject

    def sync(self) -> None:
        """Wait for the benchmark's device; every timed method calls this last."""
        synchronize(self.device)


class HostBenchmark(Benchmark):
    """A benchmark of host-only work (lists, CPU tensors): parameter ``backend`` only."""

    params: ClassVar[list[list[Any]]] = [backend_params()]
    param_names: ClassVar[list[str]] = ["backend"]


warm_backends()


def rng() -> np.random.Generator:
    """A fresh generator with the suite's seed: every run measures the same data."""
    return np.random.default_rng(SEED)


def token_ids(generator: np.random.Generator, shape: int | Sequence[int]) -> np.ndarray:
    """int32 token ids drawn uniformly from ``[MIN_TOKEN_ID, VOCAB_SIZE)``."""
    return generator.integers(MIN_TOKEN_ID, VOCAB_SIZE, size=shape, dtype=np.int32)


def logprobs_arrays(num_tokens: int, num_logprobs: int) -> tuple[np.ndarray, ...]:
    """Host arrays shaped like ``LogprobsTensors`` rows as vLLM's sampler emits them.

    ``[n, k+1]`` int32 ids, ``[n, k+1]`` float32 logprobs (sorted descending after
    column 0, all <= 0) and ``[n]`` int64 ranks (the sampler's dtype).
    """
    generator = rng()
    ids = token_ids(generator, (num_tokens, num_logprobs + 1))
    values = -np.sort(generator.exponential(2.0, size=(num_tokens, num_logprobs + 1)), axis=1)
    ranks = generator.integers(1, VOCAB_SIZE, size=num_tokens, dtype=np.int64)
    return ids, values.astype(np.float32), ranks


@cache
def logprobs_tensors(spec: str, num_tokens: int, num_logprobs: int, device: str = "cpu") -> Any:
    """Backend ``spec``'s ``LogprobsTensors`` holding :func:`logprobs_arrays` on ``device``.

    Cached per process: asv re-runs ``setup`` before every individually timed call,
    and rebuilding megabytes of data there evicts the caches the timed call then
    pays for (on CPU, a no-op ``to_cpu_nonblocking`` read 23 us instead of 0.4 us).
    Callers must not mutate the result.
    """
    cls = backend(spec).type("LogprobsTensors")
    tensors = (torch.from_numpy(a).to(device) for a in logprobs_arrays(num_tokens, num_logprobs))
    return cls(*tensors)


def generated_token_boundaries(num_tokens: int, tokens_per_request: int) -> list[int]:
    """``cu_num_generated_tokens`` of ``num_tokens`` rows, ``tokens_per_request`` per
    request (speculative decoding); the last request keeps the remainder."""
    counts = [tokens_per_request] * (num_tokens // tokens_per_request)
    counts += [num_tokens % tokens_per_request] if num_tokens % tokens_per_request else []
    return [0, *accumulate(counts)]


@cache  # see logprobs_tensors: setup runs before every timed call
def accepted_token_lists(num_reqs: int, num_drafts: int) -> list[list[int]]:
    """Per-request sampled ids of one step: 1 token, or 1..num_drafts+1 with drafts.

    With speculative decoding each request keeps a random number of accepted drafts
    plus the bonus token, so rows have different lengths and need padding.
    """
    generator = rng()
    ids = token_ids(generator, (num_reqs, num_drafts + 1)).tolist()
    lengths = generator.integers(1, num_drafts + 2, size=num_reqs).tolist()
    return [row[:length] for row, length in zip(ids, lengths, strict=True)]


def at_steady_state(call: Callable[[], object], timeout: float = 30.0) -> None:
    """Call ``call`` as a serving loop would, until the reference's run-time tier is in.

    The benchmarks allow the reference's one run-time build (``torch.compile`` of the
    rank count off the CPU, :mod:`reference_speedups.compiled_count`), which tiers up
    after repeated calls on a background thread; a benchmark times the steady state,
    its build paid in ``setup`` as vLLM's compile is.  A commit from before
    ``reference_speedups`` (asv compares commits) just lacks it.
    """
    try:
        from reference_speedups import compiled_count, hot_build
    except ImportError:
        call()
        return
    hot_build.allow()
    if not hot_build.enabled():  # forbidden ($OUTPUTS_REFERENCE_COMPILE=0): nothing tiers up
        call()
        return
    for _ in range(compiled_count.HOT_CALLS):
        call()
    compiled_count.settle(timeout=timeout)


#: Seconds a target's two sides are timed over, interleaved (a track benchmark each).
TARGET_SECONDS = 0.25
