/*
 * Stepping a System: step(dt, n) runs ms_step in chunks of steps, without the GIL
 * when the call is long, with Python's signal handlers checked during and between the
 * chunks; an interrupted call, like a failed one, is undone whole.  Also the settings by
 * which a recording makes its step calls one series (continued, rolled back), keeps the
 * energy each call starts from and leaves the forces unread.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* Steps per GIL-free chunk: about 5e7 node-and-spring visits, so Ctrl-C is noticed within
   a fraction of a second and the per-call checks cost nothing measurable. */
static int64_t chunk_steps(const ms_model* m) {
    int64_t work = m->nnode + m->nspring;
    int64_t chunk = 50000000 / (work > 0 ? work : 1);
    return chunk > 0 ? chunk : 1;
}

static PyObject* raise_divergence(SystemObject* self, const ms_error* err) {
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return NULL;
    PyObject* exc = PyObject_CallFunction(st->divergence_error, "s", err->message);
    PyObject* step = PyLong_FromLongLong(err->step);
    PyObject* time = PyFloat_FromDouble(err->time);
    PyObject* call_step = PyLong_FromLongLong(err->call_step);
    if (exc != NULL && step != NULL && time != NULL && call_step != NULL &&
        PyObject_SetAttrString(exc, "step", step) == 0 && PyObject_SetAttrString(exc, "time", time) == 0 &&
        PyObject_SetAttrString(exc, "call_step", call_step) == 0)
        PyErr_SetObject(st->divergence_error, exc);
    Py_XDECREF(exc);
    Py_XDECREF(step);
    Py_XDECREF(time);
    Py_XDECREF(call_step);
    return NULL;
}

/* The interruption check of a step call: Python's signal handlers (Ctrl-C's raises
   KeyboardInterrupt), run with the GIL, which the call may have released. */
typedef struct signal_check {
    PyThreadState* released; /* the calling thread's state while the call runs without the GIL */
    int raised;              /* a handler raised: its exception is pending */
} signal_check;

static int check_signals(void* context) {
    signal_check* check = context;
    if (check->released != NULL) PyEval_RestoreThread(check->released);
    if (PyErr_CheckSignals() < 0) check->raised = 1;
    if (check->released != NULL) check->released = PyEval_SaveThread();
    return check->raised;
}

/* The passes over the network that one step may take at most (iterations of the solvers). */
static double passes_per_step(const ms_model* m) {
    const ms_options* opt = &m->opt;
    switch (opt->integrator) {
    case MS_XPBD: return opt->iterations > 0 ? (double)opt->iterations : 1.0;
    case MS_PROJECTIVE: return opt->iterations > 0 ? (double)opt->iterations : 10.0;
    case MS_IMPLICIT_EULER: return (double)opt->implicit.newton_max_iter * (double)opt->implicit.cg_max_iter;
    default: return 4.0;
    }
}

