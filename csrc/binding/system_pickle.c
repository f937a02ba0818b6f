/*
 * A System as plain Python data and back, for pickle (msprings/_system.py builds the
 * reduction around these): _pickle_state() copies the model and the state, every value
 * bit for bit, into a dict of NumPy arrays and numbers; _unpickle_state(state, options)
 * fills a System made by __new__ from such a dict, checking everything in it first, so
 * that damaged data raises TypeError or ValueError and leaves the object uninitialised.
 *
 * What is carried is what ms_model_copy and ms_state_copy carry (and the energy the last
 * step call started from, which copy() keeps too, when it is finite), plus each collider's
 * id and the next id, so handles to the colliders keep their meaning.  Not carried: the
 * caches a step makes (layouts, factorisations, the renumbered copy), which the next step
 * rebuilds from the parameters, and a recording's settings, which hold only during a run.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* The ledger's fields in the order of Ledger (msprings/_system.py). */
static const size_t ledger_parts[] = {
    offsetof(ms_ledger, dampers),     offsetof(ms_ledger, drag),      offsetof(ms_ledger, contact),
    offsetof(ms_ledger, energy_loss), offsetof(ms_ledger, numerical), offsetof(ms_ledger, wind),
    offsetof(ms_ledger, external),    offsetof(ms_ledger, pins),      offsetof(ms_ledger, colliders),
    offsetof(ms_ledger, constraints), offsetof(ms_ledger, user)};
#define LEDGER_PARTS (sizeof ledger_parts / sizeof ledger_parts[0])
#define DISSIPATED_PARTS_NOT_NEGATIVE 4 /* dampers, drag, contact, energy_loss */

static int finite_values(const double* values, size_t count) {
    for (size_t i = 0; i < count; ++i)
        if (!isfinite(values[i])) return 0;
    return 1;
}

/* A new C-contiguous array of the given shape holding a copy of data. */
static PyObject* array_copy(const void* data, int ndim, npy_intp d0, npy_intp d1, int typenum) {
    npy_intp dims[2] = {d0, d1};
    PyObject* array = PyArray_SimpleNew(ndim, dims, typenum);
    if (array != NULL && PyArray_NBYTES((PyArrayObject*)array) > 0)
        memcpy(PyArray_DATA((PyArrayObject*)array), data, (size_t)PyArray_NBYTES((PyArrayObject*)array));
    return array;
}

/* Adds value (a new reference, or NULL with an exception) to dict under key. */
static int put(PyObject* dict, const char* key, PyObject* value) {
    if (value == NULL) return -1;
    const int status = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return status;
}

static PyObject* ledger_tuple(const ms_ledger* ledger) {
    PyObject* out = PyTuple_New((Py_ssize_t)LEDGER_PARTS);
    for (size_t i = 0; out != NULL && i < LEDGER_PARTS; ++i) {
        PyObject* value = PyFloat_FromDouble(*(const double*)((const char*)ledger + ledger_parts[i]));
        if (value == NULL) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, (Py_ssize_t)i, value);
    }
    return out;
}

/* (id, kind, start, axis, size, velocity, restitution, friction, thickness, position) */
static PyObject* collider_tuple(const ms_collider* c, const double position[3]) {
    return Py_BuildValue("(Ls(ddd)(ddd)(ddd)(ddd)ddd(ddd))", (long long)c->id, ms_collider_type_name(c->type),
                         c->center[0], c->center[1], c->center[2], c->axis[0], c->axis[1], c->axis[2], c->size[0],
                         c->size[1], c->size[2], c->velocity[0], c->velocity[1], c->velocity[2], c->restitution,
                         c->friction, c->thickness, position[0], position[1], position[2]);
}

