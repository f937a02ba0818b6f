/*
 * The attributes of System that are not options: zero-copy NumPy views of the C buffers
 * (x, v, f, external, mass, pinned, springs, rest, k, c, faces), whose base is the System,
 * the sizes, the clock, the energy totals and the solver's statistics; and the watch over
 * the writable views, through which the caller can change the energy or the parameters
 * between (or during) steps.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

/* A C-contiguous NumPy array of ndim dimensions over C memory owned by owner, which the
   array keeps alive (its base). */
PyObject* mspy_owned_array(PyObject* owner, void* data, int ndim, npy_intp* dims, int typenum, int writeable) {
    PyObject* array = PyArray_New(&PyArray_Type, ndim, dims, typenum, NULL, data, 0,
                                  writeable ? NPY_ARRAY_CARRAY : NPY_ARRAY_CARRAY_RO, NULL);
    if (array == NULL) return NULL;
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject*)array, owner) < 0) {
        /* SetBaseObject steals the reference to owner even when it fails. */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* A NumPy array of the given shape over C memory owned by self. */
PyObject* mspy_make_view(SystemObject* self, void* data, int ndim, npy_intp d0, npy_intp d1, int typenum,
                         int writeable) {
    npy_intp dims[2] = {d0, d1};
    return mspy_owned_array((PyObject*)self, data, ndim, dims, typenum, writeable);
}

/* Whether one of the views in a list of weak references (energy_views, parameter_views)
   is still alive: the caller may then write through it at any time (for the energy views
   each step ends by recording the energy; for the parameter views each step reads the
   parameters again).  Dead references are dropped.  Returns -1 with an exception set on
   failure. */
int mspy_views_alive(PyObject* views) {
    if (views == NULL) return 0;
    Py_ssize_t kept = 0;
    const Py_ssize_t count = PyList_GET_SIZE(views);
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject* reference = PyList_GET_ITEM(views, i);
#if PY_VERSION_HEX >= 0x030D0000
        PyObject* target = NULL;
        if (PyWeakref_GetRef(reference, &target) < 0) return -1;
        if (target == NULL) continue;
        Py_DECREF(target);
#else
        PyObject* target = PyWeakref_GetObject(reference); /* borrowed */
        if (target == NULL) return -1;
        if (target == Py_None) continue;
#endif
        Py_INCREF(reference);
        if (PyList_SetItem(views, kept++, reference) < 0) return -1;
    }
    if (PyList_SetSlice(views, kept, count, NULL) < 0) return -1;
    return kept > 0;
}

/* Adds a weak reference to view to *views (a list made on first use).  Returns 0, or -1
   with an exception set. */
static int remember_view(PyObject** views, PyObject* view) {
    if (*views == NULL && (*views = PyList_New(0)) == NULL) return -1;
    if (PyList_GET_SIZE(*views) >= 32 && mspy_views_alive(*views) < 0) return -1;
    PyObject* reference = PyWeakref_NewRef(view, NULL);
    if (reference == NULL) return -1;
    const int appended = PyList_Append(*views, reference);
    Py_DECREF(reference);
    return appended;
}

/* What a writable view handed out lets the caller change. */
enum { VIEW_ENERGY = 1, VIEW_PARAMETERS = 2 };

/* A writable view is handed out.  One that can change the energy (VIEW_ENERGY): the
   state's mechanical energy is recorded now (before the caller can write through it), and
   the view is remembered so that steps record it again while it lives.  One of the
   parameters (VIEW_PARAMETERS): the next step reads them again, and so does every step
   while it lives.  Steals nothing; returns view, or NULL with view released. */
static PyObject* watch_view(SystemObject* self, PyObject* view, int kinds) {
    if (view == NULL) return NULL;
    if (kinds & VIEW_ENERGY) {
        self->energy_written = 1;
        if (!mspy_busy(self)) ms_state_watch(self->model, self->state);
        if (remember_view(&self->energy_views, view) < 0) goto error;
    }
    if (kinds & VIEW_PARAMETERS) {
        self->parameters_written = 1;
        if (remember_view(&self->parameter_views, view) < 0) goto error;
    }
    return view;
error:
    Py_DECREF(view);
    return NULL;
}

