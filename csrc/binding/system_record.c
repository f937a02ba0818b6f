/*
 * The rows of a recording: a System's x and v copied into them (around the caches where
 * the processor can), and the check that an array does not share memory with the state.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

/* n doubles from src to dst, around the caches where the processor can (x86-64): a
   recording's rows are written once and not read while it runs, and writing them through
   the caches would first read every line of them and evict what the step works on. */
static void copy_around_caches(double* dst, const double* src, size_t n) {
#if defined(__SSE2__) || defined(_M_X64)
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 15) != 0; ++i) dst[i] = src[i];
    for (; i + 2 <= n; i += 2) _mm_stream_pd(dst + i, _mm_loadu_pd(src + i));
    for (; i < n; ++i) dst[i] = src[i];
    _mm_sfence();
#else
    memcpy(dst, src, n * sizeof(double));
#endif
}

/* The lowest and one past the highest byte an array's elements occupy. */
static void array_bounds(PyArrayObject* array, const char** low, const char** high) {
    const char* start = PyArray_BYTES(array);
    *low = *high = start;
    if (PyArray_SIZE(array) == 0) return;
    for (int d = 0; d < PyArray_NDIM(array); ++d) {
        const npy_intp reach = (PyArray_DIM(array, d) - 1) * PyArray_STRIDE(array, d);
        if (reach < 0) *low += reach;
        else *high += reach;
    }
    *high += PyArray_ITEMSIZE(array);
}

/* Whether [low, high) meets n doubles at p. */
static int meets(const char* low, const char* high, const double* p, size_t n) {
    return p != NULL && low < (const char*)(p + n) && (const char*)p < high;
}

/* Whether [low, high) meets the state's x, v, f or external force. */
static int meets_state(const SystemObject* self, const char* low, const char* high) {
    const ms_state* s = self->state;
    const size_t n = 3 * (size_t)self->model->nnode;
    return meets(low, high, s->x, n) || meets(low, high, s->v, n) || meets(low, high, s->f, n) ||
           meets(low, high, s->external, n);
}

/* The row of a recording that one of x and v goes to: a writable, aligned, C-contiguous
   float64 array in the machine's byte order of nnode x 3 values, or NULL with
   TypeError/ValueError set.  Doubles are stored through the pointer returned, so an
   array that is misaligned (e.g. a view at an odd offset into a byte buffer) is refused. */
static double* record_row(SystemObject* self, PyObject* row, const char* name) {
    if (!PyArray_Check(row) || PyArray_TYPE((PyArrayObject*)row) != NPY_DOUBLE ||
        !PyArray_ISNOTSWAPPED((PyArrayObject*)row)) {
        PyErr_Format(PyExc_TypeError, "%s must be a float64 array in the machine's byte order", name);
        return NULL;
    }
    PyArrayObject* array = (PyArrayObject*)row;
    if (!PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISWRITEABLE(array) || !PyArray_ISALIGNED(array) ||
        PyArray_SIZE(array) != 3 * (npy_intp)self->model->nnode) {
        PyErr_Format(PyExc_ValueError, "%s must be a writable, aligned, C-contiguous array of %lld values "
                     "(nodes x 3)", name, 3LL * (long long)self->model->nnode);
        return NULL;
    }
    return (double*)PyArray_DATA(array);
}

PyObject* System_record_state(SystemObject* self, PyObject* args) {
    PyObject *positions, *velocities = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:_record_state", &positions, &velocities)) return NULL;
    if (mspy_require_ready(self) < 0) return NULL;
    double* x = record_row(self, positions, "positions");
    double* v = x == NULL || velocities == Py_None ? NULL : record_row(self, velocities, "velocities");
    if (x == NULL || (v == NULL && velocities != Py_None)) return NULL;
    const size_t n = 3 * (size_t)self->model->nnode;
    for (int which = 0; which < 2; ++which) {
        const char* row = (const char*)(which == 0 ? x : v);
        if (row != NULL && meets_state(self, row, row + n * sizeof(double))) {
            PyErr_Format(PyExc_ValueError, "%s must not share memory with the system's state",
                         which == 0 ? "positions" : "velocities");
            return NULL;
        }
    }
    copy_around_caches(x, self->state->x, n);
    if (v != NULL) copy_around_caches(v, self->state->v, n);
    Py_RETURN_NONE;
}

PyObject* System_shares_state(SystemObject* self, PyObject* obj) {
    if (mspy_require_ready(self) < 0) return NULL;
    if (!PyArray_Check(obj)) Py_RETURN_FALSE;
    const char *low, *high;
    array_bounds((PyArrayObject*)obj, &low, &high);
    return PyBool_FromLong(meets_state(self, low, high));
}
