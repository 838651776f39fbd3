"""Faster paths for the reference's hot loops, kept apart from its rules.

The reference (:mod:`reference`) says what each operation returns; this package
only makes them cheaper, and gives the same values:

* :func:`unpad`: a padded batch of sampled ids into one list of Python ints per row
  (``reference.unpad_sampled_token_ids``, every decode step; :func:`unpad_array` for
  a host copy already read as a numpy array, as the async output reads it, and
  :func:`rows_array` for one-token rows kept whole), each vocabulary id one shared
  int object rather than a new one per row;
* :func:`count_at_least`: per row, how many logprobs are ``>=`` the sampled token's
  (the rank count of ``reference.gather_logprobs``, the whole ``[rows, vocab]`` batch).

Both are a C extension, ``reference_speedups._speedups``, built once when the
package is installed (``setup.py``), the way MarkupSafe and PyYAML ship theirs: no
compiler runs when the reference is used.  Where it was not built (no C compiler at
install time) or ``$OUTPUTS_REFERENCE_SPEEDUPS=0`` is set, both return None and the
reference takes its pure Python path.  :func:`path` says which one is in use.

On a device Triton serves (a CUDA or ROCm GPU), :func:`gather` runs the whole of
``reference.gather_logprobs`` as two Triton kernels that read each row once
(:mod:`reference_speedups.fused_gather`), where Triton is installed (it comes with
torch's GPU builds).  :func:`to_host` is the unpadding's one read of a device batch,
on every path: on cuda a copy into pinned memory, which the driver need not stage.
Elsewhere the rank count can also be compiled at run time by
``torch.compile`` (:mod:`reference_speedups.compiled_count`), only in a process that
asks for it (the benchmarks do; a conformance run does not).  ``$OUTPUTS_REFERENCE_SPEEDUPS=0``
turns every faster path off.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import pairwise
from types import ModuleType

import numpy as np
import torch

from reference_speedups import compiled_count

__all__ = [
    "SWITCH",
    "count_at_least",
    "gather",
    "path",
    "rows_array",
    "to_host",
    "unpad",
    "unpad_array",
]

#: The environment variable that keeps the pure Python paths (``0``), read at import.
SWITCH = "OUTPUTS_REFERENCE_SPEEDUPS"


def _switched_off() -> bool:
    return os.environ.get(SWITCH, "1") == "0"


def _load() -> tuple[ModuleType | None, str]:
    if _switched_off():
        return None, f"pure Python (${SWITCH}=0)"
    try:
        import reference_speedups._speedups as _speedups
    except ImportError as error:
        return None, f"pure Python: the C extension was not built at install ({error})"
    return _speedups, "C extension (built at install)"


#: The extension, or None: the pure Python paths (a test swaps it to see both).
_EXT, _WHY = _load()

#: Unpadding batches of at least this many ids goes through the extension: below it a
#: row or two converted in Python costs as little as the call.
UNPAD_MIN_ELEMENTS = 16
#: Counts of at least this many entries go through the extension: from a few
#: thousand entries on it beats numpy's compare-and-count, one row included.
COUNT_MIN_ELEMENTS = 1 << 13
#: Counts of at least this many entries are split over torch's intra-op threads.
_PARALLEL_ELEMENTS = 1 << 20
#: The dtypes the unpadding loop reads, by their item size.
_ITEM_SIZES = {torch.int32: 4, torch.int64: 8}
#: Beyond any int64 id: no limit to apply.
_INT64_MAX = (1 << 63) - 1
_MAX_WIDTH = (1 << 31) - 1


def path() -> str:
    """Which path the reference's hot loops take here, in words: the CPU's, and each
    other device's run-time compiled count where one was built or tried."""
    cpu = _WHY if _EXT is None else "C extension (built at install)"
    others = "".join(f"; {device}: {state}" for device, state in compiled_count.states().items())
    fused = ""
    if _FUSED_FAILURE:
        fused = f"; gathering on GPUs: torch (the fused Triton kernels failed: {_FUSED_FAILURE[0]})"
    elif _fused_gathering():
        fused = "; gathering on GPUs: fused Triton kernels"
    return cpu + others + fused


#: Device types whose tensors Triton's kernels run on.
_TRITON_DEVICES = ("cuda",)
#: Why the fused gathering was given up in this process (empty while it serves).
_FUSED_FAILURE: list[str] = []


