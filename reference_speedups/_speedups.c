/* The reference's two hot loops in C, built once when the package is installed.

   They read memory a torch tensor owns, handed over as an address with its shape
   and strides (the Python side, reference_speedups/__init__.py, checks dtype,
   device and layout first), or a numpy array through the buffer protocol: no torch
   or numpy headers are needed to build this.

   unpad:          a padded batch of sampled ids -> one list of Python ints per row
                   (unpad_buffer: the same of an array read by the buffer protocol),
                   dropping the placeholder -1 and, with a limit, ids >= it (or, with
                   keep_all, every entry: the one-token rows vLLM hands over as
                   they are).  Each list made at its final size.
   Token ids below VOCAB_IDS are one int object each for the life of the process,
   made the first time the id is sampled: a row then costs its list and a reference
   per id, not an allocation per id (most of a large step's time).  Python ints are
   immutable, so sharing them is invisible to the lists' readers, and the scheduler's
   token lists that keep them hold a pointer per token, not a 28-byte int.
   count_at_least: per row, how many float32 entries are >= the row's value: the
                   rank count of gathering logprobs.  The GIL is released; the
                   Python side splits large batches over threads. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A kept id is not the placeholder -1 and, with a limit (limit >= 0), below it;
   with keep_all, every entry is. */
#define KEEP(t) (keep_all || ((t) != -1 && (limit < 0 || (long long)(t) < limit)))

/* Ids from 0 up to here share one int object each: every vocabulary in use (Gemma's
   262,144 the largest) fits, and the table is at most 2 MiB of pointers, its pages
   touched only where ids were sampled. */
#define VOCAB_IDS (1 << 18)
static PyObject **vocab_ids = NULL;

/* A new reference to the int ``t``: the shared one for a vocabulary id. */
static PyObject *
token_id(long long t)
{
    if (t < 0 || t >= VOCAB_IDS) return PyLong_FromLongLong(t);
    if (vocab_ids == NULL) {
        vocab_ids = PyMem_RawCalloc(VOCAB_IDS, sizeof(PyObject *));
        if (vocab_ids == NULL) return PyLong_FromLongLong(t);
    }
    PyObject *id = vocab_ids[t];
    if (id == NULL) {
        id = PyLong_FromLongLong(t);
        if (id == NULL) return NULL;
        vocab_ids[t] = id; /* the table's reference, never released */
    }
    Py_INCREF(id);
    return id;
}

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
                PyObject *id = token_id((long long)t);                         \
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

/* The rows as lists (see the top of the file); strides in elements, itemsize 4
   (int32) or 8 (int64), limit -1 for none. */
static PyObject *
unpad_rows(const void *data, long long rows, long long width, long long row_stride,
           long long col_stride, long long itemsize, long long limit, int keep_all)
{
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

/* unpad(address, rows, width, row_stride, col_stride, itemsize, limit): memory a
   torch tensor owns, strides in elements. */
static PyObject *
unpad(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long long a[7];
    if (int_args(args, nargs, 7, a) < 0) return NULL;
    return unpad_rows((const void *)(uintptr_t)a[0], a[1], a[2], a[3], a[4], a[5], a[6], 0);
}

/* A buffer format of native signed integers of 4 or 8 bytes: "i", "l", "q" (numpy's
   int32 and int64), with or without the native "@" in front. */
static int
native_signed(const char *format, Py_ssize_t itemsize)
{
    if (format == NULL || (itemsize != 4 && itemsize != 8)) return 0;
    if (format[0] == '@') ++format;
    return format[0] != '\0' && format[1] == '\0' &&
           (format[0] == 'i' || format[0] == 'l' || format[0] == 'q');
}

/* unpad_buffer(array, limit, keep_all): a 2-D array of native int32 or int64 read
   through the buffer protocol (a numpy array), or None for any other array (another
   dtype, byte order or rank, strides between items): the caller converts it itself.
   One call, where reading an array's address, dtype and strides from Python costs
   more than the rows of a small step. */
static PyObject *
unpad_buffer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "expected 3 arguments, got %zd", nargs);
        return NULL;
    }
    const long long limit = PyLong_AsLongLong(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    const int keep_all = PyObject_IsTrue(args[2]);
    if (keep_all < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        /* An array whose dtype numpy does not export (datetime64, StringDType), or no
           buffer at all: another array, not an error. */
        if (PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_BufferError) ||
            PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        return NULL;
    }
    PyObject *out;
    const Py_ssize_t size = view.itemsize;
    if (view.ndim != 2 || !native_signed(view.format, size) || view.strides[0] % size ||
        view.strides[1] % size) {
        out = Py_NewRef(Py_None);
    } else {
        out = unpad_rows(view.buf, view.shape[0], view.shape[1], view.strides[0] / size,
                         view.strides[1] / size, size, limit, keep_all);
    }
    PyBuffer_Release(&view);
    return out;
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
    {"unpad_buffer", (PyCFunction)(void (*)(void))unpad_buffer, METH_FASTCALL,
     "unpad_buffer(array, limit, keep_all) -> list[list[int]] | None"},
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
