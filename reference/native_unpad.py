"""Unpadding as a C loop that builds the Python lists itself, built at run time.

Every way of unpadding from Python pays for each step twice: numpy (or torch)
works out what to keep, then a second pass turns the survivors into Python ints
and cuts them into rows, and each of those costs a few microseconds of fixed
per-call overhead before any element is touched (most of the 17.7 us a batch
of 32 requests with up to 8 drafts each took on a 2-core box).  The loop below
reads the padded batch once and puts each kept id into its row's list directly:
one call, one pass, no temporary arrays.  It calls the Python C API, so it runs through
``ctypes.PyDLL`` (the GIL held, a Python error raised); the few functions it
uses are declared here from the stable ABI rather than taken from ``Python.h``,
so it builds wherever a C compiler is, with no Python headers installed.

:func:`build` raises where it does not build or load; its caller
(:mod:`reference.compiled_unpad`) then keeps the numpy path.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import torch

from reference import native_build

__all__ = ["build"]

_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>

/* The stable ABI's functions this file uses (Python.h need not be installed). */
typedef struct _object PyObject;
PyObject *PyList_New(ptrdiff_t size);
int PyList_SetItem(PyObject *list, ptrdiff_t index, PyObject *item);
int PyList_SetSlice(PyObject *list, ptrdiff_t low, ptrdiff_t high, PyObject *items);
PyObject *PyLong_FromLongLong(long long value);
void Py_DecRef(PyObject *object);

/* A kept id is not the placeholder -1 and, with a limit (limit >= 0), below it. */
#define KEEP(t) ((t) != -1 && (limit < 0 || (t) < limit))

/* Each row counted first, so its list is made at its final size and filled
   in place (no appends, no resizing). */
#define UNPAD_ROWS(T)                                                          \
    for (int64_t r = 0; r < rows; ++r) {                                       \
        const T *row = (const T *)data + r * row_stride;                       \
        int64_t kept = 0;                                                      \
        for (int64_t c = 0; c < width; ++c) {                                  \
            kept += KEEP(row[c * col_stride]);                                 \
        }                                                                      \
        PyObject *ids = PyList_New(kept);                                      \
        if (ids == NULL) goto fail;                                            \
        PyList_SetItem(out, r, ids); /* out owns it from here */               \
        int64_t i = 0;                                                         \
        for (int64_t c = 0; c < width && i < kept; ++c) {                     \
            const T t = row[c * col_stride];                                   \
            if (KEEP(t)) {                                                     \
                PyObject *id = PyLong_FromLongLong((long long)t);              \
                if (id == NULL) goto fail;                                     \
                PyList_SetItem(ids, i++, id);                                  \
            }                                                                  \
        }                                                                      \
        /* Fewer the second time (memory another thread or a copy still in    \
           flight writes): drop the unfilled places, never leave a NULL. */    \
        if (i < kept && PyList_SetSlice(ids, i, kept, NULL) < 0) goto fail;    \
    }

/* rows x width ids of itemsize 4 or 8 at data, strides in elements; a list of
   rows, each the list of its kept ids as Python ints; NULL with a Python error
   set when memory runs out (a list holds NULLs until filled: freeing it is safe). */
PyObject *unpad(const void *data, int64_t rows, int64_t width, int64_t row_stride,
                int64_t col_stride, int itemsize, int64_t limit) {
    PyObject *out = PyList_New(rows);
    if (out == NULL) return NULL;
    if (itemsize == 4) {
        UNPAD_ROWS(int32_t)
    } else {
        UNPAD_ROWS(int64_t)
    }
    return out;
fail:
    Py_DecRef(out);
    return NULL;
}
"""

#: No -march=native: the loop is a compare and a call per id, nothing to vectorise.
_FLAGS = ("-O2", "-std=c99")
#: The dtypes the loop reads, by their item size.
_ITEM_SIZES = {torch.int32: 4, torch.int64: 8}
#: Beyond any int64 id: no limit to apply.
_INT64_MAX = (1 << 63) - 1

Unpad = Callable[[torch.Tensor, "int | None"], "list[list[int]] | None"]


def build() -> Unpad:
    """Compile and load the loop; the returned unpad takes a 2-D int32 or int64
    tensor on any device (read on the host) and ``vocab_size`` (None or >= 1), and
    returns None for any other dtype (its caller unpads those its own way)."""
    kernel = _compiled_kernel()

    def unpad(sampled: torch.Tensor, vocab_size: int | None) -> list[list[int]] | None:
        item_size = _ITEM_SIZES.get(sampled.dtype)
        if item_size is None:
            return None
        if not sampled.is_cpu:
            sampled = sampled.cpu()
        rows, width = sampled.shape
        row_stride, col_stride = sampled.stride()
        # Any view torch makes lies within its storage, strides included: the loop
        # reads only the entries the tensor holds.  ``sampled`` stays alive here.
        limit = -1 if vocab_size is None or vocab_size > _INT64_MAX else vocab_size
        return kernel(sampled.data_ptr(), rows, width, row_stride, col_stride, item_size, limit)

    return unpad


def _compiled_kernel() -> Callable[..., list[list[int]]]:
    library = native_build.load(_SOURCE, "the list builder", _FLAGS, loader=ctypes.PyDLL)
    kernel = library.unpad
    kernel.argtypes = [ctypes.c_void_p, *[ctypes.c_int64] * 4, ctypes.c_int, ctypes.c_int64]
    # A new reference: ctypes takes it over without adding one of its own.
    kernel.restype = ctypes.py_object
    return kernel
