"""The rank count compiled at run time by ``torch.compile``, where no built path serves.

Counting, per row, the entries ``>=`` the sampled token's logprob reads the whole
``[rows, vocab]`` batch; with ``k = 0`` it is all of gathering.  On CPU the C
extension built at install counts it (:func:`reference_speedups.count_at_least`);
on another device (or a CPU without the extension) vLLM's way is to compile the
count into one pass on its first call, a compile of seconds to a minute.  This is
that compile, in a process that allows run-time builds
(:func:`reference_speedups.hot_build.allow`: the benchmarks; never a conformance
run), tiered the way JIT runtimes do, so no caller waits for it:

* every call runs eagerly (the reference's own count) until a device has seen
  :data:`HOT_CALLS` counts of at least :data:`MIN_ELEMENTS` entries in two rows or
  more (a decode loop, a benchmark; not a one-off check);
* then a background thread compiles the count for that device, warmed for the
  states a caller counts in (``no_grad`` and ``inference_mode``); inductor keeps
  what it built in its cache on disk, so the next process loads it;
* from the moment it is ready, each such call uses it.

The compiled count runs in dynamo's run-only mode: a call whose state it was not
warmed for (another stride, another thread count) is never compiled on the
caller's thread; it is counted eagerly instead.  Either way the counts are the
same integers.  While a compile runs, calls count with torch's two eager ops: each
op hands the GIL over, and the compile holds it for seconds.  A compile that fails
(no C++ compiler, no Triton) leaves its device eager for the rest of the process
and says why in :func:`states`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch

from reference_speedups.hot_build import HOT_CALLS, SWITCH, HotBuild, enabled, wait_all

__all__ = [
    "HOT_CALLS",
    "MIN_ELEMENTS",
    "SWITCH",
    "compiled_count",
    "settle",
    "states",
]

#: A device's compiled count, ``count(logprobs, token_logprobs)``: int64 counts, or
#: None for a call it does not take (the caller counts that one eagerly).
Count = Callable[[torch.Tensor, torch.Tensor], "torch.Tensor | None"]

#: Counts of at least this many entries are worth ``torch.compile``'s pass (below
#: it the eager count is as fast as the compiled call's own overhead, dynamo's guards).
MIN_ELEMENTS = 1 << 18

#: Warm-up shapes: two, so the sizes are traced as symbols; at least two rows,
#: because dynamo specialises a size of 1 (such calls stay eager, see below).
_WARM_SHAPES = ((3, 1000), (5, 1003))
#: The states a count is warmed for, (tensors made in, count called in): a plain
#: caller (counted with grad off), and vLLM's runner, whose tensors come from
#: inference mode, and a caller entering inference mode with plain tensors.
_WARM_STATES = (
    (nullcontext, torch.no_grad),
    (torch.inference_mode, torch.inference_mode),
    (nullcontext, torch.inference_mode),
)


def _count_at_least(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor | None:
    if not torch.compiler.is_compiling():
        # Run-only mode found no compiled code for this call's state and runs the
        # body as plain Python: say so, and the caller counts its own eager way.
        return None
    # int32 lanes hold any vocabulary and vectorise twice as wide as int64.
    return (logprobs >= token_logprobs).sum(-1, dtype=torch.int32).long()


#: Each device's compiled count, built once the device is hot.
_TIERS: dict[str, HotBuild[Count]] = {}
_LOCK = threading.Lock()
#: What ``torch.compile`` compiles with: inductor, or a test's stand-in.
_BACKEND: Any = "inductor"


def compiled_count(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor | None:
    """The int64 counts from the compiled tier, or None where this call runs eagerly.

    A None also counts the call towards its device's compile when it is hot.
    """
    if (
        logprobs.dtype != torch.float32
        or token_logprobs.dtype != torch.float32
        or not logprobs.is_contiguous()
        or not enabled()
        or not _worth_compiling(logprobs)
    ):
        return None
    tier = _TIERS.get(str(logprobs.device))
    if tier is not None and tier.run is not None:
        return tier.run(logprobs, token_logprobs)
    if tier is not None and tier.building:
        return (logprobs >= token_logprobs).sum(-1, dtype=torch.int32).long()
    _note_hot_call(logprobs.device)
    return None


def _worth_compiling(logprobs: torch.Tensor) -> bool:
    # Dynamo specialises a size of 1: one row would miss the compiled code.
    return logprobs.numel() >= MIN_ELEMENTS and logprobs.shape[0] >= 2


def _fresh(tensor: torch.Tensor) -> torch.Tensor:
    """A view without the marks another compiled caller left on the tensor object.

    vLLM's own compiled count marks the dimensions of the tensors it was given
    as dynamic; dynamo's guards refuse compiled code warmed on unmarked ones.
    """
    return tensor.view(tensor.shape)


def _note_hot_call(device: torch.device) -> None:
    tier = _TIERS.get(str(device))
    if tier is None:
        with _LOCK:
            tier = _TIERS.setdefault(
                str(device),
                HotBuild(functools.partial(_built, device), f"reference-count-compile-{device}"),
            )
    tier.note_hot_call()


def _built(device: torch.device) -> tuple[str, Count]:
    return "torch.compile", _torch_compiled(device)


def _torch_compiled(device: torch.device) -> Count:
    """``torch.compile`` of the count, warmed for every state, run-only from then on."""
    import torch._dynamo

    # One compile thread: a single small kernel is not worth a pool of processes.
    options: dict[str, Any] | None = {"compile_threads": 1} if _BACKEND == "inductor" else None
    compiled = torch.compile(_count_at_least, dynamic=True, backend=_BACKEND, options=options)
    for made_in, called_in in _WARM_STATES:
        for rows, vocab in _WARM_SHAPES:
            with made_in():
                logprobs = torch.randn(rows, vocab, device=device)
                token_logprobs = logprobs[:, :1].contiguous()
            with called_in():
                compiled(logprobs, token_logprobs)
    run = torch._dynamo.run(compiled)
    with torch.no_grad():
        if run(logprobs, token_logprobs) is None:
            # Dynamo compiled nothing reusable (its recompile limit, a reset):
            # every call would miss, so stay eager and say so.
            raise RuntimeError("dynamo kept no compiled code for the count")

    def count(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor | None:
        # Only the states warmed for: inference mode as it is, else grad off.
        mode = nullcontext() if torch.is_inference_mode_enabled() else torch.no_grad()
        with mode:
            return run(_fresh(logprobs), _fresh(token_logprobs.contiguous()))

    return count


def settle(timeout: float | None = None) -> dict[str, str]:
    """Wait (up to ``timeout`` seconds in all) for every compile started so far.

    For a benchmark's setup, which times steady state: vLLM's compile is paid
    there too.  Returns :func:`states`.
    """
    wait_all(_TIERS.values(), timeout)
    return states()


def states() -> dict[str, str]:
    """Each device's tier: eager (and how hot), compiling, compiled, or why it failed."""
    return {device: tier.state() for device, tier in list(_TIERS.items())}
