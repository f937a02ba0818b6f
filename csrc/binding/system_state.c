/*
 * What a System computes from its state on request: energies and the ledger, momentum,
 * per-spring lengths, strain and tension, the forces, vertex normals, the wind, eigenvalue
 * estimates and bounds, and the check of values written through the views; and the
 * initial state, clock, ledger and watched energy that the model files save and restore.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <math.h>
#include <string.h>

PyObject* System_accounts(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    ms_energy e;
    ms_ledger l;
    ms_state_accounts(self->model, self->state, &e, &l);
    return Py_BuildValue("((ddddd)(ddddddddddd))", e.kinetic, e.spring, e.gravity, e.dissipated, e.work, l.dampers,
                         l.drag, l.contact, l.energy_loss, l.numerical, l.wind, l.external, l.pins, l.colliders,
                         l.constraints, l.user);
}

/* The ledger's fields, in the order of the tuple that _ledger returns. */
static const size_t ledger_offsets[] = {
    offsetof(ms_ledger, dampers),     offsetof(ms_ledger, drag),      offsetof(ms_ledger, contact),
    offsetof(ms_ledger, energy_loss), offsetof(ms_ledger, numerical), offsetof(ms_ledger, wind),
    offsetof(ms_ledger, external),    offsetof(ms_ledger, pins),      offsetof(ms_ledger, colliders),
    offsetof(ms_ledger, constraints), offsetof(ms_ledger, user)};
#define LEDGER_FIELDS (sizeof ledger_offsets / sizeof ledger_offsets[0])

PyObject* System_ledger(SystemObject* self, PyObject* args) {
    int pending = 1;
    if (!PyArg_ParseTuple(args, "|p:_ledger", &pending)) return NULL;
    if (mspy_require_ready(self) < 0) return NULL;
    PyObject* out = PyTuple_New(LEDGER_FIELDS);
    if (out == NULL) return NULL;
    const ms_ledger ledger = pending ? ms_state_ledger(self->model, self->state) : self->state->ledger;
    for (size_t i = 0; i < LEDGER_FIELDS; ++i) {
        PyObject* value = PyFloat_FromDouble(*(const double*)((const char*)&ledger + ledger_offsets[i]));
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, value);
    }
    return out;
}

PyObject* System_momentum(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    npy_intp dims[1] = {3};
    PyObject* out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    ms_state_momentum(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

typedef void (*spring_measure)(const ms_model*, const ms_state*, double*);

static PyObject* spring_array(SystemObject* self, spring_measure measure) {
    if (mspy_require_ready(self) < 0) return NULL;
    npy_intp dims[1] = {(npy_intp)self->model->nspring};
    PyObject* out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    measure(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

PyObject* System_lengths(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_lengths);
}

PyObject* System_strain(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_strain);
}

PyObject* System_tension(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_tension);
}

PyObject* System_update_forces(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_idle(self) < 0) return NULL;
    ms_error err;
    if (ms_state_forces(self->model, self->state, NULL, &err) != MS_OK) return mspy_raise_ms_error(&err);
    return mspy_make_view(self, self->state->f, 2, (npy_intp)self->model->nnode, 3, NPY_DOUBLE, 1);
}

PyObject* System_max_eigenvalues(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    double omega2 = 0.0, gamma = 0.0;
    ms_error err;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = ms_max_eigenvalues(self->model, self->state, &omega2, &gamma, &err);
    Py_END_ALLOW_THREADS
    if (status != MS_OK) return mspy_raise_ms_error(&err);
    return Py_BuildValue("(dd)", omega2, gamma);
}

PyObject* System_vertex_normals(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    npy_intp dims[2] = {(npy_intp)self->model->nnode, 3};
    PyObject* out = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    ms_vertex_normals(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

PyObject* System_wind_at(SystemObject* self, PyObject* args) {
    if (mspy_require_ready(self) < 0) return NULL;
    PyObject *points_in, *t_in;
    double t;
    if (!PyArg_ParseTuple(args, "OO:_wind_at", &points_in, &t_in) || mspy_parse_real(t_in, "t", &t) < 0) return NULL;
    PyArrayObject* points = mspy_input_array(points_in, "points", NPY_DOUBLE, 2, -1, 3);
    if (points == NULL) return NULL;
    npy_intp dims[2] = {PyArray_DIM(points, 0), 3};
    PyObject* out = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (out != NULL) {
        const double* p = (const double*)PyArray_DATA(points);
        double* w = (double*)PyArray_DATA((PyArrayObject*)out);
        for (npy_intp i = 0; i < dims[0]; ++i) ms_wind(&self->model->opt.air, p + 3 * i, t, w + 3 * i);
    }
    Py_DECREF(points);
    return out;
}

PyObject* System_initial_state(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    npy_intp dims[2] = {(npy_intp)self->model->nnode, 3};
    PyObject* x0 = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    PyObject* v0 = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (x0 == NULL || v0 == NULL) {
        Py_XDECREF(x0);
        Py_XDECREF(v0);
        return NULL;
    }
    const size_t bytes = sizeof(double) * 3 * (size_t)self->model->nnode;
    memcpy(PyArray_DATA((PyArrayObject*)x0), self->model->x_initial, bytes);
    memcpy(PyArray_DATA((PyArrayObject*)v0), self->model->v_initial, bytes);
    return Py_BuildValue("(NN)", x0, v0);
}

PyObject* System_restore_clock(SystemObject* self, PyObject* args) {
    if (mspy_require_idle(self) < 0) return NULL;
    double t, values[LEDGER_FIELDS], watched = NAN;
    long long steps;
    if (!PyArg_ParseTuple(args, "dL(ddddddddddd)|d:_restore_clock", &t, &steps, &values[0], &values[1], &values[2],
                          &values[3], &values[4], &values[5], &values[6], &values[7], &values[8], &values[9],
                          &values[10], &watched))
        return NULL;
    int finite = isfinite(t) && !isinf(watched);
    for (size_t i = 0; i < LEDGER_FIELDS; ++i) finite = finite && isfinite(values[i]);
    /* the dissipated parts come first; all but numerical are never negative */
    for (size_t i = 0; i < 4; ++i) finite = finite && values[i] >= 0.0;
    if (!finite || steps < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "t and the ledger must be finite, its dissipated parts but numerical >= 0, and steps >= 0");
        return NULL;
    }
    self->state->t = t;
    self->state->steps = steps;
    for (size_t i = 0; i < LEDGER_FIELDS; ++i)
        *(double*)((char*)&self->state->ledger + ledger_offsets[i]) = values[i];
    self->state->watched = !isnan(watched);
    self->state->watched_energy = isnan(watched) ? 0.0 : watched;
    Py_RETURN_NONE;
}

PyObject* System_watched_energy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(self->state->watched ? self->state->watched_energy : NAN);
}

PyObject* System_check_values(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    ms_error err;
    if (ms_model_check_values(self->model, &err) != MS_OK || ms_state_check(self->model, self->state, &err) != MS_OK)
        return mspy_raise_ms_error(&err);
    Py_RETURN_NONE;
}

PyObject* System_eigenvalue_bounds(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    double omega2 = 0.0, gamma = 0.0;
    ms_eigenvalue_bounds(self->model, self->state, &omega2, &gamma);
    return Py_BuildValue("(dd)", omega2, gamma);
}
