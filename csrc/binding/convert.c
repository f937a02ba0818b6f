/*
 * Python arguments to C values, one parser per kind of argument (integers, names, reals,
 * 3-vectors, arrays of an exact shape), each naming the argument in its errors; and the
 * C core's errors raised as Python exceptions.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <string.h>

PyObject* mspy_raise_ms_error(const ms_error* err) {
    PyObject* type = err->status == MS_ERR_MEMORY ? PyExc_MemoryError : PyExc_ValueError;
    PyErr_SetString(type, err->message);
    return NULL;
}

/* Converts obj to a C-contiguous array of typenum with exactly the shape (d0[, d1]), any
   first dimension if d0 < 0; errors name the argument. */
PyArrayObject* mspy_input_array(PyObject* obj, const char* name, int typenum, int ndim, npy_intp d0,
                                npy_intp d1) {
    PyArrayObject* array = (PyArrayObject*)PyArray_FROMANY(obj, typenum, 0, 0, NPY_ARRAY_IN_ARRAY);
    if (array == NULL) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s holds a number out of range (beyond %s)", name,
                         typenum == NPY_INT32 ? "int32" : "the largest double, 1.8e308");
            return NULL;
        }
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_Format(PyExc_TypeError, "%s must be an array of %s: %S", name,
                     typenum == NPY_INT32 ? "int32 node indices"
                     : typenum == NPY_BOOL ? "booleans"
                                           : "real numbers (float64)",
                     value != NULL ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return NULL;
    }
    int ok = PyArray_NDIM(array) == ndim && (d0 < 0 || PyArray_DIM(array, 0) == d0) &&
             (ndim == 1 || PyArray_DIM(array, 1) == d1);
    if (!ok) {
        PyObject* shape = PyObject_GetAttrString((PyObject*)array, "shape");
        if (ndim == 1)
            PyErr_Format(PyExc_ValueError, "%s must have shape (%zd,), got %S", name, (Py_ssize_t)d0, shape);
        else if (d0 < 0)
            PyErr_Format(PyExc_ValueError, "%s must have shape (n, %zd), got %S", name, (Py_ssize_t)d1, shape);
        else
            PyErr_Format(PyExc_ValueError, "%s must have shape (%zd, %zd), got %S", name, (Py_ssize_t)d0,
                         (Py_ssize_t)d1, shape);
        Py_XDECREF(shape);
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* The one parser of integer arguments: an int (or an object with __index__, not a bool)
   in [low, high].  TypeError for anything else, ValueError naming the argument when it is
   out of range, however large (never OverflowError).  Returns 0, or -1 with an exception. */
int mspy_parse_integer(PyObject* value, const char* name, long long low, long long high, long long* out) {
    if (PyBool_Check(value) || !PyIndex_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an integer, not %.100s", name, Py_TYPE(value)->tp_name);
        return -1;
    }
    PyObject* index = PyNumber_Index(value);
    if (index == NULL) return -1;
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (overflow != 0) {
        PyErr_Format(PyExc_ValueError, "%s is out of range: it must be between %lld and %lld", name, low, high);
        return -1;
    }
    if (number < low || number > high) {
        PyErr_Format(PyExc_ValueError, "%s = %lld is out of range: it must be between %lld and %lld", name, number,
                     low, high);
        return -1;
    }
    *out = number;
    return 0;
}

/* The one parser of name arguments (integrators, collider kinds): the UTF-8 text of a str.
   TypeError for a non-str; ValueError naming the argument for text that C cannot hold
   unchanged: an embedded NUL (it would cut the name short) or a lone surrogate (not
   encodable).  Returns NULL with an exception set on failure. */
const char* mspy_parse_name(PyObject* value, const char* name) {
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a name (str), not %.100s", name, Py_TYPE(value)->tp_name);
        return NULL;
    }
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(value, &size);
    if (text == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeError)) return NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s %R is not valid text (it contains a lone surrogate)", name, value);
        return NULL;
    }
    if ((size_t)size != strlen(text)) {
        PyErr_Format(PyExc_ValueError, "%s %R contains a NUL character", name, value);
        return NULL;
    }
    return text;
}

/* The one parser of real arguments: a float, int or other real number (not complex, not
   text).  TypeError for anything else; ValueError naming the argument when it is beyond
   the largest double.  NaN and infinity pass: the caller's check decides. */
int mspy_parse_real(PyObject* value, const char* name, double* out) {
    if (!PyFloat_Check(value) && !PyLong_Check(value) && !PyIndex_Check(value) &&
        !(PyNumber_Check(value) && !PyComplex_Check(value) && !PyUnicode_Check(value))) {
        PyErr_Format(PyExc_TypeError, "%s must be a real number, not %.100s", name, Py_TYPE(value)->tp_name);
        return -1;
    }
    double result = PyFloat_AsDouble(value);
    if (result == -1.0 && PyErr_Occurred()) {
        const int overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
        PyErr_Clear();
        if (overflow)
            PyErr_Format(PyExc_ValueError, "%s is out of range: beyond the largest double (1.8e308)", name);
        else
            PyErr_Format(PyExc_TypeError, "%s must be a real number, not %.100s", name, Py_TYPE(value)->tp_name);
        return -1;
    }
    *out = result;
    return 0;
}

/* The one parser of 3-vector arguments: anything NumPy reads as three reals, shape (3,). */
int mspy_parse_vector3(PyObject* value, const char* name, double out[3]) {
    PyArrayObject* array = mspy_input_array(value, name, NPY_DOUBLE, 1, 3, 0);
    if (array == NULL) return -1;
    memcpy(out, PyArray_DATA(array), sizeof(double) * 3);
    Py_DECREF(array);
    return 0;
}
