/*
 * The Ensemble type: many Systems of one topology (ms_ensemble) stepped by one call without
 * the GIL, with zero-copy views that have the member axis first, per-member divergence and
 * the members handed back as Systems.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <structmember.h>

#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    ms_ensemble* ensemble; /* NULL until __init__ succeeds */
    int threads;           /* worker threads (0: the module's setting) */
    long long stepping;    /* the process whose thread is stepping the ensemble, 0 when none */
    PyObject* weakreflist;
} EnsembleObject;

static int require_ready(EnsembleObject* self) {
    if (self->ensemble == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Ensemble is not initialised: construct it with Ensemble(systems)");
        return -1;
    }
    return 0;
}

static int require_idle(EnsembleObject* self) {
    if (require_ready(self) < 0) return -1;
    if (self->stepping != 0 && self->stepping == ms_process_id()) {
        PyErr_SetString(PyExc_RuntimeError, "this Ensemble is being stepped by another thread; wait for that step "
                                            "to finish");
        return -1;
    }
    return 0;
}

static void Ensemble_dealloc(EnsembleObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)self);
    ms_ensemble_destroy(self->ensemble);
    type->tp_free((PyObject*)self);
    Py_DECREF(type);
}

static int Ensemble_init(EnsembleObject* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"systems", NULL};
    PyObject* systems_in;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Ensemble", keywords, &systems_in)) return -1;
    if (self->ensemble != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Ensemble is already initialised; build a new one");
        return -1;
    }
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return -1;
    PyObject* systems = PySequence_Fast(systems_in, "systems must be a sequence of msprings.System");
    if (systems == NULL) return -1;
    int result = -1;
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(systems);
    const ms_model** models = NULL;
    const ms_state** states = NULL;
    if (count < 1) {
        PyErr_SetString(PyExc_ValueError, "systems must hold at least one msprings.System, got none");
        goto done;
    }
    models = PyMem_Malloc(sizeof(ms_model*) * (size_t)count);
    states = PyMem_Malloc(sizeof(ms_state*) * (size_t)count);
    if (models == NULL || states == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* item = PySequence_Fast_GET_ITEM(systems, i);
        if (!PyObject_TypeCheck(item, (PyTypeObject*)st->system_type)) {
            PyErr_Format(PyExc_TypeError, "systems[%zd] must be an msprings.System, not %.100s", i,
                         Py_TYPE(item)->tp_name);
            goto done;
        }
        SystemObject* system = (SystemObject*)item;
        if (mspy_require_idle(system) < 0) goto done;
        models[i] = system->model;
        states[i] = system->state;
    }
    ms_error err;
    /* with the GIL held: no other thread starts stepping a system while it is copied */
    ms_ensemble* e = ms_ensemble_create(models, states, count, &err);
    if (e == NULL) {
        char* rest = NULL;
        const long long member = err.status == MS_ERR_VALUE && strncmp(err.message, "member ", 7) == 0
                                     ? strtoll(err.message + 7, &rest, 10) : -1;
        if (rest != NULL && rest != err.message + 7) {
            /* name the member as the caller's list does */
            PyErr_Format(PyExc_ValueError, "systems[%lld]%s", member, rest);
        } else {
            mspy_raise_ms_error(&err);
        }
        goto done;
    }
    self->ensemble = e;
    result = 0;
done:
    PyMem_Free(models);
    PyMem_Free(states);
    Py_DECREF(systems);
    return result;
}

/* ---- views ------------------------------------------------------------------------ */

static PyObject* make_view(EnsembleObject* self, void* data, int ndim, npy_intp d0, npy_intp d1, npy_intp d2,
                           int typenum, int writeable) {
    if (require_ready(self) < 0) return NULL;
    npy_intp dims[3] = {d0, d1, d2};
    return mspy_owned_array((PyObject*)self, data, ndim, dims, typenum, writeable);
}