PyObject* System_pickle_state(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    if (mspy_busy(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cannot pickle a System while it is stepping in another thread; wait for that step to "
                        "finish (use a lock), then pickle it");
        return NULL;
    }
    const ms_model* m = self->model;
    const ms_state* s = self->state;
    const npy_intp n = (npy_intp)m->nnode, springs = (npy_intp)m->nspring, faces = (npy_intp)m->nface;
    PyObject* state = PyDict_New();
    if (state == NULL) return NULL;
    PyObject* colliders = NULL;
    if (put(state, "x_initial", array_copy(m->x_initial, 2, n, 3, NPY_DOUBLE)) < 0 ||
        put(state, "v_initial", array_copy(m->v_initial, 2, n, 3, NPY_DOUBLE)) < 0 ||
        put(state, "springs", array_copy(m->springs, 2, springs, 2, NPY_INT32)) < 0 ||
        put(state, "faces", array_copy(m->faces, 2, faces, 3, NPY_INT32)) < 0 ||
        put(state, "mass", array_copy(m->mass, 1, n, 0, NPY_DOUBLE)) < 0 ||
        put(state, "pinned", array_copy(m->pinned, 1, n, 0, NPY_BOOL)) < 0 ||
        put(state, "rest", array_copy(m->rest, 1, springs, 0, NPY_DOUBLE)) < 0 ||
        put(state, "k", array_copy(m->k, 1, springs, 0, NPY_DOUBLE)) < 0 ||
        put(state, "c", array_copy(m->c, 1, springs, 0, NPY_DOUBLE)) < 0 ||
        put(state, "x", array_copy(s->x, 2, n, 3, NPY_DOUBLE)) < 0 ||
        put(state, "v", array_copy(s->v, 2, n, 3, NPY_DOUBLE)) < 0 ||
        put(state, "f", array_copy(s->f, 2, n, 3, NPY_DOUBLE)) < 0 ||
        put(state, "external",
            s->external != NULL ? array_copy(s->external, 2, n, 3, NPY_DOUBLE) : Py_NewRef(Py_None)) < 0 ||
        put(state, "t", PyFloat_FromDouble(s->t)) < 0 || put(state, "steps", PyLong_FromLongLong(s->steps)) < 0 ||
        put(state, "ledger", ledger_tuple(&s->ledger)) < 0 ||
        put(state, "watched_energy", s->watched ? PyFloat_FromDouble(s->watched_energy) : Py_NewRef(Py_None)) < 0 ||
        put(state, "solver",
            Py_BuildValue("(iLddiiL)", s->solver.newton_iterations, (long long)s->solver.cg_iterations,
                          s->solver.newton_residual, s->solver.cg_residual, s->solver.newton_converged,
                          s->solver.cg_converged, (long long)s->solver.cg_failures)) < 0 ||
        put(state, "workers", PyLong_FromLong(s->workers)) < 0 ||
        put(state, "next_collider_id", PyLong_FromLongLong(m->next_collider_id)) < 0 ||
        /* an energy that overflowed is no number to carry: it travels as not kept, and
           unpickling refuses a non-finite one */
        put(state, "start_energy",
            self->start_energy_valid && finite_values(self->start_energy, 3)
                ? Py_BuildValue("(ddd)", self->start_energy[0], self->start_energy[1], self->start_energy[2])
                : Py_NewRef(Py_None)) < 0)
        goto error;
    if ((colliders = PyTuple_New((Py_ssize_t)m->ncollider)) == NULL) goto error;
    for (int64_t k = 0; k < m->ncollider; ++k) {
        const double* position = ms_collider_position(s, m->colliders[k].id);
        if (position == NULL) {
            PyErr_SetString(PyExc_SystemError, "a collider of the model has no position in the state");
            goto error;
        }
        PyObject* row = collider_tuple(&m->colliders[k], position);
        if (row == NULL) goto error;
        PyTuple_SET_ITEM(colliders, (Py_ssize_t)k, row);
    }
    if (PyDict_SetItemString(state, "colliders", colliders) < 0) goto error;
    Py_DECREF(colliders);
    return state;
error:
    Py_XDECREF(colliders);
    Py_DECREF(state);
    return NULL;
}

/* ---- unpickling ------------------------------------------------------------------ */

/* Reading an entry may call Python code (an __index__, a __float__, an array's hooks)
   that could change or empty the dicts given and free what they held; so the reading
   works on private copies of the dicts, and every entry read is a new reference, held
   for as long as it is used. */