/* A getter returning a zero-copy view of one C array (see mspy_make_view). */
#define VIEW_GETTER(name, pointer, ndim, d0, d1, typenum, writeable)                          \
    static PyObject* get_##name(SystemObject* self, void* closure) {                        \
        (void)closure;                                                                      \
        if (mspy_require_ready(self) < 0) return NULL;                                           \
        return mspy_make_view(self, pointer, ndim, (npy_intp)(d0), d1, typenum, writeable);      \
    }

/* The same for a writable view through which the caller can change the energy or the
   parameters (kinds: see watch_view). */
#define WATCHED_VIEW_GETTER(name, pointer, ndim, d0, d1, typenum, kinds)                      \
    static PyObject* get_##name(SystemObject* self, void* closure) {                        \
        (void)closure;                                                                      \
        if (mspy_require_ready(self) < 0) return NULL;                                           \
        return watch_view(self, mspy_make_view(self, pointer, ndim, (npy_intp)(d0), d1, typenum, 1), kinds); \
    }

WATCHED_VIEW_GETTER(x, self->state->x, 2, self->model->nnode, 3, NPY_DOUBLE, VIEW_ENERGY)
WATCHED_VIEW_GETTER(v, self->state->v, 2, self->model->nnode, 3, NPY_DOUBLE, VIEW_ENERGY)
VIEW_GETTER(f, self->state->f, 2, self->model->nnode, 3, NPY_DOUBLE, 1)

/* The external force is allocated (as zeros) the first time it is asked for. */
static PyObject* get_external(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    /* allocating it changes the state: not while another thread steps */
    if (self->state->external == NULL && mspy_require_idle(self) < 0) return NULL;
    ms_error err;
    double* external = ms_state_external(self->model, self->state, &err);
    if (external == NULL) return mspy_raise_ms_error(&err);
    return mspy_make_view(self, external, 2, (npy_intp)self->model->nnode, 3, NPY_DOUBLE, 1);
}
#define VIEW_BOTH (VIEW_ENERGY | VIEW_PARAMETERS)
WATCHED_VIEW_GETTER(mass, self->model->mass, 1, self->model->nnode, 0, NPY_DOUBLE, VIEW_BOTH)
WATCHED_VIEW_GETTER(pinned, self->model->pinned, 1, self->model->nnode, 0, NPY_BOOL, VIEW_BOTH)
VIEW_GETTER(springs, self->model->springs, 2, self->model->nspring, 2, NPY_INT32, 0)
WATCHED_VIEW_GETTER(rest, self->model->rest, 1, self->model->nspring, 0, NPY_DOUBLE, VIEW_BOTH)
WATCHED_VIEW_GETTER(k, self->model->k, 1, self->model->nspring, 0, NPY_DOUBLE, VIEW_BOTH)
WATCHED_VIEW_GETTER(c, self->model->c, 1, self->model->nspring, 0, NPY_DOUBLE, VIEW_PARAMETERS)
#undef VIEW_BOTH
VIEW_GETTER(faces, self->model->faces, 2, self->model->nface, 3, NPY_INT32, 0)

static PyObject* get_n_nodes(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nnode);
}
static PyObject* get_n_faces(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nface);
}
static PyObject* get_n_springs(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nspring);
}
static PyObject* get_workers(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyLong_FromLong(self->state->workers);
}

static PyObject* get_t(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(self->state->t);
}
static PyObject* get_steps(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->state->steps);
}
static PyObject* get_dissipated(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(ms_ledger_dissipated(&self->state->ledger));
}
static PyObject* get_work(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    const ms_ledger ledger = ms_state_ledger(self->model, self->state);
    return PyFloat_FromDouble(ms_ledger_work(&ledger));
}