#define E (self->ensemble)
#define ENSEMBLE_VIEW(name, pointer, ndim, d0, d1, d2, typenum, writeable)                                  \
    static PyObject* get_##name(EnsembleObject* self, void* closure) {                                      \
        (void)closure;                                                                                      \
        if (require_ready(self) < 0) return NULL;                                                           \
        return make_view(self, pointer, ndim, (npy_intp)(d0), (npy_intp)(d1), (npy_intp)(d2), typenum, writeable); \
    }

ENSEMBLE_VIEW(x, E->x, 3, E->nmember, E->nnode, 3, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(v, E->v, 3, E->nmember, E->nnode, 3, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(mass, E->mass, 2, E->nmember, E->nnode, 0, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(rest, E->rest, 2, E->nmember, E->nspring, 0, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(k, E->k, 2, E->nmember, E->nspring, 0, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(c, E->c, 2, E->nmember, E->nspring, 0, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(gravity, E->gravity, 2, E->nmember, 3, 0, NPY_DOUBLE, 1)
ENSEMBLE_VIEW(t, E->t, 1, E->nmember, 0, 0, NPY_DOUBLE, 0)
ENSEMBLE_VIEW(steps, E->steps, 1, E->nmember, 0, 0, NPY_INT64, 0)
ENSEMBLE_VIEW(diverged, E->diverged, 1, E->nmember, 0, 0, NPY_BOOL, 1)
ENSEMBLE_VIEW(divergence_time, E->divergence_time, 1, E->nmember, 0, 0, NPY_DOUBLE, 0)
ENSEMBLE_VIEW(divergence_step, E->divergence_step, 1, E->nmember, 0, 0, NPY_INT64, 0)
ENSEMBLE_VIEW(springs, E->models[0]->springs, 2, E->nspring, 2, 0, NPY_INT32, 0)
ENSEMBLE_VIEW(pinned, E->models[0]->pinned, 1, E->nnode, 0, 0, NPY_BOOL, 0)
ENSEMBLE_VIEW(faces, E->models[0]->faces, 2, E->models[0]->nface, 3, 0, NPY_INT32, 0)

static PyObject* get_n_members(EnsembleObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(E->nmember);
}
static PyObject* get_n_nodes(EnsembleObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(E->nnode);
}
static PyObject* get_n_springs(EnsembleObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(E->nspring);
}
static PyObject* get_batched(EnsembleObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(E->nbatched);
}
static PyObject* get_threads(EnsembleObject* self, void* closure) {
    (void)closure;
    return PyLong_FromLong(self->threads);
}
static int set_threads(EnsembleObject* self, PyObject* value, void* closure) {
    (void)closure;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "threads cannot be deleted (set 0 for the process-wide setting)");
        return -1;
    }
    long long number;
    if (mspy_parse_integer(value, "threads", 0, MSPY_THREADS_MAX, &number) < 0) return -1;
    self->threads = (int)number;
    return 0;
}

static PyGetSetDef Ensemble_getset[] = {
    {"x", (getter)get_x, NULL, "Positions (m), (B, n, 3) float64 view; writable.", NULL},
    {"v", (getter)get_v, NULL, "Velocities (m/s), (B, n, 3) float64 view; writable.", NULL},
    {"mass", (getter)get_mass, NULL, "Node masses (kg), (B, n) float64 view; writable.", NULL},
    {"rest", (getter)get_rest, NULL, "Rest lengths (m), (B, m) float64 view; writable.", NULL},
    {"k", (getter)get_k, NULL, "Stiffnesses (N/m), (B, m) float64 view; writable.", NULL},
    {"c", (getter)get_c, NULL, "Axial damping (N s/m), (B, m) float64 view; writable.", NULL},
    {"gravity", (getter)get_gravity, NULL, "Gravitational acceleration (m/s^2), (B, 3) float64 view; writable.",
     NULL},
    {"t", (getter)get_t, NULL, "Simulated time of each member (s), (B,) float64 read-only view.", NULL},
    {"steps", (getter)get_steps, NULL, "Steps each member has taken, (B,) int64 read-only view.", NULL},
    {"diverged", (getter)get_diverged, NULL,
     "(B,) bool view: members whose step diverged and that step() leaves alone; write False to step one again.",
     NULL},
    {"divergence_time", (getter)get_divergence_time, NULL,
     "(B,) float64 read-only view: the time (s) the step that blew up would have reached, NaN if none.", NULL},
    {"divergence_step", (getter)get_divergence_step, NULL,
     "(B,) int64 read-only view: the step that blew up (counted as steps counts), -1 if none.", NULL},
    {"springs", (getter)get_springs, NULL, "Node index pairs, (m, 2) int32 read-only view (shared).", NULL},
    {"pinned", (getter)get_pinned, NULL, "Pinned flags, (n,) bool read-only view (shared).", NULL},
    {"faces", (getter)get_faces, NULL, "Triangles, (F, 3) int32 read-only view (shared).", NULL},
    {"n_members", (getter)get_n_members, NULL, "Number of members B.", NULL},
    {"n_nodes", (getter)get_n_nodes, NULL, "Nodes of each member.", NULL},
    {"n_springs", (getter)get_n_springs, NULL, "Springs of each member.", NULL},
    {"batched", (getter)get_batched, NULL,
     "Members the last step() stepped four or eight to a vector (small members of the Euler methods with nothing but "
     "springs, gravity and pins acting); the others stepped one by one. Both give the same bits.", NULL},
    {"threads", (getter)get_threads, (setter)set_threads,
     "Worker threads of step() (0: msprings.set_num_threads' setting, all cores by default).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
#undef ENSEMBLE_VIEW

/* ---- stepping --------------------------------------------------------------------- */

/* The passes over a member that one step may take at most (as System's step call counts). */
static double passes_per_step(const ms_model* m) {
    switch (m->opt.integrator) {
    case MS_XPBD: return m->opt.iterations > 0 ? (double)m->opt.iterations : 1.0;
    case MS_PROJECTIVE: return m->opt.iterations > 0 ? (double)m->opt.iterations : 10.0;
    case MS_IMPLICIT_EULER: return 50.0 * 20.0;
    default: return 4.0;
    }
}

/* Steps per GIL-free chunk: about 2e8 node-and-spring visits over all members, so Ctrl-C
   is noticed within a fraction of a second. */
static int64_t chunk_steps(const ms_ensemble* e) {
    double work = 0.0;
    for (int64_t i = 0; i < e->nmember; ++i)
        work += (double)(e->nnode + e->nspring) * passes_per_step(e->models[i]);
    const double chunk = 2e8 / (work > 1.0 ? work : 1.0);
    return chunk >= 1e9 ? 1000000000 : chunk >= 1.0 ? (int64_t)chunk : 1;
}

static PyObject* Ensemble_step(EnsembleObject* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"dt", "n", NULL};
    PyObject *dt_obj, *n_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:step", keywords, &dt_obj, &n_obj)) return NULL;
    if (PyBool_Check(dt_obj)) {
        PyErr_SetString(PyExc_TypeError, "dt must be a number of seconds, not bool");
        return NULL;
    }
    double dt;
    if (mspy_parse_real(dt_obj, "dt", &dt) < 0) return NULL;
    long long n = 1;
    if (n_obj != NULL && mspy_parse_integer(n_obj, "n", 0, LLONG_MAX, &n) < 0) return NULL;
    if (require_idle(self) < 0) return NULL;
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return NULL;
    ms_ensemble* e = self->ensemble;
    ms_error err;
    if (ms_time_step_check(dt, &err) != MS_OK || ms_ensemble_check(e, &err) != MS_OK)
        return mspy_raise_ms_error(&err);
    if (n == 0) Py_RETURN_NONE;
    /* the flags as the call found them: a call that fails or is interrupted clears those it set */
    uint8_t* found = PyMem_Malloc((size_t)e->nmember);
    if (found == NULL) return PyErr_NoMemory();
    memcpy(found, e->diverged, (size_t)e->nmember);
    for (int64_t i = 0; i < e->nmember; ++i) e->states[i]->default_threads = st->num_threads;
    ms_ensemble_options options = {ms_resolve_threads(self->threads > 0 ? self->threads : st->num_threads), 0};
    const int64_t chunk = chunk_steps(e);
    int status = MS_OK, interrupted = 0;
    long long done = 0;
    self->stepping = st->process;
    while (done < n && status == MS_OK && !interrupted) {
        const int64_t count = n - done < chunk ? n - done : chunk;
        options.continuing = done > 0;
        Py_BEGIN_ALLOW_THREADS status = ms_ensemble_step(e, dt, count, &options, &err);
        Py_END_ALLOW_THREADS done += count;
        if (status == MS_OK && PyErr_CheckSignals() < 0) interrupted = 1;
    }
    self->stepping = 0;
    if (status != MS_OK || interrupted) {
        ms_ensemble_roll_back(e);
        for (int64_t i = 0; i < e->nmember; ++i)
            if (!found[i] && e->diverged[i]) {
                e->diverged[i] = 0;
                e->divergence_time[i] = NAN;
                e->divergence_step[i] = -1;
            }
        PyMem_Free(found);
        if (interrupted) return NULL;
        return mspy_raise_ms_error(&err);
    }
    PyMem_Free(found);
    ms_ensemble_end_call(e);
    Py_RETURN_NONE;
}

/* ---- members and accounts --------------------------------------------------------- */

static PyObject* Ensemble_member(EnsembleObject* self, PyObject* args) {
    long long index;
    PyObject* type_obj;
    if (!PyArg_ParseTuple(args, "LO:_member", &index, &type_obj)) return NULL;
    if (require_idle(self) < 0) return NULL;
    module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) return NULL;
    if (!PyType_Check(type_obj) || !PyType_IsSubtype((PyTypeObject*)type_obj, (PyTypeObject*)st->system_type)) {
        PyErr_SetString(PyExc_TypeError, "_member(index, type): type must be a System type");
        return NULL;
    }
    if (index < 0 || index >= E->nmember) {
        PyErr_Format(PyExc_IndexError, "member %lld is out of range for an ensemble of %lld members", index,
                     (long long)E->nmember);
        return NULL;
    }
    PyTypeObject* type = (PyTypeObject*)type_obj;
    SystemObject* system = (SystemObject*)type->tp_alloc(type, 0);
    if (system == NULL) return NULL;
    ms_error err;
    if (ms_ensemble_member_copy(E, index, &system->model, &system->state, &err) != MS_OK) {
        Py_DECREF(system);
        return mspy_raise_ms_error(&err);
    }
    return (PyObject*)system;
}

/* Every member's energies and ledger: a (5, B) array (kinetic, spring, gravity,
   dissipated, work) and an (11, B) array (the ledger's parts, as System._accounts). */
static PyObject* Ensemble_accounts(EnsembleObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_idle(self) < 0) return NULL;
    const npy_intp b = (npy_intp)E->nmember;
    npy_intp energy_dims[2] = {5, b}, ledger_dims[2] = {11, b};
    PyObject* energy = PyArray_ZEROS(2, energy_dims, NPY_DOUBLE, 0);
    PyObject* ledger = energy != NULL ? PyArray_ZEROS(2, ledger_dims, NPY_DOUBLE, 0) : NULL;
    if (ledger == NULL) {
        Py_XDECREF(energy);
        return NULL;
    }
    double* out_energy = PyArray_DATA((PyArrayObject*)energy);
    double* out_ledger = PyArray_DATA((PyArrayObject*)ledger);
    for (npy_intp i = 0; i < b; ++i) {
        ms_energy en;
        ms_ledger l;
        ms_options opt = E->models[i]->opt;
        /* the energies with the gravity the views hold */
        memcpy(E->models[i]->opt.gravity, E->gravity + 3 * i, sizeof(double) * 3);
        ms_state_accounts(E->models[i], E->states[i], &en, &l);
        E->models[i]->opt = opt;
        const double parts[5] = {en.kinetic, en.spring, en.gravity, en.dissipated, en.work};
        const double book[11] = {l.dampers, l.drag,      l.contact,   l.energy_loss, l.numerical, l.wind,
                                 l.external, l.pins,     l.colliders, l.constraints, l.user};
        for (int p = 0; p < 5; ++p) out_energy[p * b + i] = parts[p];
        for (int p = 0; p < 11; ++p) out_ledger[p * b + i] = book[p];
    }
    return Py_BuildValue("(NN)", energy, ledger);
}

static PyObject* Ensemble_integrators(EnsembleObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    PyObject* out = PyTuple_New((Py_ssize_t)E->nmember);
    if (out == NULL) return NULL;
    for (int64_t i = 0; i < E->nmember; ++i) {
        PyObject* name = PyUnicode_FromString(ms_integrator_name(E->models[i]->opt.integrator));
        if (name == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, name);
    }
    return out;
}

/* _set_option(name, value): sets one option of every member (all or none). */
static PyObject* Ensemble_set_option(EnsembleObject* self, PyObject* args) {
    const char* name;
    PyObject* value;
    if (!PyArg_ParseTuple(args, "sO:_set_option", &name, &value)) return NULL;
    if (require_idle(self) < 0) return NULL;
    if (strcmp(name, "gravity") == 0 || strcmp(name, "threads") == 0) {
        PyErr_Format(PyExc_ValueError, "%s is set through the ensemble's own attribute", name);
        return NULL;
    }
    ms_options first = E->models[0]->opt;
    if (mspy_parse_option(name, value, &first) < 0) return NULL;
    ms_error err;
    if (ms_options_check(&first, &err) != MS_OK) return mspy_raise_ms_error(&err); /* no member changed */
    for (int64_t i = 0; i < E->nmember; ++i)
        if (mspy_parse_option(name, value, &E->models[i]->opt) < 0) return NULL; /* same value: cannot fail now */
    Py_RETURN_NONE;
}

/* _add_collider(kind, center, axis, size, velocity, restitution, friction, thickness): the
   collider added to every member (all or none). */
static PyObject* Ensemble_add_collider(EnsembleObject* self, PyObject* args) {
    if (require_idle(self) < 0) return NULL;
    ms_collider c;
    memset(&c, 0, sizeof c);
    if (mspy_parse_collider(args, 0, &c) < 0) return NULL;
    ms_error err;
    if (ms_collider_check(&c, &err) != MS_OK) return mspy_raise_ms_error(&err);
    for (int64_t i = 0; i < E->nmember; ++i) {
        const int64_t id = ms_add_collider(E->models[i], E->states[i], &c, &err);
        if (id < 0) { /* out of memory: the members before go back to their colliders */
            for (int64_t j = 0; j < i; ++j) {
                ms_error ignored;
                const int64_t last = E->models[j]->colliders[E->models[j]->ncollider - 1].id;
                ms_remove_collider(E->models[j], E->states[j], last, &ignored);
            }
            return mspy_raise_ms_error(&err);
        }
    }
    Py_RETURN_NONE;
}

#undef E

/* _set_divergence(diverged, time, step, batched): the divergence flags, times and steps of
   every member (bytes of B uint8, B float64 and B int64 in this machine's order) and the
   last call's batched count, as an unpickled ensemble restores them.  Checked first:
   nothing changes unless every value fits. */
static PyObject* Ensemble_set_divergence(EnsembleObject* self, PyObject* args) {
    ms_ensemble* const e = self->ensemble;
    Py_buffer flags, times, steps;
    long long batched;
    if (!PyArg_ParseTuple(args, "y*y*y*L:_set_divergence", &flags, &times, &steps, &batched)) return NULL;
    PyObject* result = NULL;
    if (require_idle(self) < 0) goto done;
    const int64_t count = e->nmember;
    if (flags.len != (Py_ssize_t)count || times.len != (Py_ssize_t)(8 * count) ||
        steps.len != (Py_ssize_t)(8 * count)) {
        PyErr_Format(PyExc_ValueError, "_set_divergence: diverged, time and step must hold %lld members",
                     (long long)count);
        goto done;
    }
    if (batched < 0 || batched > count) {
        PyErr_Format(PyExc_ValueError, "_set_divergence: batched = %lld is out of range 0..%lld", batched,
                     (long long)count);
        goto done;
    }
    const uint8_t* flag = flags.buf;
    for (int64_t i = 0; i < count; ++i) {
        double time;
        int64_t step;
        memcpy(&time, (const char*)times.buf + 8 * i, 8);
        memcpy(&step, (const char*)steps.buf + 8 * i, 8);
        const int fits = flag[i] == 1 ? step >= 0 : flag[i] == 0 && step == -1 && time != time;
        if (!fits) {
            PyErr_Format(PyExc_ValueError,
                         "_set_divergence: member %lld has diverged = %d with divergence_step = %lld and a "
                         "divergence_time that do not go together",
                         (long long)i, (int)flag[i], (long long)step);
            goto done;
        }
    }
    for (int64_t i = 0; i < count; ++i) {
        e->diverged[i] = flag[i];
        memcpy(&e->divergence_time[i], (const char*)times.buf + 8 * i, 8);
        memcpy(&e->divergence_step[i], (const char*)steps.buf + 8 * i, 8);
    }
    e->nbatched = batched;
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&flags);
    PyBuffer_Release(&times);
    PyBuffer_Release(&steps);
    return result;
}

static PyMethodDef Ensemble_methods[] = {
    {"step", (PyCFunction)(void (*)(void))Ensemble_step, METH_VARARGS | METH_KEYWORDS,
     "step(dt, n=1)\n--\n\nAdvance every member that has not diverged by n steps of dt seconds."},
    {"_member", (PyCFunction)Ensemble_member, METH_VARARGS,
     "_member(index, type): member index as a new, independent System of that type."},
    {"_accounts", (PyCFunction)Ensemble_accounts, METH_NOARGS,
     "((5, B) energies, (11, B) ledger parts) in J, as System._accounts has them per member."},
    {"_integrators", (PyCFunction)Ensemble_integrators, METH_NOARGS, "Each member's integrator name."},
    {"_set_option", (PyCFunction)Ensemble_set_option, METH_VARARGS,
     "_set_option(name, value): one option of every member."},
    {"_set_divergence", (PyCFunction)Ensemble_set_divergence, METH_VARARGS,
     "_set_divergence(diverged, time, step, batched): the divergence of every member and the last call's batched "
     "count, restored (bytes in this machine's order)."},
    {"_add_collider", (PyCFunction)Ensemble_add_collider, METH_VARARGS,
     "_add_collider(kind, center, axis, size, velocity, restitution, friction, thickness): to every member."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Ensemble_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(EnsembleObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot Ensemble_slots[] = {
    {Py_tp_dealloc, Ensemble_dealloc},
    {Py_tp_init, Ensemble_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_methods, Ensemble_methods},
    {Py_tp_members, Ensemble_members},
    {Py_tp_getset, Ensemble_getset},
    {Py_tp_doc, "Ensemble(systems)\n--\n\nCore ensemble of Systems of one topology; use msprings.Ensemble."},
    {0, NULL}};

PyObject* mspy_ensemble_type(PyObject* module) {
    PyType_Spec spec = {
        .name = "msprings._core.Ensemble",
        .basicsize = sizeof(EnsembleObject),
        .itemsize = 0,
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .slots = Ensemble_slots,
    };
    return PyType_FromModuleAndSpec(module, &spec, NULL);
}