/* The entry key of the state dict (a new reference), or NULL with ValueError. */
static PyObject* entry(PyObject* state, const char* key) {
    PyObject* value = PyDict_GetItemString(state, key);
    if (value == NULL) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "the pickled System has no %s entry", key);
        return NULL;
    }
    return Py_NewRef(value);
}

/* The entry key as an array of exactly typenum (no conversion of kind: a float where an
   index belongs is damage, not a value to round) and shape (d0[, d1]; d0 < 0: any). */
static PyArrayObject* entry_array(PyObject* state, const char* key, int typenum, int ndim, npy_intp d0,
                                  npy_intp d1) {
    PyObject* value = entry(state, key);
    if (value == NULL) return NULL;
    PyArrayObject* array = NULL;
    if (!PyArray_Check(value) || !PyArray_EquivTypenums(PyArray_TYPE((PyArrayObject*)value), typenum))
        PyErr_Format(PyExc_ValueError, "the pickled System's %s entry is not an array of %s", key,
                     typenum == NPY_INT32 ? "int32" : typenum == NPY_BOOL ? "bool" : "float64");
    else {
        /* a copy of its own, a plain ndarray: Python code that runs later in the unpickling
           could resize the array given (refcheck=False) and free the data it held */
        PyObject* copy = PyArray_FROMANY(value, typenum, 0, 0,
                                         NPY_ARRAY_IN_ARRAY | NPY_ARRAY_ENSURECOPY | NPY_ARRAY_ENSUREARRAY);
        if (copy != NULL) array = mspy_input_array(copy, key, typenum, ndim, d0, d1);
        Py_XDECREF(copy);
    }
    Py_DECREF(value);
    return array;
}

/* The entry key as a double (a real number) into *out. */
static int entry_real(PyObject* state, const char* key, double* out) {
    PyObject* value = entry(state, key);
    if (value == NULL) return -1;
    const int status = mspy_parse_real(value, key, out);
    Py_DECREF(value);
    return status;
}

/* 0 if value is a tuple of exactly count items (count < 0: of any length), else -1 with a
   ValueError naming the value (what describes it), what it must be and what it is. */
static int check_tuple(PyObject* value, const char* what, Py_ssize_t count) {
    if (PyTuple_Check(value) && (count < 0 || PyTuple_GET_SIZE(value) == count)) return 0;
    if (count < 0)
        PyErr_Format(PyExc_ValueError, "%s must be a tuple, not %.100s", what, Py_TYPE(value)->tp_name);
    else if (PyTuple_Check(value))
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of %zd items, not of %zd", what, count,
                     PyTuple_GET_SIZE(value));
    else
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of %zd items, not %.100s", what, count,
                     Py_TYPE(value)->tp_name);
    return -1;
}

/* The entry key as a tuple of exactly count items (count < 0: any; a new reference), or
   NULL with ValueError. */
static PyObject* entry_tuple(PyObject* state, const char* key, Py_ssize_t count) {
    PyObject* value = entry(state, key);
    if (value == NULL) return NULL;
    char what[64];
    snprintf(what, sizeof what, "the pickled System's %s entry", key);
    if (check_tuple(value, what, count) < 0) Py_CLEAR(value);
    return value;
}

/* The options: each entry of the dict (name: value; a private copy) parsed as System's
   attribute of that name parses it, over the defaults (options the data does not name
   keep theirs). */
static int parse_options(PyObject* options, ms_options* opt) {
    PyObject *key, *value;
    Py_ssize_t position = 0;
    while (PyDict_Next(options, &position, &key, &value)) {
        Py_INCREF(key);
        Py_INCREF(value);
        const char* name = mspy_parse_name(key, "option name");
        const int status = name == NULL ? -1 : mspy_parse_option(name, value, opt);
        Py_DECREF(key);
        Py_DECREF(value);
        if (status < 0) return -1;
    }
    ms_error err;
    if (ms_options_check(opt, &err) != MS_OK) {
        mspy_raise_ms_error(&err);
        return -1;
    }
    return 0;
}

