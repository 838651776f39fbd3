"""A whole decode step's host side, the backend's against vLLM's own: 0.33.0's first
runner and the newest release's default runner (0.34.0's Model Runner V2).

What a backend pays per decode step is not one piece (a transfer, ``tolists``, the
unpadding) but the host side of its async output as a whole: the constructor
vLLM's runner calls (it queues the copies), then ``get_output()``, which waits for
them, unpads the sampled ids, converts the logprobs to lists, drops the discarded
requests and returns the ``ModelRunnerOutput``.  Timed here for the backend's
``make_async_output`` and for vLLM 0.33.0's own ``AsyncGPUModelRunnerOutput``,
loaded from its producer texts (``vllm-release:0.33.0``, fetched from its wheel into
the cache on first use: :mod:`conformance.releases.fetch`), each on the step its own
release's runner builds, on its accelerator's runtime: the device's own where present,
so that on a GPU the floor below is the device's real copies and wait, else simulated
(:func:`benchmarks.async_output.step_runtime`).  Both pay the same copies, so what
differs is their own host work.  vLLM 0.34.0 removed the
first runner: its default (and only) GPU runner's ``AsyncOutput`` is the second peer,
measured the same way on the step Model Runner V2 builds (``vllm-release:0.34.0``).

The reference (``backend=reference``) is measured at 0.33.0's revision
(``reference@0.33.0``): the same output as the peer's, so the two do the same work.
Its 2025.10 revision returns other values (its ``LogprobsLists`` hold Python lists,
0.33.0's numpy arrays: at 1024 requests with 20 logprobs that conversion alone made
the 2025.10 step 5x 0.33.0's), which compares contracts, not speed.  Any other
backend is measured at its own revision.

Shapes: 1 to 1024 requests (request 0 discarded), no logprobs, the sampled token's
only (``num_logprobs=0``) or 20 top logprobs, one token per request
(``num_drafts=0``) or speculative rows of 1 to 4 tokens (``num_drafts=3``).

* ``track_decode_step_ratio_to_vllm_0_33``: our time over 0.33.0's, the two
  interleaved in one process (the target: at most 0.5x at every shape);
* ``track_decode_step_peak_bytes_ratio_to_vllm_0_33``: the step's peak host memory,
  ours over 0.33.0's (the target: at most 1.0x): Python's heap and torch's CPU
  allocator together (:mod:`benchmarks.host_memory`, the median of 25 steps, the two
  sides' steps interleaved), the simulated copies run inline so that no copy thread's
  allocations enter the count;
* ``track_decode_step_peak_bytes_ratio_to_floor``: ours over the least any async
  output holds (:func:`minimal_async_output_class`: the copies, what it must keep until
  ``get_output()``, the rows as lists of their kept ids, the kept rows' logprobs),
  built and called as both sides are: near 1.0, no backend holds meaningfully less,
  and a ratio to vLLM's near the limit is a tie;
* ``track_decode_step_ratio_to_copies_floor`` and
  ``track_vllm_0_33_ratio_to_copies_floor``: each side's time over the floor under
  every async output, the copies and the wait alone: where vLLM's is below 2x the
  floor, the 0.5x target cannot be met by any backend;
* ``track_decode_step_ratio_to_vllm_0_34``,
  ``track_decode_step_peak_bytes_ratio_to_vllm_0_34``,
  ``track_decode_step_peak_bytes_ratio_to_floor_0_34``,
  ``track_decode_step_ratio_to_copies_floor_0_34`` and
  ``track_vllm_0_34_ratio_to_copies_floor``: the same against vLLM 0.34.0's Model
  Runner V2 ``AsyncOutput``, the reference at 0.34.0's revision (the targets: ours at
  most 0.5x of it wherever it is at least 2x the floor, and within 1.2x of the floor
  at every shape);
* ``time_decode_step`` and ``peakmem_decode_step``: each side's own time and the
  process's peak resident memory (asv's ``peakmem_``), for the tables and plots.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack, suppress
from functools import cache
from typing import Any, ClassVar

from .async_output import step_runtime
from .backends import DEFAULT_RUNNER_PEER, FIRST_RUNNER_PEER, Subject, release_text, resolve
from .common import (
    TARGET_SECONDS,
    HostBenchmark,
    accepted_token_lists,
    at_steady_state,
    backend_params,
    baseline,
    sizes,
)
from .host_memory import peak_host_bytes_side_by_side
from .interleaved import ratio_samples, take_turns

#: The releases whose own async outputs the targets are stated against: the first
#: runner's last, and the newest release's default runner's (Model Runner V2).
VLLM_RELEASE = FIRST_RUNNER_PEER
NEWEST_RELEASE = DEFAULT_RUNNER_PEER

NUM_REQS_VALUES = [1, 64, 256, 1024]
NUM_LOGPROBS_VALUES = [-1, 0, 20]  # -1: the step asks for no logprobs
NUM_DRAFTS_VALUES = [0, 3]


@cache
def vllm_own(release: str = VLLM_RELEASE) -> Subject:
    """vLLM ``release``'s types and producers from its texts (its default runner's async
    output as ``make_async_output``); skipped where they are absent."""
    release_text(release)  # fetched now, or a skip naming how to fetch it
    subject = resolve(f"vllm-release:{release}")
    subject.producer("make_async_output")
    return subject


def _warm_peer() -> None:
    """Load the peers' texts in asv's forkserver parent, once: every forked child
    inherits them instead of loading them itself (about a second each)."""
    for release in (VLLM_RELEASE, NEWEST_RELEASE):
        # Absent texts: each benchmark's setup says why.
        with suppress(Exception):
            vllm_own(release)


def step_case(num_reqs: int, num_logprobs: int, num_drafts: int) -> Any:
    """The step as host data: rows padded with -1, request 0 discarded."""
    from conformance.producers.steps import StepCase

    lists = accepted_token_lists(num_reqs, num_drafts)
    # Ids in the tens of thousands (no small-int caching), each row padded to one width.
    rows = tuple(
        tuple(100_000 + tok % 50_000 for tok in row) + (-1,) * (num_drafts + 1 - len(row))
        for row in lists
    )
    case = StepCase(f"decode-{num_reqs}", rows, invalid_req_indices=(0,))
    return case.with_logprobs(num_logprobs if num_logprobs >= 0 else None)


def runner_step(subject: Subject, case: Any) -> Any:
    """The step ``subject``'s own release's runner holds, on its accelerator's runtime."""
    from conformance.producers.steps import build_step

    if subject.revision is None:
        raise NotImplementedError(f"{subject.spec}: no revision data to build its runner's step")
    return build_step(subject, subject.revision, case, step_runtime(subject.async_output_device))