PyObject* System_step(SystemObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    PyObject* dt_obj = nargs > 0 ? args[0] : NULL;
    PyObject* n_obj = nargs > 1 ? args[1] : NULL;
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "step() takes at most 2 arguments (dt, n), got %zd", nargs);
        return NULL;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i);
        PyObject** slot = NULL;
        if (PyUnicode_CompareWithASCIIString(key, "dt") == 0)
            slot = &dt_obj;
        else if (PyUnicode_CompareWithASCIIString(key, "n") == 0)
            slot = &n_obj;
        if (slot == NULL || *slot != NULL) {
            PyErr_Format(PyExc_TypeError, "step() got %s argument %R",
                         slot == NULL ? "an unexpected keyword" : "multiple values for", key);
            return NULL;
        }
        *slot = args[nargs + i];
    }
    if (dt_obj == NULL) {
        PyErr_SetString(PyExc_TypeError, "step() missing required argument 'dt' (time step in s)");
        return NULL;
    }
    double dt;
    if (PyFloat_CheckExact(dt_obj))
        dt = PyFloat_AS_DOUBLE(dt_obj);
    else if (mspy_parse_real(dt_obj, "dt", &dt) < 0)
        return NULL;
    long long n = 1;
    if (n_obj != NULL && mspy_parse_integer(n_obj, "n", 1, LLONG_MAX, &n) < 0) return NULL;
    if (mspy_require_idle(self) < 0) return NULL;

    ms_model* model = self->model;
    ms_state* state = self->state;
    ms_error err;
    int status = MS_OK;
    const int64_t chunk = chunk_steps(model);
    /* n can be up to LLONG_MAX: compare without multiplying (no signed overflow) */
    /* the GIL is released unless the call is short for sure (in doubles: no overflow) */
    const double work = (double)(model->nnode + model->nspring) * passes_per_step(model);
    const int release = (double)n * work > 80000.0;
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return NULL;
    state->default_threads = st->num_threads;
    const int energy_views = mspy_views_alive(self->energy_views);
    const int parameter_views = energy_views < 0 ? -1 : mspy_views_alive(self->parameter_views);
    if (parameter_views < 0) return NULL;
    /* the chunks are one call made in parts, and so are a recording's calls: a failure of
       any part undoes them all */
    const int in_parts = n > chunk || self->continue_calls != 0;
    if (in_parts && self->call == NULL && (self->call = ms_call_create()) == NULL) return PyErr_NoMemory();
    if (self->continue_calls != 2) ms_call_end(self->call); /* this call starts its own */
    ms_step_options options = {0};
    /* the parameters need reading again if a view of them was handed out since the last
       step, or one lives on (the caller may write through it, even during the step) */
    options.parameters_unchanged = !self->parameters_written && !parameter_views;
    /* likewise x and v, through the energy views (the only way to write them) or a reset */
    options.motion_unchanged = !self->energy_written && !energy_views;
    options.forces_unread = self->forces_unread;
    options.call = in_parts ? self->call : NULL;
    self->parameters_written = self->energy_written = 0;
    self->stepping = st->process;
    int interrupted = 0; /* a signal handler raised, during a chunk or between chunks */
    signal_check check = {NULL, 0};
    const ms_interrupt interrupt = {check_signals, &check};
    options.interrupt = &interrupt;
    /* the first chunk's, which the call starts with: written by a chunk that steps, even one
       that then fails (the energy of the state it is undone to) */
    double start_energy[3] = {NAN, NAN, NAN};
    long long done = 0;
    while (done < n && status == MS_OK && !interrupted) {
        int64_t count = n - done < chunk ? n - done : chunk;
        options.start_energy = self->keep_start_energy && done == 0 ? start_energy : NULL;
        if (release) {
            check.released = PyEval_SaveThread();
            status = ms_step(model, state, dt, count, &options, &err);
            PyEval_RestoreThread(check.released);
            check.released = NULL;
        } else {
            status = ms_step(model, state, dt, count, &options, &err);
        }
        /* a view the caller keeps may change the state at any time: what it changes from
           here on is booked by the next step (and a failed call's pending change again) */
        if (energy_views) ms_state_watch(model, state);
        options.parameters_unchanged = !parameter_views;
        options.motion_unchanged = !energy_views;
        if (check.raised) interrupted = 1;
        done += count;
        if (status == MS_OK && !interrupted && done < n && PyErr_CheckSignals() < 0) interrupted = 1;
    }
    self->stepping = 0;
    /* a call that failed or was refused may not have read what was written before it: the
       next call reads (and checks) the parameters and x and v again */
    if (status != MS_OK || interrupted) self->parameters_written = self->energy_written = 1;
    self->start_energy_valid = self->keep_start_energy && !isnan(start_energy[0]);
    memcpy(self->start_energy, start_energy, sizeof start_energy);
    if (status == MS_OK && !interrupted) {
        if (self->continue_calls == 1) self->continue_calls = 2;
        if (self->continue_calls == 0) ms_call_end(self->call);
    }
    if (interrupted) {
        /* an interrupted call is undone like a failed one */
        if (ms_call_roll_back(model, state, self->call) && energy_views) ms_state_watch(model, state);
        return NULL;
    }
    if (status == MS_ERR_DIVERGED) return raise_divergence(self, &err);
    if (status != MS_OK) return mspy_raise_ms_error(&err);
    Py_RETURN_NONE;
}

PyObject* System_keep_start_energy(SystemObject* self, PyObject* flag) {
    const int keep = PyObject_IsTrue(flag);
    if (keep < 0) return NULL;
    self->keep_start_energy = keep;
    Py_RETURN_NONE;
}

PyObject* System_continue_calls(SystemObject* self, PyObject* flag) {
    if (mspy_require_ready(self) < 0) return NULL;
    const int continued = PyObject_IsTrue(flag);
    if (continued < 0) return NULL;
    self->continue_calls = continued;
    if (!continued && !mspy_busy(self)) ms_call_end(self->call);
    Py_RETURN_NONE;
}

PyObject* System_roll_back(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0 || mspy_require_idle(self) < 0) return NULL;
    const int undone = ms_call_roll_back(self->model, self->state, self->call);
    const int energy_views = mspy_views_alive(self->energy_views);
    if (energy_views < 0) return NULL;
    if (undone && energy_views) ms_state_watch(self->model, self->state);
    return PyBool_FromLong(undone);
}

PyObject* System_check_dt(SystemObject* self, PyObject* dt_obj) {
    (void)self;
    double dt;
    if (mspy_parse_real(dt_obj, "dt", &dt) < 0) return NULL;
    ms_error err;
    if (ms_time_step_check(dt, &err) != MS_OK) return mspy_raise_ms_error(&err);
    Py_RETURN_NONE;
}

PyObject* System_leave_forces(SystemObject* self, PyObject* flag) {
    const int leave = PyObject_IsTrue(flag);
    if (leave < 0) return NULL;
    self->forces_unread = leave;
    Py_RETURN_NONE;
}

PyObject* System_start_energy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    if (!self->start_energy_valid) Py_RETURN_NONE;
    return Py_BuildValue("(ddd)", self->start_energy[0], self->start_energy[1], self->start_energy[2]);
}
