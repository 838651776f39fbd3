"""A simulated runtime of the backend's first accelerator, for the methods vLLM calls on
device tensors (``to_cpu_nonblocking``, ``tolists``): judged where no such device is
present too, as the producers are (:mod:`conformance.producers.simulated_device`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from conformance.checks._skips import skip
from conformance.oracle.failing import attempt


def simulated_kind(backend: Any) -> str:
    """The accelerator the backend's types are handed tensors of: its first declared one,
    cuda for a bare module (which declares none); a backend declaring cpu only is never
    handed device tensors."""
    declared = [d for d in backend.devices if d != "cpu"]
    if declared:
        return declared[0]
    if backend.devices_declared:
        skip(
            "device-not-declared",
            "the backend declares cpu only: vLLM hands its LogprobsTensors no device tensors",
        )
    return "cuda"


def simulation_lacks(error: BaseException, kind: str) -> bool:
    """Whether ``error`` is the simulated runtime's limit, not the backend's: a name its
    ``torch.<kind>`` lacks, or torch refusing what only real hardware gives (pinned memory,
    a CUDA build)."""
    text = str(error)
    return (isinstance(error, AttributeError) and text.startswith(f"module 'torch.{kind}'")) or any(
        words in text
        for words in ("compiled with CUDA", "compiled without CUDA", "pin_memory", "no CUDA GPUs")
    )


def tolists_on_simulated_device(
    backend: Any, LogprobsTensors: Any, tensors: tuple[torch.Tensor, ...]
) -> tuple[Any, str]:
    """``LogprobsTensors(*tensors).tolists()`` with the tensors on the simulated
    accelerator (vLLM's synchronous path converts the sampler's device tensors itself),
    and how a message names the call."""
    from conformance.producers.simulated_device import SimulatedRuntime, installed

    kind = simulated_kind(backend)
    rows, width = tensors[0].shape
    where = f"LogprobsTensors(<{rows}x{width} on a simulated {kind}>).tolists()"
    names = ("logprob_token_ids", "logprobs", "sampled_token_ranks")
    with installed(SimulatedRuntime(kind)) as runtime, runtime.device_factories():
        given = [runtime.device_tensor(t, n) for n, t in zip(names, tensors, strict=True)]
        made = attempt(f"LogprobsTensors(<on a simulated {kind}>)", LogprobsTensors, *given)
        return called_on_simulation(made.tolists, kind, where), where


def called_on_simulation(call: Callable[[], Any], kind: str, where: str) -> Any:
    """``call()``: skipped where it needs what the simulated runtime lacks, failed naming
    the backend's line where it raises otherwise."""
    try:
        return call()
    except Exception as error:
        if simulation_lacks(error, kind):
            skip(
                "inconclusive",
                f"{where}: uses what the simulated {kind} runtime lacks ({error}); "
                "judged on a real device only",
            )
        return attempt(where, call)


def late_copies(runtime: Any, holder: Any = None) -> list[str]:
    """What the simulated runtime (None: a real device) saw of the copies a producer read
    or handed over before their wait, each naming the copy and, where read, the line and
    what to wait for; ``holder`` (the async output) names those it handed over unwaited."""
    from conformance.producers.simulated_device import what_to_wait_for

    if runtime is None:
        return []
    early = runtime.early_reads()
    unwaited = [
        (line, event)
        for label, line, event in runtime.unwaited_copies(holder)
        if f"{label} read before its copy arrived" not in early
    ]
    seen = [*runtime.unordered_reads(), *runtime.early_read_details()]
    seen += [line for line, _ in unwaited]
    if unwaited and not early:
        # An early read says what to wait for; else the first copy handed over unwaited.
        seen.append(f"wait first for {what_to_wait_for(unwaited[0][1])}")
    return seen
