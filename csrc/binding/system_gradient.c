/*
 * Gradients through a recorded run (msprings/gradient.h): the backward and tangent passes
 * on a System that serves as the run's model and scratch state (msprings/_gradient.py keeps
 * a copy of the system as it started for that), without the GIL, with Python's signal
 * handlers checked about every 25 ms.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <string.h>

#include "msprings/gradient.h"

/* The interruption check: Python's signal handlers, run with the GIL. */
typedef struct gradient_signals {
    PyThreadState* released;
    int raised;
} gradient_signals;

static int check_gradient_signals(void* context) {
    gradient_signals* check = context;
    PyEval_RestoreThread(check->released);
    if (PyErr_CheckSignals() < 0) check->raised = 1;
    check->released = PyEval_SaveThread();
    return check->raised;
}

/* A C-contiguous float64 array of obj holding exactly size values, or NULL with ValueError
   or TypeError naming it. */
static PyArrayObject* values_of(PyObject* obj, const char* name, npy_intp size) {
    PyArrayObject* array = (PyArrayObject*)PyArray_FROM_OTF(obj, NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (array == NULL) return NULL;
    if (PyArray_SIZE(array) != size) {
        PyErr_Format(PyExc_ValueError, "%s must hold %zd values, got %zd", name, (Py_ssize_t)size,
                     (Py_ssize_t)PyArray_SIZE(array));
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

static PyArrayObject* record_steps_of(PyObject* obj, npy_intp* count) {
    PyArrayObject* array = (PyArrayObject*)PyArray_FROM_OTF(obj, NPY_INT64, NPY_ARRAY_IN_ARRAY);
    if (array == NULL) return NULL;
    if (PyArray_NDIM(array) != 1 || PyArray_SIZE(array) < 1) {
        PyErr_SetString(PyExc_ValueError, "record_steps must be a 1-d array of at least one step");
        Py_DECREF(array);
        return NULL;
    }
    *count = PyArray_SIZE(array);
    return array;
}

static PyObject* zeros(int ndim, npy_intp* shape) { return PyArray_ZEROS(ndim, shape, NPY_DOUBLE, 0); }

static double* data_of(PyObject* array) { return (double*)PyArray_DATA((PyArrayObject*)array); }

/* Runs pass (the backward or tangent call) without the GIL, as this system's step. */
typedef int (*gradient_pass)(SystemObject* self, const ms_gradient_run* run, void* context, ms_error* err);

static int run_pass(SystemObject* self, ms_gradient_run* run, gradient_pass pass, void* context) {
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return -1;
    gradient_signals check = {NULL, 0};
    const ms_interrupt interrupt = {check_gradient_signals, &check};
    run->interrupt = &interrupt;
    ms_error err;
    self->stepping = st->process;
    check.released = PyEval_SaveThread();
    const int status = pass(self, run, context, &err);
    PyEval_RestoreThread(check.released);
    self->stepping = 0;
    /* the scratch state's x and v were written: the next step reads and checks them again */
    self->parameters_written = self->energy_written = 1;
    if (check.raised) return -1;
    if (status != MS_OK) {
        mspy_raise_ms_error(&err);
        return -1;
    }
    return 0;
}

typedef struct backward_context {
    const double *dx, *dv;
    double *grad_x, *grad_v;
    ms_parameter_arrays grad;
} backward_context;

static int backward_pass(SystemObject* self, const ms_gradient_run* run, void* context, ms_error* err) {
    backward_context* c = context;
    return ms_gradient_backward(self->model, self->state, run, c->dx, c->dv, c->grad_x, c->grad_v, &c->grad, err);
}

typedef struct tangent_context {
    int64_t ndirection;
    const double *dx0, *dv0;
    ms_parameter_arrays* directions;
    double *record_dx, *record_dv;
} tangent_context;

static int tangent_pass(SystemObject* self, const ms_gradient_run* run, void* context, ms_error* err) {
    tangent_context* c = context;
    return ms_gradient_tangent(self->model, self->state, run, c->ndirection, c->dx0, c->dv0, c->directions,
                               c->record_dx, c->record_dv, err);
}

PyObject* System_gradient_check(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    ms_error err;
    if (ms_gradient_check(self->model, &err) != MS_OK) return mspy_raise_ms_error(&err);
    Py_RETURN_NONE;
}

/* The run's description from (dt, steps, checkpoint_every, checkpoints, record_steps). */
static int parse_run(SystemObject* self, PyObject* const* args, ms_gradient_run* run, PyArrayObject** checkpoints,
                     PyArrayObject** record_steps) {
    long long steps, every;
    if (mspy_parse_real(args[0], "dt", &run->h) < 0 || mspy_parse_integer(args[1], "steps", 1, INT64_MAX, &steps) < 0 ||
        mspy_parse_integer(args[2], "checkpoint_every", 1, INT64_MAX, &every) < 0)
        return -1;
    run->steps = steps;
    run->checkpoint_every = every;
    if (every > steps) {
        PyErr_Format(PyExc_ValueError, "checkpoint_every = %lld must be at most steps = %lld", every, steps);
        return -1;
    }
    const int64_t count = steps / every + (steps % every != 0) + 1; /* no overflow */
    const int64_t per_checkpoint = 6 * self->model->nnode;
    if (per_checkpoint > 0 && count > NPY_MAX_INTP / per_checkpoint) {
        PyErr_Format(PyExc_ValueError, "%lld checkpoints of %lld nodes (steps = %lld, checkpoint_every = %lld) are "
                     "more than an array can hold", (long long)count, (long long)self->model->nnode, steps, every);
        return -1;
    }
    npy_intp nrecord;
    *record_steps = record_steps_of(args[4], &nrecord);
    if (*record_steps == NULL) return -1;
    *checkpoints = values_of(args[3], "checkpoints", (npy_intp)(count * per_checkpoint));
    if (*checkpoints == NULL) return -1;
    run->checkpoints = PyArray_DATA(*checkpoints);
    run->nrecord = nrecord;
    run->record_steps = PyArray_DATA(*record_steps);
    return 0;
}

PyObject* System_gradient_backward(SystemObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "_gradient_backward(dt, steps, checkpoint_every, checkpoints, record_steps, dx, dv, threads)");
        return NULL;
    }
    if (mspy_require_idle(self) < 0) return NULL;
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    long long threads;
    if (st == NULL || mspy_parse_integer(args[7], "threads", 0, MSPY_THREADS_MAX, &threads) < 0) return NULL;
    const ms_model* m = self->model;
    ms_gradient_run run = {0};
    PyArrayObject *checkpoints = NULL, *record_steps = NULL, *dx = NULL, *dv = NULL;
    PyObject *grad_x = NULL, *grad_v = NULL, *k = NULL, *c = NULL, *rest = NULL, *mass = NULL, *external = NULL;
    PyObject* result = NULL;
    if (parse_run(self, args, &run, &checkpoints, &record_steps) < 0) goto error;
    run.threads = ms_resolve_threads(threads > 0 ? (int)threads : st->num_threads); /* 0: the process's setting */
    const npy_intp values = (npy_intp)(run.nrecord * 3 * m->nnode);
    if ((dx = values_of(args[5], "positions", values)) == NULL) goto error;
    if (args[6] != Py_None && (dv = values_of(args[6], "velocities", values)) == NULL) goto error;
    npy_intp node_shape[2] = {(npy_intp)m->nnode, 3}, spring_shape[1] = {(npy_intp)m->nspring};
    grad_x = zeros(2, node_shape);
    grad_v = zeros(2, node_shape);
    external = zeros(2, node_shape);
    k = zeros(1, spring_shape);
    c = zeros(1, spring_shape);
    rest = zeros(1, spring_shape);
    mass = zeros(1, node_shape);
    if (grad_x == NULL || grad_v == NULL || external == NULL || k == NULL || c == NULL || rest == NULL || mass == NULL)
        goto error;
    backward_context context = {PyArray_DATA(dx), dv == NULL ? NULL : PyArray_DATA(dv), data_of(grad_x),
                                data_of(grad_v),
                                {data_of(k), data_of(c), data_of(rest), data_of(mass), data_of(external)}};
    if (run_pass(self, &run, backward_pass, &context) < 0) goto error;
    result = PyTuple_Pack(7, grad_x, grad_v, k, c, rest, mass, external);
error:
    Py_XDECREF(checkpoints);
    Py_XDECREF(record_steps);
    Py_XDECREF(dx);
    Py_XDECREF(dv);
    Py_XDECREF(grad_x);
    Py_XDECREF(grad_v);
    Py_XDECREF(k);
    Py_XDECREF(c);
    Py_XDECREF(rest);
    Py_XDECREF(mass);
    Py_XDECREF(external);
    return result;
}

PyObject* System_gradient_tangent(SystemObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError,
                        "_gradient_tangent(dt, steps, checkpoint_every, checkpoints, record_steps, dx0, dv0, k, c, "
                        "rest, mass, external, velocities)");
        return NULL;
    }
    if (mspy_require_idle(self) < 0) return NULL;
    const ms_model* m = self->model;
    const int64_t n3 = 3 * m->nnode;
    ms_gradient_run run = {0};
    PyArrayObject *checkpoints = NULL, *record_steps = NULL;
    PyArrayObject* inputs[7] = {NULL};
    ms_parameter_arrays* directions = NULL;
    PyObject *record_dx = NULL, *record_dv = NULL, *result = NULL;
    if (parse_run(self, args, &run, &checkpoints, &record_steps) < 0) goto error;
    PyArrayObject* first = (PyArrayObject*)PyArray_FROM_OTF(args[5], NPY_DOUBLE, NPY_ARRAY_IN_ARRAY);
    if (first == NULL) goto error;
    const npy_intp ndirection = n3 > 0 ? PyArray_SIZE(first) / n3 : 0;
    Py_DECREF(first);
    if (ndirection < 1) {
        PyErr_SetString(PyExc_ValueError, "dx0 must hold at least one direction of (n, 3) values");
        goto error;
    }
    static const char* names[7] = {"dx0", "dv0", "k", "c", "rest", "mass", "external"};
    const npy_intp sizes[7] = {n3, n3, m->nspring, m->nspring, m->nspring, m->nnode, n3};
    for (int a = 0; a < 7; ++a)
        if ((inputs[a] = values_of(args[5 + a], names[a], ndirection * sizes[a])) == NULL) goto error;
    const int velocities = PyObject_IsTrue(args[12]);
    if (velocities < 0) goto error;
    directions = PyMem_Calloc((size_t)ndirection, sizeof *directions);
    if (directions == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (npy_intp d = 0; d < ndirection; ++d) {
        double* at[5];
        for (int a = 0; a < 5; ++a) at[a] = (double*)PyArray_DATA(inputs[2 + a]) + d * sizes[2 + a];
        directions[d] = (ms_parameter_arrays){at[0], at[1], at[2], at[3], at[4]};
    }
    npy_intp shape[4] = {ndirection, (npy_intp)run.nrecord, (npy_intp)m->nnode, 3};
    record_dx = zeros(4, shape);
    if (record_dx == NULL || (velocities && (record_dv = zeros(4, shape)) == NULL)) goto error;
    tangent_context context = {ndirection, PyArray_DATA(inputs[0]), PyArray_DATA(inputs[1]), directions,
                               data_of(record_dx), record_dv == NULL ? NULL : data_of(record_dv)};
    if (run_pass(self, &run, tangent_pass, &context) < 0) goto error;
    result = PyTuple_Pack(2, record_dx, record_dv == NULL ? Py_None : record_dv);
error:
    Py_XDECREF(checkpoints);
    Py_XDECREF(record_steps);
    for (int a = 0; a < 7; ++a) Py_XDECREF(inputs[a]);
    PyMem_Free(directions);
    Py_XDECREF(record_dx);
    Py_XDECREF(record_dv);
    return result;
}