static PyObject* get_solver_stats(SystemObject* self, void* closure) {
    (void)closure;
    if (mspy_require_ready(self) < 0) return NULL;
    const ms_solver_stats* st = &self->state->solver;
    return Py_BuildValue("{s:i,s:L,s:d,s:d,s:O,s:O,s:L}", "newton_iterations", st->newton_iterations,
                         "cg_iterations", (long long)st->cg_iterations, "newton_residual", st->newton_residual,
                         "cg_residual", st->cg_residual, "newton_converged",
                         st->newton_converged ? Py_True : Py_False, "cg_converged",
                         st->cg_converged ? Py_True : Py_False, "cg_failures", (long long)st->cg_failures);
}

/* The attributes that are not options (mspy_system_type adds one per row of the option table). */
const PyGetSetDef mspy_system_attributes[] = {
    {"x", (getter)get_x, NULL, "Positions (m), (n, 3) float64 view of C memory; writable.", NULL},
    {"v", (getter)get_v, NULL, "Velocities (m/s), (n, 3) float64 view; writable. A pinned node moves with its own v.",
     NULL},
    {"f", (getter)get_f, NULL, "Total force on each node (N) at the start of the last step, (n, 3) float64 view.",
     NULL},
    {"external", (getter)get_external, NULL, "External force added every step (N), (n, 3) float64 view; writable.",
     NULL},
    {"mass", (getter)get_mass, NULL, "Node masses (kg), (n,) float64 view; writable (> 0 on free nodes).", NULL},
    {"pinned", (getter)get_pinned, NULL, "Pinned flags, (n,) bool view; writable. Pinned nodes ignore forces.",
     NULL},
    {"springs", (getter)get_springs, NULL, "Node index pairs (i, j), (m, 2) int32 read-only view.", NULL},
    {"rest", (getter)get_rest, NULL, "Rest lengths L (m), (m,) float64 view; writable (>= 0).", NULL},
    {"k", (getter)get_k, NULL, "Spring stiffnesses (N/m), (m,) float64 view; writable (>= 0).", NULL},
    {"c", (getter)get_c, NULL, "Axial damping coefficients (N s/m), (m,) float64 view; writable (>= 0).", NULL},
    {"n_nodes", (getter)get_n_nodes, NULL, "Number of nodes (fixed).", NULL},
    {"n_springs", (getter)get_n_springs, NULL, "Number of springs (fixed).", NULL},
    {"n_faces", (getter)get_n_faces, NULL, "Number of triangles (fixed).", NULL},
    {"faces", (getter)get_faces, NULL, "Node indices of each triangle, (F, 3) int32 read-only view.", NULL},
    {"t", (getter)get_t, NULL, "Simulated time (s).", NULL},
    {"workers", (getter)get_workers, NULL,
     "Worker threads the last step() ran on (0 before the first): threads (or msprings.set_num_threads) for "
     "networks of 10,000 springs or more, 1 for smaller ones and for implicit Euler. Any number gives the same "
     "result, bit for bit.", NULL},
    {"steps", (getter)get_steps, NULL, "Steps taken since construction or reset().", NULL},
    {"dissipated", (getter)get_dissipated, NULL,
     "Energy removed since construction or reset() by dampers, drag in the air's frame, contact and friction, "
     "energy_loss, and (implicit_euler, projective, xpbd) the solver's own numerical dissipation (J). Without "
     "numerical it never decreases; a projective or xpbd step short of convergence can book numerical < 0.",
     NULL},
    {"work", (getter)get_work, NULL,
     "Work done on the system from outside since construction or reset() (J): wind, external force, moving "
     "pins and colliders, position corrections, and the caller's changes between steps.", NULL},
    {"solver_stats", (getter)get_solver_stats, NULL,
     "implicit_euler: what the solver did in the last step (a new dict): newton_iterations (0 when v' = v "
     "already solved the step to newton_tol), cg_iterations, "
     "newton_residual, cg_residual, newton_converged, cg_converged, and cg_failures (steps since reset whose CG "
     "solve hit cg_max_iter).",
     NULL},
};
const size_t mspy_system_attribute_count = sizeof mspy_system_attributes / sizeof mspy_system_attributes[0];
