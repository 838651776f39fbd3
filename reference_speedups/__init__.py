"""Faster paths for two of the reference's hot loops, kept apart from its rules.

The reference (:mod:`reference`) says what each operation returns; this package
only makes two of them cheaper, and gives the same values:

* :func:`unpad`: a padded batch of sampled ids into one list of Python ints per row
  (``reference.unpad_sampled_token_ids``, every decode step; :func:`unpad_array` for
  a host copy already read as a numpy array, as the async output reads it);
* :func:`count_at_least`: per row, how many logprobs are ``>=`` the sampled token's
  (the rank count of ``reference.gather_logprobs``, the whole ``[rows, vocab]`` batch).

Both are a C extension, ``reference_speedups._speedups``, built once when the
package is installed (``setup.py``), the way MarkupSafe and PyYAML ship theirs: no
compiler runs when the reference is used.  Where it was not built (no C compiler at
install time) or ``$OUTPUTS_REFERENCE_SPEEDUPS=0`` is set, both return None and the
reference takes its pure Python path.  :func:`path` says which one is in use.

On devices other than the CPU the rank count can also be compiled at run time by
``torch.compile`` (:mod:`reference_speedups.compiled_count`), only in a process that
asks for it (the benchmarks do; a conformance run does not).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import pairwise
from types import ModuleType

import numpy as np
import torch

from reference_speedups import compiled_count

__all__ = ["SWITCH", "count_at_least", "path", "unpad", "unpad_array"]

#: The environment variable that keeps the pure Python paths (``0``), read at import.
SWITCH = "OUTPUTS_REFERENCE_SPEEDUPS"


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(SWITCH, "1") == "0":
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
    return cpu + others


def unpad(sampled: torch.Tensor, vocab_size: int | None) -> list[list[int]] | None:
    """The rows of the 2-D integer ``sampled`` without the placeholder ``-1`` (and ids
    ``>= vocab_size``), as Python ints; None where the extension does not take the
    call (not built, another dtype, a small batch): the caller unpads it itself."""
    ext = _EXT
    item_size = _ITEM_SIZES.get(sampled.dtype)
    if ext is None or item_size is None or sampled.numel() < UNPAD_MIN_ELEMENTS:
        return None
    if not sampled.is_cpu:
        sampled = sampled.cpu()
    rows, width = sampled.shape
    row_stride, col_stride = sampled.stride()
    # Any view torch makes lies within its storage, strides included: the loop reads
    # only the entries the tensor holds, and ``sampled`` stays alive during the call.
    limit = -1 if vocab_size is None or vocab_size > _INT64_MAX else vocab_size
    rows_out: list[list[int]] = ext.unpad(
        sampled.data_ptr(), rows, width, row_stride, col_stride, item_size, limit
    )
    return rows_out


def unpad_array(sampled: np.ndarray, vocab_size: int | None) -> list[list[int]] | None:
    """:func:`unpad` of a 2-D host numpy array, at any size, without a torch call: for a
    caller that already holds the host copy as an array (the async output reads its
    copy once with ``.numpy()``; on a runtime whose tensors dispatch in Python, each
    torch call on the copy costs microseconds).  None where the extension does not take
    the array (not built, not int32/int64 in native byte order, strides between items):
    the caller unpads it itself."""
    ext = _EXT
    item_size = sampled.itemsize
    if (
        ext is None
        or sampled.ndim != 2
        or sampled.dtype.kind != "i"
        or item_size not in (4, 8)
        or not sampled.dtype.isnative
    ):
        return None
    row_stride, col_stride = sampled.strides
    if row_stride % item_size or col_stride % item_size:
        return None
    rows, width = sampled.shape
    # The loop reads only the entries the array holds, and ``sampled`` stays alive
    # during the call.
    limit = -1 if vocab_size is None or vocab_size > _INT64_MAX else vocab_size
    rows_out: list[list[int]] = ext.unpad(
        sampled.ctypes.data,
        rows,
        width,
        row_stride // item_size,
        col_stride // item_size,
        item_size,
        limit,
    )
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