def decode_step(subject: Subject, step: Any) -> Callable[[], object]:
    """One step of ``subject``: its async output built from the step, then ``get_output()``."""
    make = subject.producer("make_async_output")
    return lambda: make(step).get_output()


def copies_and_wait(step: Any) -> Callable[[], object]:
    """The least any async output of ``step`` does: order the copy stream after the
    compute stream, queue the copies of the sampled ids and the logprobs tensors on it,
    record an event, wait for it.  No unpadding, no lists, no output: the floor under
    every backend's step."""
    import torch

    runtime = getattr(torch, step.device)
    stream = step.async_output_copy_stream
    tensors = [step.sampled_token_ids]
    if step.logprobs_tensors is not None:
        tensors += [t for t in step.logprobs_tensors if isinstance(t, torch.Tensor)]

    def floor() -> object:
        # Ordered after the compute stream before entering the copy stream: inside it,
        # ``current_stream()`` is the copy stream itself, a wait on itself that orders
        # nothing (and costs nothing), which no correct async output can skip.
        stream.wait_stream(runtime.current_stream())
        with runtime.stream(stream):
            host = [t.to("cpu", non_blocking=True) for t in tensors]
            event = runtime.Event()
            event.record()
        event.synchronize()
        return host

    return floor


def held_at_least(step: Any, types: Any, every_logits_row: bool = False) -> Callable[[], object]:
    """The least an async output of ``step`` holds, as host memory goes:
    :func:`minimal_async_output_class` of the revision's types (``types``: the module
    holding them), built from the step the way both sides are
    (:func:`conformance.constructed_like_vllm`), then its ``get_output()``.  A floor, not
    an output to judge: it does only what every conforming one must."""
    from conformance import constructed_like_vllm

    make = constructed_like_vllm(minimal_async_output_class(types, every_logits_row))
    return lambda: make(step).get_output()


