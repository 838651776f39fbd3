/* The reference's two hot loops in C, built once when the package is installed.

   Both read memory a torch tensor owns, handed over as an address with its shape
   and strides (the Python side, reference_speedups/__init__.py, checks dtype,
   device and layout first): no torch or numpy headers are needed to build this.

   unpad:          a padded batch of sampled ids -> one list of Python ints per row,
                   dropping the placeholder -1 and, with a limit, ids >= it.  One
                   pass, each list made at its final size.
   count_at_least: per row, how many float32 entries are >= the row's value: the
                   rank count of gathering logprobs.  The GIL is released; the
                   Python side splits large batches over threads. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A kept id is not the placeholder -1 and, with a limit (limit >= 0), below it. */
#define KEEP(t) ((t) != -1 && (limit < 0 || (long long)(t) < limit))

/* Each row counted first, so its list is made at its final size and filled in
   place.  A second pass that finds fewer (memory a copy still in flight writes)
   drops the unfilled places: a list never keeps a NULL. */
#define UNPAD_ROWS(T)                                                          \
    for (long long r = 0; r < rows; ++r) {                                     \
        const T *row = (const T *)data + r * row_stride;                       \
        Py_ssize_t kept = 0;                                                   \
        for (long long c = 0; c < width; ++c) {                                \
            kept += KEEP(row[c * col_stride]);                                 \
        }                                                                      \
        PyObject *ids = PyList_New(kept);                                      \
        if (ids == NULL) goto fail;                                            \
        PyList_SET_ITEM(out, r, ids);                                          \
        Py_ssize_t i = 0;                                                      \
        for (long long c = 0; c < width && i < kept; ++c) {                    \
            const T t = row[c * col_stride];                                   \
            if (KEEP(t)) {                                                     \
                PyObject *id = PyLong_FromLongLong((long long)t);              \
                if (id == NULL) goto fail;                                     \
                PyList_SET_ITEM(ids, i++, id);                                 \
            }                                                                  \
        }                                                                      \
        if (i < kept && PyList_SetSlice(ids, i, kept, NULL) < 0) goto fail;    \
    }

static int
int_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t wanted, long long *out)
{
    if (nargs != wanted) {
        PyErr_Format(PyExc_TypeError, "expected %zd arguments, got %zd", wanted, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; ++i) {
        out[i] = PyLong_AsLongLong(args[i]);
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* unpad(address, rows, width, row_stride, col_stride, itemsize, limit): strides in
   elements, itemsize 4 (int32) or 8 (int64), limit -1 for none. */
static PyObject *
unpad(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long long a[7];
    if (int_args(args, nargs, 7, a) < 0) return NULL;
    const void *data = (const void *)(uintptr_t)a[0];
    const long long rows = a[1], width = a[2], row_stride = a[3], col_stride = a[4];
    const long long itemsize = a[5], limit = a[6];
    if (itemsize != 4 && itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "itemsize must be 4 or 8");
        return NULL;
    }
    PyObject *out = PyList_New(rows);
    if (out == NULL) return NULL;
    if (itemsize == 4) {
        UNPAD_ROWS(int32_t)
    } else {
        UNPAD_ROWS(int64_t)
    }
    return out;
fail:
    Py_DECREF(out); /* a list still holding NULLs is freed safely */
    return NULL;
}

/* One build that picks the widest vector unit of the machine it runs on, where the
   compiler can make per-ISA clones (GCC and clang on x86-64 Linux); elsewhere the
   compiler's baseline, which still vectorises the loop. */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PER_ISA __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef PER_ISA
#define PER_ISA
#endif

PER_ISA static void
count_rows(const float *rows, const float *values, int64_t *counts,
           long long num_rows, long long width)
{
    for (long long r = 0; r < num_rows; ++r) {
        const float *row = rows + r * width;
        const float value = values[r];
        /* int32 lanes: twice as many per vector as int64 (the caller keeps the width
           below 2^31).  A NaN on either side compares false, as in torch. */
        int32_t count = 0;
        for (long long i = 0; i < width; ++i) {
            count += row[i] >= value;
        }
        counts[r] = count;
    }
}

/* count_at_least(rows, values, counts, num_rows, width): addresses of contiguous
   float32 [num_rows, width], float32 [num_rows] and int64 [num_rows]. */
static PyObject *
count_at_least(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long long a[5];
    if (int_args(args, nargs, 5, a) < 0) return NULL;
    if (a[4] > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "width must be below 2**31");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    count_rows((const float *)(uintptr_t)a[0], (const float *)(uintptr_t)a[1],
               (int64_t *)(uintptr_t)a[2], a[3], a[4]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"unpad", (PyCFunction)(void (*)(void))unpad, METH_FASTCALL,
     "unpad(address, rows, width, row_stride, col_stride, itemsize, limit) -> list[list[int]]"},
    {"count_at_least", (PyCFunction)(void (*)(void))count_at_least, METH_FASTCALL,
     "count_at_least(rows, values, counts, num_rows, width) -> None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "The reference's hot loops in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