/* Adds the pickled colliders (rows: a tuple the caller holds) to the model, each with its
   own id and where it starts; their positions go to position (ncollider x 3, room for
   count rows).  A row is a tuple, so what it holds lives as long as rows does. */
static int add_colliders(ms_model* m, PyObject* rows, int64_t next_id, double* position) {
    const Py_ssize_t count = PyTuple_GET_SIZE(rows);
    for (Py_ssize_t k = 0; k < count; ++k) {
        PyObject* row = PyTuple_GET_ITEM(rows, k);
        char what[64];
        snprintf(what, sizeof what, "the pickled System's collider %zd", k);
        if (check_tuple(row, what, 10) < 0) return -1;
        ms_collider c;
        memset(&c, 0, sizeof c);
        long long id = 0;
        const char* kind = mspy_parse_name(PyTuple_GET_ITEM(row, 1), "collider kind");
        if (mspy_parse_integer(PyTuple_GET_ITEM(row, 0), "collider id", 0, LLONG_MAX, &id) < 0 || kind == NULL ||
            mspy_parse_vector3(PyTuple_GET_ITEM(row, 2), "collider start", c.center) < 0 ||
            mspy_parse_vector3(PyTuple_GET_ITEM(row, 3), "collider axis", c.axis) < 0 ||
            mspy_parse_vector3(PyTuple_GET_ITEM(row, 4), "collider size", c.size) < 0 ||
            mspy_parse_vector3(PyTuple_GET_ITEM(row, 5), "collider velocity", c.velocity) < 0 ||
            mspy_parse_real(PyTuple_GET_ITEM(row, 6), "collider restitution", &c.restitution) < 0 ||
            mspy_parse_real(PyTuple_GET_ITEM(row, 7), "collider friction", &c.friction) < 0 ||
            mspy_parse_real(PyTuple_GET_ITEM(row, 8), "collider thickness", &c.thickness) < 0 ||
            mspy_parse_vector3(PyTuple_GET_ITEM(row, 9), "collider position", position + 3 * k) < 0)
            return -1;
        int type = -1;
        for (int t = 0; t < MS_COLLIDER_TYPE_COUNT; ++t)
            if (strcmp(kind, ms_collider_type_name(t)) == 0) type = t;
        /* ids grow in the order the colliders were added, and removing one keeps the order */
        if (type < 0 || id < m->next_collider_id || id >= next_id) {
            PyErr_Format(PyExc_ValueError,
                         "the pickled System's collider %zd is damaged (kind %R, id %lld: ids must grow and stay "
                         "below the next id %lld)",
                         k, PyTuple_GET_ITEM(row, 1), id, (long long)next_id);
            return -1;
        }
        c.type = (ms_collider_type)type;
        ms_error err;
        m->next_collider_id = id; /* the id the collider had */
        if (ms_model_add_collider(m, &c, &err) < 0) {
            mspy_raise_ms_error(&err);
            return -1;
        }
    }
    m->next_collider_id = next_id;
    return 0;
}

/* t, steps, the ledger, the recorded energy, the solver's counts and the workers into s,
   each checked as the step and _restore_clock hold them. */