@cache
def minimal_async_output_class(types: Any, every_logits_row: bool = False) -> type:
    """A plain async output of 0.33.0's revision that vLLM's scheduler can read, doing
    only what every one must: no object, copy or list beyond those below.

    An instance of the revision's ``AsyncModelRunnerOutput`` that queues the copies
    (:func:`copies_and_wait`'s, the event recorded on the copy stream) and keeps, each in
    a slot (no instance dict), what every one must keep until ``get_output()``: the
    runner's output it finishes, the device tensors (alive until their copies are done,
    as vLLM's own keeps them), the host copies, the event, the discarded requests and the
    vocabulary size.  ``get_output()`` waits, then gives the rows as lists of Python ints
    (the discarded emptied) and the logprobs as the revision's ``LogprobsLists``.  One
    token per request: ``tolist()`` of the host ids, the logprobs numpy views of their
    host copies.  Rows of several tokens: each row's kept ids (not -1, below the
    vocabulary) made at their final size one row at a time, so no padded list is ever
    held; the logprobs rows of the kept positions (the revision filters them), with the
    cu counting them, or with ``every_logits_row`` (Model Runner V2's layout, 0.34.0)
    every row, none filtered, the cu counting the logits rows."""
    import numpy as np
    import torch

    lists = types.LogprobsLists

    def __init__(
        self: Any,
        model_runner_output: Any,
        sampled_token_ids: Any,
        logprobs_tensors: Any,
        invalid_req_indices: Any,
        async_output_copy_stream: Any,
        vocab_size: int,
        device: str,
    ) -> None:
        runtime = getattr(torch, device)
        self.output, self.invalid, self.vocab = model_runner_output, invalid_req_indices, vocab_size
        self.device = (sampled_token_ids, logprobs_tensors)
        tensors = [sampled_token_ids]
        if logprobs_tensors is not None:
            tensors += [t for t in logprobs_tensors if isinstance(t, torch.Tensor)]
        stream = async_output_copy_stream
        stream.wait_stream(runtime.current_stream())
        with runtime.stream(stream):
            self.host = [t.to("cpu", non_blocking=True) for t in tensors]
            self.event = runtime.Event()
            self.event.record(stream)

    def get_output(self: Any) -> Any:
        self.event.synchronize()
        ids = self.host[0].numpy()
        arrays = [t.numpy() for t in self.host[1:]]
        cu = None
        if ids.shape[1] == 1:
            rows = ids.tolist()
        else:
            rows = [row[(row != -1) & (row < self.vocab)].tolist() for row in ids]
            if arrays and every_logits_row:
                width = ids.shape[1]
                cu = [width * i for i in range(ids.shape[0] + 1)]
            elif arrays:
                kept = np.flatnonzero(((ids != -1) & (ids < self.vocab)).reshape(-1))
                arrays = [a[kept] for a in arrays]
                cu = [0]
                for row in rows:
                    cu.append(cu[-1] + len(row))
        for i in self.invalid:
            rows[i].clear()
        self.output.sampled_token_ids = rows
        self.output.logprobs = lists(*arrays[:3], cu) if arrays else None
        return self.output

    def get_kv_connector_output(self: Any) -> Any:
        return self.output.kv_connector_output

    return type(
        "MinimalAsyncOutput",
        (types.AsyncModelRunnerOutput,),
        {
            "__slots__": ("output", "device", "host", "event", "invalid", "vocab"),
            "__init__": __init__,
            "get_output": get_output,
            "get_kv_connector_output": get_kv_connector_output,
        },
    )


