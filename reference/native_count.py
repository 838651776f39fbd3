"""The rank count on CPU as a C loop, built at run time by the machine's C compiler.

Counting, per row, the entries ``>=`` the sampled token's logprob is one compare
and one add per entry.  inductor's CPU code for ``(x >= v).sum(-1)`` turns each
vector compare's mask into integers with a blend (about five vector instructions
per 16 entries), which runs at half the speed of a plain read wherever the batch
sits in cache (64 rows over a 32000 or 151936 vocabulary); vLLM's compiled count
is the same code.  The loop below, vectorised by the compiler, subtracts each
compare's all-ones lanes from its counts: it runs at the speed of a plain read at
every size, cached or not.  It builds in a tenth of a second, with
``-march=native`` (the process that builds it is the one that runs it) and
OpenMP, whose runtime is the one torch already loaded where torch uses libgomp.

:func:`build` raises where there is no C compiler with OpenMP; its caller
(:mod:`reference.compiled_ranks`) then compiles with ``torch.compile`` instead.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import torch

from reference import native_build

__all__ = ["build"]

_SOURCE = r"""
#include <stdint.h>

/* counts[r] = how many of the width entries of row r are >= values[r]. */
void count_at_least(const float *rows, const float *values, int64_t *counts,
                    int64_t num_rows, int64_t width, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1)
    for (int64_t r = 0; r < num_rows; ++r) {
        const float *row = rows + r * width;
        const float value = values[r];
        /* int32 lanes: twice as many per vector as int64; the caller keeps the
           width below 2^31.  A NaN on either side compares false, as in torch. */
        int32_t count = 0;
        for (int64_t i = 0; i < width; ++i) {
            count += row[i] >= value;
        }
        counts[r] = count;
    }
}
"""

#: -O3: gcc vectorises a reduction like this one from -O3 on.  No -ffast-math: the
#: compares must keep IEEE semantics (NaN, infinities, signed zeros).
_FLAGS = ("-O3", "-march=native", "-fopenmp", "-std=c99")
#: A width the int32 count above always holds.
_MAX_WIDTH = (1 << 31) - 1


def build() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor | None]:
    """Compile and load the loop; the returned count takes contiguous float32 CPU
    ``[rows, width]`` logprobs with one float32 value per row (``[rows, 1]``) and
    returns None for any other call (its caller counts those its own way)."""
    kernel = _compiled_kernel()

    def count(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> torch.Tensor | None:
        rows, width = logprobs.shape
        if (
            logprobs.device.type != "cpu"
            or logprobs.dtype != torch.float32
            or not logprobs.is_contiguous()
            or width > _MAX_WIDTH
            or token_logprobs.shape != (rows, 1)
            or token_logprobs.dtype != torch.float32
            or token_logprobs.device.type != "cpu"
        ):
            return None
        values = token_logprobs.contiguous()
        counts = torch.empty(rows, dtype=torch.int64)
        # ctypes hands the GIL back for the call: other Python threads run meanwhile.
        kernel(
            logprobs.data_ptr(),
            values.data_ptr(),
            counts.data_ptr(),
            rows,
            width,
            min(torch.get_num_threads(), rows),
        )
        return counts

    return count


def _compiled_kernel() -> Callable[..., None]:
    kernel = native_build.load(_SOURCE, "the count", _FLAGS).count_at_least
    kernel.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_int]
    kernel.restype = None
    return kernel