def gather(
    logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor, *, of_logits: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """``reference.gather_logprobs``' three tensors (``gather_logprobs_of_logits``' with
    ``of_logits``) from the fused Triton kernels, or None
    where they do not take the call (the caller gathers it itself): not a device Triton
    serves, no Triton, a top-k wider than the kernels keep, the speed-ups switched off.

    The arguments are checked already; the results are the same tensors (ties among the
    top-k aside, see :mod:`reference_speedups.fused_gather`).
    """
    if logprobs.device.type not in _TRITON_DEVICES:
        return None
    fused = _fused_gathering()
    if (
        fused is None
        or _FUSED_FAILURE
        or num_logprobs > fused.MAX_NUM_LOGPROBS
        or logprobs.shape[1] >= 2**31 - 256
    ):
        return None
    try:
        return fused.fused_gather(logprobs, num_logprobs, token_ids, normalise=of_logits)
    except _DEVICE_ERRORS:
        # Out of memory, or the device itself failed: torch's way would meet the same.
        raise
    except Exception as error:  # a Triton, ptxas or driver it cannot build or launch with
        _give_up_fused_gathering(error)
        return None


#: Errors of the device, not of the kernels' build or launch: never a reason to give the
#: kernels up (torch's way allocates more, and a device error is sticky).
_DEVICE_ERRORS: tuple[type[BaseException], ...] = (torch.OutOfMemoryError,) + (
    (torch.AcceleratorError,) if hasattr(torch, "AcceleratorError") else ()
)
_FUSED_FAILURE_LOCK = threading.Lock()


def _give_up_fused_gathering(error: Exception) -> None:
    """Torch's way from here on in this process, said once (threads failing together too).

    The reference stays usable on a machine whose Triton cannot run these kernels (a
    version that compiles them otherwise, a GPU it lacks resources on)."""
    first_line = (str(error).strip().splitlines() or [""])[0][:300]
    with _FUSED_FAILURE_LOCK:
        if _FUSED_FAILURE:
            return
        _FUSED_FAILURE.append(f"{type(error).__name__}: {first_line}")
    warnings.warn(
        f"reference_speedups: the fused Triton gathering failed ({_FUSED_FAILURE[0]}); "
        f"gathering with torch from now on in this process (${SWITCH}=0 skips the "
        "kernels from the start)",
        RuntimeWarning,
        stacklevel=3,
    )


@cache
def _fused_gathering() -> ModuleType | None:
    """:mod:`reference_speedups.fused_gather`, where Triton imports and a GPU is present."""
    if _switched_off() or importlib.util.find_spec("triton") is None:
        return None
    if not torch.cuda.is_available():
        return None
    try:
        from reference_speedups import fused_gather
    except Exception as error:  # a Triton installed but broken: a missing library, an ABI
        _give_up_fused_gathering(error)
        return None
    return fused_gather


def unpad(sampled: torch.Tensor, vocab_size: int | None) -> list[list[int]] | None:
    """The rows of the 2-D integer ``sampled`` without the placeholder ``-1`` (and ids
    ``>= vocab_size``), as Python ints; None where the extension does not take the
    call (not built, another dtype, a small batch): the caller unpads it itself."""
    ext = _EXT
    item_size = _ITEM_SIZES.get(sampled.dtype)
    if ext is None or item_size is None or sampled.numel() < UNPAD_MIN_ELEMENTS:
        return None
    if not sampled.is_cpu:
        sampled = to_host(sampled)
    rows, width = sampled.shape
    row_stride, col_stride = sampled.stride()
    # Any view torch makes lies within its storage, strides included: the loop reads
    # only the entries the tensor holds, and ``sampled`` stays alive during the call.
    limit = -1 if vocab_size is None or vocab_size > _INT64_MAX else vocab_size
    rows_out: list[list[int]] = ext.unpad(
        sampled.data_ptr(), rows, width, row_stride, col_stride, item_size, limit
    )
    return rows_out


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` copied to the host, the copy finished: as ``tensor.cpu()``, in one
    direct copy where the device allows it.

    ``.cpu()`` copies into pageable memory, which CUDA stages: a DMA into a driver
    buffer, a host copy out of it, then the wait.  For the few hundred bytes of a
    decode step's sampled ids that staging is most of the call (the first H200 run's
    link: 4 KB in 24 us pageable, 11 us pinned).  A pinned destination from torch's
    caching host allocator (reused from the second call of a size on) takes one DMA;
    ``copy_`` without ``non_blocking`` queues it on the current stream and waits for
    that stream, as ``.cpu()`` does.  ``empty_like`` keeps a dense source's strides, as
    ``.cpu()`` does, so it needs no device-side copy first.  Only plain cuda tensors
    (ROCm's included): a subclass (the suite's simulated devices) or another device
    keeps ``.cpu()``.
    """
    # is_cuda, not device.type: no torch.device object made (~0.2 us a call).
    if type(tensor) is torch.Tensor and tensor.is_cuda:
        host = torch.empty_like(tensor, device="cpu", pin_memory=True)
        return host.copy_(tensor)
    return tensor.cpu()


def unpad_array(sampled: np.ndarray, vocab_size: int | None) -> list[list[int]] | None:
    """:func:`unpad` of a 2-D host numpy array, at any size, without a torch call: for a
    caller that already holds the host copy as an array (the async output reads its
    copy once with ``.numpy()``; on a runtime whose tensors dispatch in Python, each
    torch call on the copy costs microseconds).  None where the extension does not take
    the array (not built, not int32/int64 in native byte order, strides between items):
    the caller unpads it itself."""
    limit = -1 if vocab_size is None or vocab_size > _INT64_MAX else vocab_size
    return _array_rows(sampled, limit, keep_all=False)


def rows_array(sampled: np.ndarray) -> list[list[int]] | None:
    """``sampled.tolist()`` of a 2-D host numpy array of ids, every entry kept (the
    one-token rows vLLM hands over as they are), with the extension's shared ints for
    vocabulary ids: a list per row and no int made per id.  None where the extension
    does not take the array (see :func:`unpad_array`)."""
    return _array_rows(sampled, -1, keep_all=True)


def _array_rows(sampled: np.ndarray, limit: int, *, keep_all: bool) -> list[list[int]] | None:
    ext = _EXT
    if ext is None:
        return None
    # The array itself, read through the buffer protocol, which also says its dtype,
    # byte order and strides (None for those the loop does not read): checking them
    # here, or reading ``sampled.ctypes``, costs more than a one-request step's rows.
    rows_out: list[list[int]] | None = ext.unpad_buffer(sampled, limit, keep_all)
    return rows_out


def count_at_least(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor | None:
    """int64 ``[rows]``: per row of the float32 ``logprobs`` ``[rows, width]``, how many
    entries are ``>=`` the row's ``token_logprobs`` ``[rows, 1]``.  None where no faster
    path takes the call (the caller counts it itself): on CPU the extension, elsewhere
    (or on a CPU without it) a ``torch.compile``'d count where the process allows
    run-time builds."""
    ext = _EXT
    if (
        ext is None
        or logprobs.device.type != "cpu"
        or logprobs.dtype != torch.float32
        or token_logprobs.dtype != torch.float32
        or logprobs.dim() != 2
        or not logprobs.is_contiguous()
        or logprobs.numel() < COUNT_MIN_ELEMENTS
        or logprobs.shape[1] > _MAX_WIDTH
        or token_logprobs.shape != (logprobs.shape[0], 1)
        or token_logprobs.device.type != "cpu"
    ):
        return compiled_count.compiled_count(logprobs, token_logprobs)
    rows, width = logprobs.shape
    values = token_logprobs.contiguous()
    counts = torch.empty(rows, dtype=torch.int64)
    base, value_base, count_base = logprobs.data_ptr(), values.data_ptr(), counts.data_ptr()
    parts = min(torch.get_num_threads(), rows)
    if parts < 2 or logprobs.numel() < _PARALLEL_ELEMENTS:
        ext.count_at_least(base, value_base, count_base, rows, width)
        return counts
    # The extension releases the GIL: blocks of rows count in parallel.
    bounds = [rows * i // parts for i in range(parts + 1)]

    def block(span: tuple[int, int]) -> None:
        start, end = span
        ext.count_at_least(
            base + 4 * start * width, value_base + 4 * start, count_base + 8 * start,
            end - start, width,
        )  # fmt: skip

    list(_pool(parts).map(block, pairwise(bounds)))
    return counts


@cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="reference-speedups")