def peak_bytes_ratio(
    ours: Callable[[], object], theirs: Callable[[], object], *devices: str
) -> float:
    """Our step's peak host memory over theirs, the two measured side by side
    (:func:`benchmarks.host_memory.peak_host_bytes_side_by_side`), with the copies of the
    simulated runtimes of ``devices`` run inline: the copy thread's own allocations would
    enter the count at moments that differ from call to call, and a copy engine takes no
    host memory.  On a real device there is no copy thread: its copy engine does them."""
    with ExitStack() as inline:
        for device in dict.fromkeys(devices):
            runtime = step_runtime(device).simulated
            if runtime is not None:
                inline.enter_context(runtime.copies_inline())
        mine, other = peak_host_bytes_side_by_side(ours, theirs)
        return mine.total / other.total


class _Steps(HostBenchmark):
    """Both sides' steps, set up at steady state."""

    param_names: ClassVar[list[str]] = ["backend", "num_reqs", "num_logprobs", "num_drafts"]
    # The peer's step builds from its texts on first use: a few seconds per process.
    timeout = 180.0
    #: The release whose own async output is the peer.
    peer_release: ClassVar[str] = VLLM_RELEASE

    def setup(self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int) -> None:
        subject = self.use_backend(backend)
        if backend == "reference":
            subject = resolve(f"reference@{self.peer_release}")
        peer = vllm_own(self.peer_release)
        self.devices = (subject.async_output_device, peer.async_output_device)
        case = step_case(num_reqs, num_logprobs, num_drafts)
        self.ours = decode_step(subject, runner_step(subject, case))
        their_step = runner_step(peer, case)
        self.theirs = decode_step(peer, their_step)
        self.floor = copies_and_wait(their_step)
        self.floor_held = held_at_least(
            their_step, peer.module, peer.revision.async_output.logprobs == "every-logits-row"
        )
        # The first calls pay imports and thread starts; the reference's run-time
        # tier (if any) is built here, as vLLM's compile is paid outside its steps.
        at_steady_state(self.ours)
        for _ in range(3):
            self.theirs()
        take_turns(self.ours, self.theirs, seconds=TARGET_SECONDS)