static int restore_clock(PyObject* state, ms_state* s) {
    double t = 0.0, values[LEDGER_PARTS], watched = 0.0;
    long long steps = 0, workers = 0, cg_iterations = 0, cg_failures = 0, newton_iterations = 0;
    long long newton_converged = 0, cg_converged = 0;
    double newton_residual = 0.0, cg_residual = 0.0;
    int status = -1;
    PyObject* ledger = NULL;
    PyObject* solver = NULL;
    PyObject* watched_entry = NULL;
    PyObject* steps_entry = NULL;
    PyObject* workers_entry = NULL;
    if ((ledger = entry_tuple(state, "ledger", (Py_ssize_t)LEDGER_PARTS)) == NULL) goto done;
    for (size_t i = 0; i < LEDGER_PARTS; ++i)
        if (mspy_parse_real(PyTuple_GET_ITEM(ledger, (Py_ssize_t)i), "ledger", &values[i]) < 0) goto done;
    if ((solver = entry_tuple(state, "solver", 7)) == NULL ||
        (watched_entry = entry(state, "watched_energy")) == NULL || (steps_entry = entry(state, "steps")) == NULL ||
        (workers_entry = entry(state, "workers")) == NULL ||
        entry_real(state, "t", &t) < 0 ||
        mspy_parse_integer(steps_entry, "steps", 0, LLONG_MAX, &steps) < 0 ||
        mspy_parse_integer(workers_entry, "workers", 0, MSPY_THREADS_MAX, &workers) < 0 ||
        (watched_entry != Py_None && mspy_parse_real(watched_entry, "watched_energy", &watched) < 0) ||
        mspy_parse_integer(PyTuple_GET_ITEM(solver, 0), "newton_iterations", 0, INT_MAX, &newton_iterations) < 0 ||
        mspy_parse_integer(PyTuple_GET_ITEM(solver, 1), "cg_iterations", 0, LLONG_MAX, &cg_iterations) < 0 ||
        mspy_parse_real(PyTuple_GET_ITEM(solver, 2), "newton_residual", &newton_residual) < 0 ||
        mspy_parse_real(PyTuple_GET_ITEM(solver, 3), "cg_residual", &cg_residual) < 0 ||
        mspy_parse_integer(PyTuple_GET_ITEM(solver, 4), "newton_converged", 0, 1, &newton_converged) < 0 ||
        mspy_parse_integer(PyTuple_GET_ITEM(solver, 5), "cg_converged", 0, 1, &cg_converged) < 0 ||
        mspy_parse_integer(PyTuple_GET_ITEM(solver, 6), "cg_failures", 0, LLONG_MAX, &cg_failures) < 0)
        goto done;
    int valid = isfinite(t) && isfinite(watched) && finite_values(values, LEDGER_PARTS);
    for (size_t i = 0; i < DISSIPATED_PARTS_NOT_NEGATIVE; ++i) valid = valid && values[i] >= 0.0;
    if (!valid) {
        PyErr_SetString(PyExc_ValueError, "the pickled System's t, ledger or watched_energy is damaged: they must be "
                                          "finite, and the dissipated parts but numerical >= 0");
        goto done;
    }
    /* a relative residual, which a step that ends keeps finite (a step whose Newton
       iteration goes non-finite diverges and is undone, statistics too) */
    if (!(isfinite(newton_residual) && newton_residual >= 0.0)) {
        PyErr_Format(PyExc_ValueError, "the pickled System's newton_residual = %R is damaged: it must be finite and "
                                       ">= 0", PyTuple_GET_ITEM(solver, 2));
        goto done;
    }
    s->t = t;
    s->steps = steps;
    for (size_t i = 0; i < LEDGER_PARTS; ++i) *(double*)((char*)&s->ledger + ledger_parts[i]) = values[i];
    s->watched = watched_entry != Py_None;
    s->watched_energy = watched;
    s->workers = (int)workers;
    s->solver.newton_iterations = (int)newton_iterations;
    s->solver.cg_iterations = cg_iterations;
    s->solver.newton_residual = newton_residual;
    s->solver.cg_residual = cg_residual;
    s->solver.newton_converged = (int)newton_converged;
    s->solver.cg_converged = (int)cg_converged;
    s->solver.cg_failures = cg_failures;
    status = 0;
done:
    Py_XDECREF(ledger);
    Py_XDECREF(solver);
    Py_XDECREF(watched_entry);
    Py_XDECREF(steps_entry);
    Py_XDECREF(workers_entry);
    return status;
}

/* The energy the last step call started from (None: not kept) into self: kinetic, spring
   and gravity (J), finite. */