class DecodeStepTargets(_Steps):
    """The two targets over the whole grid: time and peak heap against 0.33.0's own."""

    params: ClassVar[list[list[Any]]] = [
        backend_params("make_async_output"),
        sizes(NUM_REQS_VALUES, 256, target=True),
        sizes(NUM_LOGPROBS_VALUES, 0, target=True),
        sizes(NUM_DRAFTS_VALUES, 0, target=True),
    ]

    def track_decode_step_ratio_to_vllm_0_33(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        return ratio_samples(self.ours, self.theirs, TARGET_SECONDS)

    track_decode_step_ratio_to_vllm_0_33.unit = "ratio"  # type: ignore[attr-defined]

    def track_decode_step_peak_bytes_ratio_to_vllm_0_33(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> float:
        return peak_bytes_ratio(self.ours, self.theirs, *self.devices)

    track_decode_step_peak_bytes_ratio_to_vllm_0_33.unit = "ratio"  # type: ignore[attr-defined]

    def track_decode_step_peak_bytes_ratio_to_floor(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> float:
        """Our peak host memory over the least any async output holds (:func:`held_at_least`):
        near 1, no backend can hold meaningfully less, so a ratio to vLLM's near the
        limit is a tie."""
        return peak_bytes_ratio(self.ours, self.floor_held, *self.devices)

    track_decode_step_peak_bytes_ratio_to_floor.unit = "ratio"  # type: ignore[attr-defined]

    def track_vllm_0_33_ratio_to_copies_floor(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        """vLLM 0.33.0's time over the floor under every async output (the copies and
        the wait alone): where it is below 2, no async output can take half of vLLM's
        time, since every one pays the floor."""
        return ratio_samples(self.theirs, self.floor, TARGET_SECONDS)

    track_vllm_0_33_ratio_to_copies_floor.unit = "ratio"  # type: ignore[attr-defined]


class DecodeStepNewestTargets(_Steps):
    """The targets against the newest release's default runner: vLLM 0.34.0's Model
    Runner V2 ``AsyncOutput`` (the first runner is gone from 0.34.0)."""

    peer_release = NEWEST_RELEASE
    params: ClassVar[list[list[Any]]] = DecodeStepTargets.params

    def track_decode_step_ratio_to_vllm_0_34(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        return ratio_samples(self.ours, self.theirs, TARGET_SECONDS)

    track_decode_step_ratio_to_vllm_0_34.unit = "ratio"  # type: ignore[attr-defined]

    def track_decode_step_peak_bytes_ratio_to_vllm_0_34(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> float:
        return peak_bytes_ratio(self.ours, self.theirs, *self.devices)

    track_decode_step_peak_bytes_ratio_to_vllm_0_34.unit = "ratio"  # type: ignore[attr-defined]

    def track_decode_step_peak_bytes_ratio_to_floor_0_34(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> float:
        """Ours (at 0.34.0's revision) over the least any async output of the step holds:
        decides a memory ratio to vLLM 0.34.0's own too close to call (a tie at the floor)."""
        return peak_bytes_ratio(self.ours, self.floor_held, *self.devices)

    track_decode_step_peak_bytes_ratio_to_floor_0_34.unit = "ratio"  # type: ignore[attr-defined]

    def track_vllm_0_34_ratio_to_copies_floor(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        """vLLM 0.34.0's time over the copies and the wait alone (see the 0.33.0 one)."""
        return ratio_samples(self.theirs, self.floor, TARGET_SECONDS)

    track_vllm_0_34_ratio_to_copies_floor.unit = "ratio"  # type: ignore[attr-defined]

    def track_decode_step_ratio_to_copies_floor_0_34(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        """Ours (at 0.34.0's revision) over the copies and the wait alone, over the whole
        grid: the target, within 1.2x at every shape."""
        return ratio_samples(self.ours, self.floor, TARGET_SECONDS)

    track_decode_step_ratio_to_copies_floor_0_34.unit = "ratio"  # type: ignore[attr-defined]


class DecodeStep(_Steps):
    """Each side's own time and peak memory, and ours over the floor (representative
    shape in the main job, the whole grid in ``nox -s bench``)."""

    params: ClassVar[list[list[Any]]] = [
        backend_params("make_async_output"),
        sizes(NUM_REQS_VALUES, 256),
        sizes(NUM_LOGPROBS_VALUES, 0),
        sizes(NUM_DRAFTS_VALUES, 0),
    ]

    def time_decode_step(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> None:
        self.ours()

    @baseline
    def time_decode_step_vllm_0_33_own(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> None:
        self.theirs()

    def peakmem_decode_step(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> None:
        self.ours()

    @baseline
    def peakmem_decode_step_vllm_0_33_own(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> None:
        self.theirs()

    def track_decode_step_ratio_to_copies_floor(
        self, backend: str, num_reqs: int, num_logprobs: int, num_drafts: int
    ) -> dict[str, Any]:
        """Our time over the copies and the wait alone (:func:`copies_and_wait`)."""
        return ratio_samples(self.ours, self.floor, TARGET_SECONDS)

    track_decode_step_ratio_to_copies_floor.unit = "ratio"  # type: ignore[attr-defined]


# asv's forkserver parent imports this module once and forks a child per benchmark: the
# peer is loaded there, once.  A process that imports it for another reason (the project's
# tests collect it) says so: the stand-in ``vllm`` package the texts load would stay in its
# ``sys.modules`` and look, to every later check of that process, like an installed vLLM.
if os.environ.get("OUTPUTS_BENCH_WARM_PEER", "1") != "0":
    _warm_peer()