static int restore_start_energy(SystemObject* self, PyObject* state) {
    PyObject* value = entry(state, "start_energy");
    if (value == NULL) return -1;
    int status = 0;
    if (value != Py_None) {
        double energy[3];
        status = check_tuple(value, "the pickled System's start_energy entry", 3);
        for (Py_ssize_t i = 0; status == 0 && i < 3; ++i)
            status = mspy_parse_real(PyTuple_GET_ITEM(value, i), "start_energy", &energy[i]);
        if (status == 0 && !finite_values(energy, 3)) {
            PyErr_Format(PyExc_ValueError, "the pickled System's start_energy %R is damaged: its energies must be "
                                           "finite", value);
            status = -1;
        }
        if (status == 0) {
            memcpy(self->start_energy, energy, sizeof energy);
            self->start_energy_valid = 1;
        }
    }
    Py_DECREF(value);
    return status;
}

/* The largest next collider id that unpickling takes: far beyond any count of colliders
   added one by one, and far enough below INT64_MAX that adding more never runs out. */
#define PICKLED_NEXT_COLLIDER_ID_MAX (1LL << 62)

PyObject* System_unpickle_state(SystemObject* self, PyObject* args) {
    PyObject *given_state, *given_options;
    if (!PyArg_ParseTuple(args, "O!O:_unpickle_state", &PyDict_Type, &given_state, &given_options)) return NULL;
    if (self->model != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "System is already initialised; unpickle into a new object");
        return NULL;
    }
    if (!PyDict_Check(given_options)) {
        PyErr_Format(PyExc_ValueError, "the pickled System's options must be a dict, not %.100s",
                     Py_TYPE(given_options)->tp_name);
        return NULL;
    }
    PyObject* result = NULL;
    PyObject *state = NULL, *options = NULL, *colliders = NULL, *next_entry = NULL, *external_entry = NULL;
    PyArrayObject *x_initial = NULL, *v_initial = NULL, *springs = NULL, *faces = NULL, *mass = NULL, *pinned = NULL,
                  *rest = NULL, *k = NULL, *c = NULL, *x = NULL, *v = NULL, *f = NULL, *external = NULL;
    ms_model* model = NULL;
    ms_state* st = NULL;
    double* collider_position = NULL;
    ms_error err;

    /* the caller's dicts may change while this reads them (see entry): work on copies */
    if ((state = PyDict_Copy(given_state)) == NULL || (options = PyDict_Copy(given_options)) == NULL) goto done;
    if ((x_initial = entry_array(state, "x_initial", NPY_DOUBLE, 2, -1, 3)) == NULL) goto done;
    const npy_intp n = PyArray_DIM(x_initial, 0);
    if ((springs = entry_array(state, "springs", NPY_INT32, 2, -1, 2)) == NULL) goto done;
    const npy_intp m = PyArray_DIM(springs, 0);
    if ((faces = entry_array(state, "faces", NPY_INT32, 2, -1, 3)) == NULL) goto done;
    const npy_intp nface = PyArray_DIM(faces, 0);
    if ((v_initial = entry_array(state, "v_initial", NPY_DOUBLE, 2, n, 3)) == NULL ||
        (mass = entry_array(state, "mass", NPY_DOUBLE, 1, n, 0)) == NULL ||
        (pinned = entry_array(state, "pinned", NPY_BOOL, 1, n, 0)) == NULL ||
        (rest = entry_array(state, "rest", NPY_DOUBLE, 1, m, 0)) == NULL ||
        (k = entry_array(state, "k", NPY_DOUBLE, 1, m, 0)) == NULL ||
        (c = entry_array(state, "c", NPY_DOUBLE, 1, m, 0)) == NULL ||
        (x = entry_array(state, "x", NPY_DOUBLE, 2, n, 3)) == NULL ||
        (v = entry_array(state, "v", NPY_DOUBLE, 2, n, 3)) == NULL ||
        (f = entry_array(state, "f", NPY_DOUBLE, 2, n, 3)) == NULL)
        goto done;
    if ((external_entry = entry(state, "external")) == NULL ||
        (external_entry != Py_None && (external = entry_array(state, "external", NPY_DOUBLE, 2, n, 3)) == NULL))
        goto done;
    long long next_id = 0;
    if ((next_entry = entry(state, "next_collider_id")) == NULL ||
        (colliders = entry_tuple(state, "colliders", -1)) == NULL ||
        mspy_parse_integer(next_entry, "next_collider_id", 0, PICKLED_NEXT_COLLIDER_ID_MAX, &next_id) < 0)
        goto done;
    const Py_ssize_t ncollider = PyTuple_GET_SIZE(colliders);
    if (ncollider > 0 &&
        (collider_position = PyMem_Malloc(sizeof(double) * 3 * (size_t)ncollider)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }

    ms_options opt = ms_default_options();
    if (parse_options(options, &opt) < 0) goto done;
    if ((model = ms_model_create(n, m, nface, &err)) == NULL) {
        mspy_raise_ms_error(&err);
        goto done;
    }
    const size_t n3 = sizeof(double) * 3 * (size_t)n;
    memcpy(model->x_initial, PyArray_DATA(x_initial), n3);
    memcpy(model->v_initial, PyArray_DATA(v_initial), n3);
    memcpy(model->springs, PyArray_DATA(springs), sizeof(int32_t) * 2 * (size_t)m);
    memcpy(model->mass, PyArray_DATA(mass), sizeof(double) * (size_t)n);
    memcpy(model->rest, PyArray_DATA(rest), sizeof(double) * (size_t)m);
    memcpy(model->k, PyArray_DATA(k), sizeof(double) * (size_t)m);
    memcpy(model->c, PyArray_DATA(c), sizeof(double) * (size_t)m);
    if (nface > 0) memcpy(model->faces, PyArray_DATA(faces), sizeof(int32_t) * 3 * (size_t)nface);
    const npy_bool* pins = (const npy_bool*)PyArray_DATA(pinned);
    for (npy_intp i = 0; i < n; ++i) model->pinned[i] = pins[i] ? 1 : 0;
    model->opt = opt;
    if (ms_model_check(model, &err) != MS_OK) {
        mspy_raise_ms_error(&err);
        goto done;
    }
    if (add_colliders(model, colliders, next_id, collider_position) < 0) goto done;
    if ((st = ms_state_create(model, &err)) == NULL) {
        mspy_raise_ms_error(&err);
        goto done;
    }
    memcpy(st->x, PyArray_DATA(x), n3);
    memcpy(st->v, PyArray_DATA(v), n3);
    memcpy(st->f, PyArray_DATA(f), n3);
    if (external != NULL) {
        double* buffer = ms_state_external(model, st, &err);
        if (buffer == NULL) {
            mspy_raise_ms_error(&err);
            goto done;
        }
        memcpy(buffer, PyArray_DATA(external), n3);
    }
    if (ncollider > 0) memcpy(st->collider_center, collider_position, sizeof(double) * 3 * (size_t)ncollider);
    if (ms_state_check(model, st, &err) != MS_OK) {
        mspy_raise_ms_error(&err);
        goto done;
    }
    if (!finite_values(st->f, 3 * (size_t)n)) {
        PyErr_SetString(PyExc_ValueError, "the pickled System's forces f hold NaN or infinity");
        goto done;
    }
    if (restore_clock(state, st) < 0 || restore_start_energy(self, state) < 0) goto done;
    self->model = model;
    self->state = st;
    model = NULL; /* the system owns them now */
    st = NULL;
    /* the first step reads and checks the parameters, x and v, as after a write through a view */
    self->parameters_written = self->energy_written = 1;
    result = Py_NewRef(Py_None);

done:
    if (result == NULL) self->start_energy_valid = 0;
    ms_state_destroy(st);
    ms_model_destroy(model);
    PyMem_Free(collider_position);
    Py_XDECREF(x_initial);
    Py_XDECREF(v_initial);
    Py_XDECREF(springs);
    Py_XDECREF(faces);
    Py_XDECREF(mass);
    Py_XDECREF(pinned);
    Py_XDECREF(rest);
    Py_XDECREF(k);
    Py_XDECREF(c);
    Py_XDECREF(x);
    Py_XDECREF(v);
    Py_XDECREF(f);
    Py_XDECREF(external);
    Py_XDECREF(external_entry);
    Py_XDECREF(next_entry);
    Py_XDECREF(colliders);
    Py_XDECREF(options);
    Py_XDECREF(state);
    return result;
}
