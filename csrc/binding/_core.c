/*
 * msprings._core: the CPython binding of the C core.
 *
 * One type, System, owns an ms_model and an ms_state.  Its array attributes are NumPy
 * arrays that alias the C buffers (zero copy); each array's base is the System, so the
 * buffers live as long as any view does.  Sizes never change after construction, so a
 * view can never dangle.  This is the only file of the project that includes Python.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include "msprings/msprings.h"

typedef struct {
    PyObject* system_type;
    PyObject* divergence_error;
    int num_threads; /* worker threads of systems whose threads is 0 (0: all online cores) */
    long long process; /* this process's id: set when the module is made and again in a forked
                          child (os.register_at_fork), so a step call asks no system for it */
    PyGetSetDef* getset; /* System's attributes and options, with a sentinel (see system_type);
                            freed with the module, which outlives the type (the type holds it) */
} module_state;

typedef struct {
    PyObject_HEAD
    ms_model* model;        /* NULL until __init__ succeeds */
    ms_state* state;
    long long stepping;     /* the process whose thread is stepping this system (set with the GIL
                               held), 0 when none; see busy() */
    PyObject* energy_views; /* weak references to the writable views through which the caller
                               can change the energy (x, v, mass, pinned, rest, k); a list,
                               created by the first such view */
    PyObject* parameter_views; /* the same for the writable views of the parameters (mass,
                                  pinned, rest, k, c), which a step must read again while one
                                  lives */
    int parameters_written; /* a parameter view was handed out since the last step */
    int energy_written;     /* an energy view was handed out since the last step */
    int keep_start_energy;  /* each step call keeps the mechanical energy of the state it
                               starts from (state->start_energy), for a recording */
    int forces_unread;      /* step calls may leave f as it is (state->forces_unread): the
                               caller reads it only after a call without this */
    int continue_calls;     /* step calls continue one another (a recording): 0 no, 1 the next
                               call begins such a series, 2 it continues one (ms_state.continues_call) */
    PyObject* weakreflist;
} SystemObject;

static struct PyModuleDef core_module;

static module_state* state_of_type(PyTypeObject* type) {
    PyObject* module = PyType_GetModuleByDef(type, &core_module);
    return module == NULL ? NULL : (module_state*)PyModule_GetState(module);
}

/* ---- helpers -------------------------------------------------------------------- */

static int require_ready(SystemObject* self) {
    if (self->model == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "System is not initialised: construct it with System(positions, springs, ...)");
        return -1;
    }
    return 0;
}

/* The id of this process, as the module keeps it (ms_process_id without a system call). */
static long long this_process(const SystemObject* self) {
    const module_state* st = state_of_type(Py_TYPE(self));
    if (st == NULL) {
        PyErr_Clear();
        return ms_process_id();
    }
    return st->process;
}

/* Whether a thread of this process is stepping the system.  A process forked while one
   was has no such thread: there the system is idle, in the state the fork caught it in. */
static int busy(const SystemObject* self) { return self->stepping != 0 && self->stepping == this_process(self); }

static int require_idle(SystemObject* self) {
    if (require_ready(self) < 0) return -1;
    if (busy(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this System is being stepped by another thread; wait for that step to finish "
                        "(use a lock or step a copy())");
        return -1;
    }
    return 0;
}

static PyObject* raise_ms_error(const ms_error* err) {
    PyObject* type = err->status == MS_ERR_MEMORY ? PyExc_MemoryError : PyExc_ValueError;
    PyErr_SetString(type, err->message);
    return NULL;
}

/* A NumPy array of the given shape over C memory owned by self. */
static PyObject* make_view(SystemObject* self, void* data, int ndim, npy_intp d0, npy_intp d1, int typenum,
                           int writeable) {
    npy_intp dims[2] = {d0, d1};
    PyObject* array = PyArray_New(&PyArray_Type, ndim, dims, typenum, NULL, data, 0,
                                  writeable ? NPY_ARRAY_CARRAY : NPY_ARRAY_CARRAY_RO, NULL);
    if (array == NULL) return NULL;
    Py_INCREF(self);
    if (PyArray_SetBaseObject((PyArrayObject*)array, (PyObject*)self) < 0) {
        /* SetBaseObject steals the reference to self even when it fails. */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* Converts obj to a C-contiguous array of typenum with exactly the shape (d0[, d1]), any
   first dimension if d0 < 0; errors name the argument. */
static PyArrayObject* input_array(PyObject* obj, const char* name, int typenum, int ndim, npy_intp d0,
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
static int parse_integer(PyObject* value, const char* name, long long low, long long high, long long* out) {
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
static const char* parse_name(PyObject* value, const char* name) {
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

/* The one parser of integrator names: a name ms_integrator_from_name knows, else a
   ValueError that lists them. */
static int parse_integrator(PyObject* value, const char* name, ms_integrator* out) {
    const char* text = parse_name(value, name);
    if (text == NULL) return -1;
    int integrator = ms_integrator_from_name(text);
    if (integrator < 0) {
        char names[160] = "";
        for (int i = 0; i < MS_INTEGRATOR_COUNT; ++i) {
            strcat(names, i > 0 ? ", '" : "'");
            strcat(names, ms_integrator_name(i));
            strcat(names, "'");
        }
        PyErr_Format(PyExc_ValueError, "%s %R is unknown; choose one of %s", name, value, names);
        return -1;
    }
    *out = (ms_integrator)integrator;
    return 0;
}

/* The one parser of real arguments: a float, int or other real number (not complex, not
   text).  TypeError for anything else; ValueError naming the argument when it is beyond
   the largest double.  NaN and infinity pass: the caller's check decides. */
static int parse_real(PyObject* value, const char* name, double* out) {
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
static int parse_vector3(PyObject* value, const char* name, double out[3]) {
    PyArrayObject* array = input_array(value, name, NPY_DOUBLE, 1, 3, 0);
    if (array == NULL) return -1;
    memcpy(out, PyArray_DATA(array), sizeof(double) * 3);
    Py_DECREF(array);
    return 0;
}

/* ---- the caller's changes to the energy ----------------------------------------- */

/* Whether one of the views in a list of weak references (energy_views, parameter_views)
   is still alive: the caller may then write through it at any time (for the energy views
   each step ends by recording the energy; for the parameter views each step reads the
   parameters again).  Dead references are dropped.  Returns -1 with an exception set on
   failure. */
static int views_alive(PyObject* views) {
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
    if (PyList_GET_SIZE(*views) >= 32 && views_alive(*views) < 0) return -1;
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
        if (!busy(self)) ms_state_watch(self->model, self->state);
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

/* ---- options -------------------------------------------------------------------- */

/* How an option reads and writes in Python.  Each kind has one parser (above). */
typedef enum option_kind {
    OPTION_REAL,          /* a float */
    OPTION_REAL_OR_NONE,  /* a float; None writes 0, which turns the feature off */
    OPTION_OPTIONAL_REAL, /* None when off, else a float; an int in ms_options says which */
    OPTION_INTEGER,       /* an int, within [low, high] */
    OPTION_VECTOR3,       /* a new (3,) float64 array on reading; each component finite */
    OPTION_INTEGRATOR     /* an integrator name */
} option_kind;

static const char* const option_kind_names[] = {
    [OPTION_REAL] = "real",       [OPTION_REAL_OR_NONE] = "real_or_none", [OPTION_OPTIONAL_REAL] = "optional_real",
    [OPTION_INTEGER] = "integer", [OPTION_VECTOR3] = "vector3",           [OPTION_INTEGRATOR] = "integrator"};

/* One option of the system: the only description of it that the binding has.  The
   getters, setters and docstrings of the System's option attributes, the constructor's
   option arguments and _core.OPTIONS (which the model files follow) all come from it. */
typedef struct option_spec {
    const char* name;    /* Python attribute, and the model file's option_<name> entry */
    option_kind kind;
    size_t offset;       /* of the value in ms_options */
    size_t on_offset;    /* OPTION_OPTIONAL_REAL: of the int in ms_options that turns it on */
    double low, high;    /* valid values (of each component of a vector), as ms_options_check
                            and, for integers, the parser hold them; unused for integrators */
    int low_open, high_open; /* 1: that end is excluded (an infinite end always is) */
    int changes_energy;  /* the mechanical energy depends on it: a change is the caller's work */
    const char* doc;
} option_spec;

/* Ranges: low, high, low_open, high_open. */
#define RANGE_AT_LEAST_ZERO 0.0, INFINITY, 0, 1
#define RANGE_ABOVE_ZERO 0.0, INFINITY, 1, 1
#define RANGE_FINITE -INFINITY, INFINITY, 1, 1
#define RANGE_FRACTION 0.0, 1.0, 0, 1
#define RANGE_INTEGERS(low, high) low, high, 0, 0
#define RANGE_NONE 0.0, 0.0, 0, 0

#define THREADS_MAX 1024 /* worker threads a system or set_num_threads may ask for */

#define OFFSET(member) offsetof(ms_options, member)

static const option_spec options[] = {
    {"integrator", OPTION_INTEGRATOR, OFFSET(integrator), 0, RANGE_NONE, 0,
     "Integrator name: one of INTEGRATORS ('explicit_euler', 'symplectic_euler', 'velocity_verlet', 'rk4', "
     "'implicit_euler', 'projective', 'xpbd'). Default 'symplectic_euler'."},
    {"chebyshev", OPTION_REAL, OFFSET(chebyshev), 0, RANGE_FRACTION, 0,
     "projective: Chebyshev acceleration of the local/global rounds (Wang 2015), given rho in [0, 1), an "
     "estimate of the factor by which each round shrinks the error (e.g. 0.99); 0 (default) = off."},
    {"iterations", OPTION_INTEGER, OFFSET(iterations), 0, RANGE_INTEGERS(0, INT_MAX), 0,
     "projective and xpbd: solver iterations per step (>= 0). 0, the default, means the integrator's own: "
     "10 local/global rounds for projective, 1 sweep over the springs for xpbd (many small steps beat many "
     "iterations)."},
    {"gravity", OPTION_VECTOR3, OFFSET(gravity), 0, RANGE_FINITE, 1,
     "Gravitational acceleration g (m/s^2), shape (3,). Default (0, -9.81, 0). A change moves the "
     "gravitational energy: the next step books it as the caller's work (ledger user)."},
    {"drag", OPTION_REAL, OFFSET(drag), 0, RANGE_AT_LEAST_ZERO, 0,
     "Linear drag coefficient b (N s/m, >= 0): force -b (v - wind) on every node. Default 0."},
    {"energy_loss", OPTION_REAL, OFFSET(energy_loss), 0, RANGE_FRACTION, 0,
     "Fraction of every free velocity removed after each step, in [0, 1). Not physical: its effect depends on "
     "dt. Default 0."},
    {"strain_limit", OPTION_OPTIONAL_REAL, OFFSET(strain_limit), OFFSET(strain_limiting), RANGE_AT_LEAST_ZERO, 0,
     "Strain limiting (Provot 1995): None (off, the default) or tau >= 0 (dimensionless); after each step every "
     "spring longer than (1 + tau) L is shortened to that length."},
    {"threads", OPTION_INTEGER, OFFSET(threads), 0, RANGE_INTEGERS(0, THREADS_MAX), 0,
     "Worker threads for large networks (>= 10000 springs), with every integrator but projective dynamics "
     "(which runs on one), "
     "in [0, 1024] (at most 64 are used): 0 (default) = the process-wide setting of "
     "msprings.set_num_threads (all online cores unless set), 1 = single-threaded. Any number of threads "
     "gives the same result, bit for bit; `workers` says how many the last step ran on."},
    {"self_collision", OPTION_REAL_OR_NONE, OFFSET(self_collision), 0, 0.0, MS_SELF_COLLISION_MAX, 0, 0, 0,
     "Self-collision distance (m, in [0, 1e6]): after each step, nodes closer than this that no spring joins "
     "are pushed apart and their approach velocity removed (spatial hash grid, linear cost while the distance "
     "stays below about half the node spacing). 0 or None turns it off (the default; reads 0.0); a distance "
     "below 1e-12 m, the separation under which two nodes count as coincident, has nothing to act on."},
    {"newton_max_iter", OPTION_INTEGER, OFFSET(implicit.newton_max_iter), 0, RANGE_INTEGERS(1, INT_MAX), 0,
     "implicit_euler: Newton iterations per step at most (>= 1; 1 gives the linearised Baraff-Witkin step). "
     "Default 50."},
    {"newton_tol", OPTION_REAL, OFFSET(implicit.newton_tol), 0, RANGE_ABOVE_ZERO, 0,
     "implicit_euler: relative Newton tolerance on |M dv - h f(x', v')| (dimensionless, > 0). Default 1e-8."},
    {"cg_max_iter", OPTION_INTEGER, OFFSET(implicit.cg_max_iter), 0, RANGE_INTEGERS(1, INT_MAX), 0,
     "implicit_euler: conjugate-gradient iterations per linear solve at most (>= 1). Default 1000."},
    {"cg_tol", OPTION_REAL, OFFSET(implicit.cg_tol), 0, RANGE_ABOVE_ZERO, 0,
     "implicit_euler: relative CG residual tolerance of each Newton iteration's linear solve (dimensionless, "
     "> 0). Newton's own tolerance sets the final accuracy: each iteration need only cut the residual of its "
     "linearisation 100-fold to keep the iteration count, so the default is 1e-2; with newton_max_iter = 1 "
     "this is the only tolerance (set it lower for an exact linearised step). Default 1e-2."},
    {"air_density", OPTION_REAL, OFFSET(air.density), 0, RANGE_AT_LEAST_ZERO, 0,
     "Air density rho (kg/m^3, >= 0), default 1.2."},
    {"drag_coefficient", OPTION_REAL, OFFSET(air.drag_coefficient), 0, RANGE_AT_LEAST_ZERO, 0,
     "Pressure-drag coefficient C_d of the triangles (dimensionless, >= 0); 0 (default) turns face forces "
     "off."},
    {"lift_coefficient", OPTION_REAL, OFFSET(air.lift_coefficient), 0, RANGE_AT_LEAST_ZERO, 0,
     "Lift coefficient C_l of the triangles (dimensionless, >= 0), default 0."},
    {"wind", OPTION_VECTOR3, OFFSET(air.wind), 0, RANGE_FINITE, 0,
     "Uniform wind velocity W (m/s), shape (3,). Default (0, 0, 0)."},
    {"gust", OPTION_REAL, OFFSET(air.gust), 0, RANGE_AT_LEAST_ZERO, 0,
     "Gust amplitude A (m/s, >= 0): adds A (1.5 |sin(kappa x + omega t) + cos(kappa y + omega t)|, 0, "
     "0.5 sin(omega t)) to the wind. Default 0."},
    {"gust_frequency", OPTION_REAL, OFFSET(air.gust_frequency), 0, RANGE_FINITE, 0,
     "Gust angular frequency omega (rad/s, finite), default 5."},
    {"gust_wavenumber", OPTION_REAL, OFFSET(air.gust_wavenumber), 0, RANGE_FINITE, 0,
     "Gust wavenumber kappa (rad/m, finite), default 1."},
};
#define OPTION_COUNT (sizeof options / sizeof options[0])

#undef OFFSET
#undef RANGE_AT_LEAST_ZERO
#undef RANGE_ABOVE_ZERO
#undef RANGE_FINITE
#undef RANGE_FRACTION
#undef RANGE_INTEGERS
#undef RANGE_NONE

static const option_spec* option_named(const char* name) {
    for (size_t i = 0; i < OPTION_COUNT; ++i)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

/* Parses value as the option's kind into opt (a copy: the caller checks it before
   committing).  Returns 0, or -1 with a TypeError or ValueError naming the option. */
static int parse_option(const option_spec* spec, PyObject* value, ms_options* opt) {
    char* field = (char*)opt + spec->offset;
    switch (spec->kind) {
    case OPTION_REAL:
        return parse_real(value, spec->name, (double*)field);
    case OPTION_REAL_OR_NONE:
        if (value != Py_None) return parse_real(value, spec->name, (double*)field);
        *(double*)field = 0.0;
        return 0;
    case OPTION_OPTIONAL_REAL: {
        const int on = value != Py_None;
        if (on && parse_real(value, spec->name, (double*)field) < 0) return -1;
        *(int*)((char*)opt + spec->on_offset) = on;
        return 0;
    }
    case OPTION_INTEGER: {
        long long number = 0;
        if (parse_integer(value, spec->name, (long long)spec->low, (long long)spec->high, &number) < 0) return -1;
        *(int*)field = (int)number;
        return 0;
    }
    case OPTION_VECTOR3:
        return parse_vector3(value, spec->name, (double*)field);
    case OPTION_INTEGRATOR:
        return parse_integrator(value, spec->name, (ms_integrator*)field);
    }
    PyErr_Format(PyExc_SystemError, "option %s has an unknown kind", spec->name);
    return -1;
}

static PyObject* get_option(SystemObject* self, void* closure) {
    const option_spec* spec = (const option_spec*)closure;
    if (require_ready(self) < 0) return NULL;
    const ms_options* opt = &self->model->opt;
    const char* field = (const char*)opt + spec->offset;
    switch (spec->kind) {
    case OPTION_OPTIONAL_REAL:
        if (!*(const int*)((const char*)opt + spec->on_offset)) Py_RETURN_NONE;
        return PyFloat_FromDouble(*(const double*)field);
    case OPTION_REAL:
    case OPTION_REAL_OR_NONE:
        return PyFloat_FromDouble(*(const double*)field);
    case OPTION_INTEGER:
        return PyLong_FromLong(*(const int*)field);
    case OPTION_VECTOR3: {
        npy_intp dims[1] = {3};
        PyObject* out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
        if (out != NULL) memcpy(PyArray_DATA((PyArrayObject*)out), field, sizeof(double) * 3);
        return out;
    }
    case OPTION_INTEGRATOR:
        return PyUnicode_FromString(ms_integrator_name(*(const ms_integrator*)field));
    }
    PyErr_Format(PyExc_SystemError, "option %s has an unknown kind", spec->name);
    return NULL;
}

/* Parses the value into a copy of the options, checks the whole copy, and commits it only
   if it is valid: a bad value leaves the system unchanged. */
static int set_option(SystemObject* self, PyObject* value, void* closure) {
    const option_spec* spec = (const option_spec*)closure;
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "%s cannot be deleted", spec->name);
        return -1;
    }
    if (require_idle(self) < 0) return -1;
    ms_options opt = self->model->opt;
    if (parse_option(spec, value, &opt) < 0) return -1;
    ms_error err;
    if (ms_options_check(&opt, &err) != MS_OK) {
        raise_ms_error(&err);
        return -1;
    }
    /* the energy before the change is the one the next step books it against */
    if (spec->changes_energy) ms_state_watch(self->model, self->state);
    self->model->opt = opt;
    return 0;
}

/* ---- construction --------------------------------------------------------------- */

static void System_dealloc(SystemObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)self);
    Py_XDECREF(self->energy_views);
    Py_XDECREF(self->parameter_views);
    ms_state_destroy(self->state);
    ms_model_destroy(self->model);
    type->tp_free((PyObject*)self);
    Py_DECREF(type);
}

static int System_init(SystemObject* self, PyObject* args, PyObject* kwargs) {
    static char* keywords[] = {"positions", "springs",  "mass",    "k",           "c",          "rest",
                               "pinned",    "velocities", "gravity", "drag",        "energy_loss", "integrator",
                               "faces",     NULL};
    /* the options the constructor takes, in the order of keywords */
    static const char* const option_names[] = {"gravity", "drag", "energy_loss", "integrator"};
    PyObject *positions_in, *springs_in, *mass_in, *k_in, *c_in, *rest_in, *pinned_in, *velocities_in;
    PyObject* options_in[] = {NULL, NULL, NULL, NULL};
    PyObject* faces_in = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOO|OOOOO:System", keywords, &positions_in, &springs_in,
                                     &mass_in, &k_in, &c_in, &rest_in, &pinned_in, &velocities_in, &options_in[0],
                                     &options_in[1], &options_in[2], &options_in[3], &faces_in))
        return -1;
    if (self->model != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "System is already initialised; its sizes are fixed (build a new one)");
        return -1;
    }

    int result = -1;
    PyArrayObject *positions = NULL, *springs = NULL, *mass = NULL, *k = NULL, *c = NULL, *rest = NULL,
                  *pinned = NULL, *velocities = NULL, *faces = NULL;
    ms_model* model = NULL;
    ms_state* state = NULL;
    ms_error err;

    ms_options opt = ms_default_options();
    for (size_t i = 0; i < sizeof option_names / sizeof option_names[0]; ++i)
        if (options_in[i] != NULL && parse_option(option_named(option_names[i]), options_in[i], &opt) < 0)
            goto done;

    if ((positions = input_array(positions_in, "positions", NPY_DOUBLE, 2, -1, 3)) == NULL) goto done;
    npy_intp nnode = PyArray_DIM(positions, 0);
    if ((springs = input_array(springs_in, "springs", NPY_INT32, 2, -1, 2)) == NULL) goto done;
    npy_intp nspring = PyArray_DIM(springs, 0);
    if ((mass = input_array(mass_in, "mass", NPY_DOUBLE, 1, nnode, 0)) == NULL) goto done;
    if ((k = input_array(k_in, "k", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((c = input_array(c_in, "c", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((rest = input_array(rest_in, "rest", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((pinned = input_array(pinned_in, "pinned", NPY_BOOL, 1, nnode, 0)) == NULL) goto done;
    if ((velocities = input_array(velocities_in, "velocities", NPY_DOUBLE, 2, nnode, 3)) == NULL) goto done;
    if (faces_in != NULL && faces_in != Py_None &&
        (faces = input_array(faces_in, "faces", NPY_INT32, 2, -1, 3)) == NULL)
        goto done;
    npy_intp nface = faces != NULL ? PyArray_DIM(faces, 0) : 0;

    model = ms_model_create(nnode, nspring, nface, &err);
    if (model == NULL) {
        raise_ms_error(&err);
        goto done;
    }
    memcpy(model->x_initial, PyArray_DATA(positions), sizeof(double) * 3 * (size_t)nnode);
    memcpy(model->v_initial, PyArray_DATA(velocities), sizeof(double) * 3 * (size_t)nnode);
    memcpy(model->springs, PyArray_DATA(springs), sizeof(int32_t) * 2 * (size_t)nspring);
    memcpy(model->mass, PyArray_DATA(mass), sizeof(double) * (size_t)nnode);
    memcpy(model->k, PyArray_DATA(k), sizeof(double) * (size_t)nspring);
    memcpy(model->c, PyArray_DATA(c), sizeof(double) * (size_t)nspring);
    memcpy(model->rest, PyArray_DATA(rest), sizeof(double) * (size_t)nspring);
    if (nface > 0) memcpy(model->faces, PyArray_DATA(faces), sizeof(int32_t) * 3 * (size_t)nface);
    const npy_bool* pins = (const npy_bool*)PyArray_DATA(pinned);
    for (npy_intp i = 0; i < nnode; ++i) model->pinned[i] = pins[i] ? 1 : 0;
    model->opt = opt;
    if (ms_model_check(model, &err) != MS_OK) {
        raise_ms_error(&err);
        goto done;
    }
    state = ms_state_create(model, &err);
    if (state == NULL) {
        raise_ms_error(&err);
        goto done;
    }
    self->model = model;
    self->state = state;
    model = NULL; /* the system owns it now */
    result = 0;

done:
    ms_model_destroy(model);
    Py_XDECREF(positions);
    Py_XDECREF(springs);
    Py_XDECREF(mass);
    Py_XDECREF(k);
    Py_XDECREF(c);
    Py_XDECREF(rest);
    Py_XDECREF(pinned);
    Py_XDECREF(velocities);
    Py_XDECREF(faces);
    return result;
}

/* ---- stepping ------------------------------------------------------------------- */

/* Steps per GIL-free chunk: about 5e7 node-and-spring visits, so Ctrl-C is noticed within
   a fraction of a second and the per-call checks cost nothing measurable. */
static int64_t chunk_steps(const ms_model* m) {
    int64_t work = m->nnode + m->nspring;
    int64_t chunk = 50000000 / (work > 0 ? work : 1);
    return chunk > 0 ? chunk : 1;
}

static PyObject* raise_divergence(SystemObject* self, const ms_error* err) {
    module_state* st = state_of_type(Py_TYPE(self));
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

static PyObject* System_step(SystemObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
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
    else if (parse_real(dt_obj, "dt", &dt) < 0)
        return NULL;
    long long n = 1;
    if (n_obj != NULL && parse_integer(n_obj, "n", 1, LLONG_MAX, &n) < 0) return NULL;
    if (require_idle(self) < 0) return NULL;

    ms_model* model = self->model;
    ms_state* state = self->state;
    ms_error err;
    int status = MS_OK;
    const int64_t chunk = chunk_steps(model);
    /* n can be up to LLONG_MAX: compare without multiplying (no signed overflow) */
    /* the GIL is released unless the call is short for sure (in doubles: no overflow) */
    const double work = (double)(model->nnode + model->nspring) * passes_per_step(model);
    const int release = (double)n * work > 80000.0;
    module_state* st = state_of_type(Py_TYPE(self));
    if (st == NULL) return NULL;
    state->default_threads = st->num_threads;
    const int energy_views = views_alive(self->energy_views);
    const int parameter_views = energy_views < 0 ? -1 : views_alive(self->parameter_views);
    if (parameter_views < 0) return NULL;
    state->watch_after_step = energy_views;
    /* the parameters need reading again if a view of them was handed out since the last
       step, or one lives on (the caller may write through it, even during the step) */
    int parameters_unchanged = !self->parameters_written && !parameter_views;
    /* likewise x and v, through the energy views (the only way to write them) */
    int motion_unchanged = !self->energy_written && !energy_views;
    self->parameters_written = self->energy_written = 0;
    self->stepping = st->process;
    int interrupted = 0; /* a signal handler raised, during a chunk or between chunks */
    signal_check check = {NULL, 0};
    const ms_interrupt interrupt = {check_signals, &check};
    int start_energy_valid = 0; /* the first chunk's, which the call starts with */
    double start_energy[3] = {0.0, 0.0, 0.0};
    for (long long done = 0; done < n && status == MS_OK && !interrupted;) {
        int64_t count = n - done < chunk ? n - done : chunk;
        state->parameters_unchanged = parameters_unchanged;
        state->motion_unchanged = motion_unchanged;
        state->keep_start_energy = self->keep_start_energy && done == 0;
        state->forces_unread = self->forces_unread;
        /* the chunks are one call: a failure of any undoes them all (and a recording's
           calls are one call too) */
        state->continues_call = done > 0 || self->continue_calls == 2;
        state->call_continues = done + count < n || self->continue_calls != 0;
        parameters_unchanged = !parameter_views;
        motion_unchanged = !energy_views;
        if (release) {
            check.released = PyEval_SaveThread();
            status = ms_step_checked(model, state, dt, count, &interrupt, &err);
            PyEval_RestoreThread(check.released);
            check.released = NULL;
        } else {
            status = ms_step_checked(model, state, dt, count, &interrupt, &err);
        }
        if (check.raised) interrupted = 1;
        if (done == 0) {
            start_energy_valid = state->start_energy_valid;
            memcpy(start_energy, state->start_energy, sizeof start_energy);
        }
        done += count;
        if (status == MS_OK && !interrupted && done < n && PyErr_CheckSignals() < 0) interrupted = 1;
    }
    self->stepping = 0;
    state->start_energy_valid = start_energy_valid;
    memcpy(state->start_energy, start_energy, sizeof start_energy);
    if (self->continue_calls == 1 && status == MS_OK && !interrupted) self->continue_calls = 2;
    if (interrupted) {
        ms_step_roll_back(model, state); /* an interrupted call is undone like a failed one */
        return NULL;
    }
    if (status == MS_ERR_DIVERGED) return raise_divergence(self, &err);
    if (status != MS_OK) return raise_ms_error(&err);
    Py_RETURN_NONE;
}

/* ---- methods -------------------------------------------------------------------- */

static PyObject* System_accounts(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
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

static PyObject* System_ledger(SystemObject* self, PyObject* args) {
    int pending = 1;
    if (!PyArg_ParseTuple(args, "|p:_ledger", &pending)) return NULL;
    if (require_ready(self) < 0) return NULL;
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

static PyObject* System_momentum(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    npy_intp dims[1] = {3};
    PyObject* out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    ms_state_momentum(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

typedef void (*spring_measure)(const ms_model*, const ms_state*, double*);

static PyObject* spring_array(SystemObject* self, spring_measure measure) {
    if (require_ready(self) < 0) return NULL;
    npy_intp dims[1] = {(npy_intp)self->model->nspring};
    PyObject* out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    measure(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

static PyObject* System_lengths(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_lengths);
}

static PyObject* System_strain(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_strain);
}

static PyObject* System_tension(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    return spring_array(self, ms_spring_tension);
}

static PyObject* System_update_forces(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_idle(self) < 0) return NULL;
    ms_error err;
    if (ms_state_forces(self->model, self->state, NULL, &err) != MS_OK) return raise_ms_error(&err);
    return make_view(self, self->state->f, 2, (npy_intp)self->model->nnode, 3, NPY_DOUBLE, 1);
}

static PyObject* System_reset(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_idle(self) < 0) return NULL;
    ms_state_reset(self->model, self->state);
    Py_RETURN_NONE;
}

static PyObject* System_copy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_idle(self) < 0) return NULL;
    PyTypeObject* type = Py_TYPE(self);
    SystemObject* copy = (SystemObject*)type->tp_alloc(type, 0);
    if (copy == NULL) return NULL;
    ms_error err;
    copy->model = ms_model_copy(self->model, &err);
    if (copy->model != NULL) copy->state = ms_state_copy(self->model, self->state, &err);
    if (copy->model == NULL || copy->state == NULL) {
        Py_DECREF(copy);
        return raise_ms_error(&err);
    }
    return (PyObject*)copy;
}

static PyObject* System_max_eigenvalues(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    double omega2 = 0.0, gamma = 0.0;
    ms_error err;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = ms_max_eigenvalues(self->model, self->state, &omega2, &gamma, &err);
    Py_END_ALLOW_THREADS
    if (status != MS_OK) return raise_ms_error(&err);
    return Py_BuildValue("(dd)", omega2, gamma);
}

/* ---- colliders ------------------------------------------------------------------ */

/* Parses (kind, center, axis, size, velocity, restitution, friction, thickness). */
static int parse_collider(PyObject* args, Py_ssize_t offset, ms_collider* c) {
    if (PyTuple_GET_SIZE(args) != offset + 8) {
        PyErr_SetString(PyExc_TypeError,
                        "expected (kind, center, axis, size, velocity, restitution, friction, thickness)");
        return -1;
    }
    PyObject* kind = PyTuple_GET_ITEM(args, offset);
    const char* name = parse_name(kind, "collider kind");
    if (name == NULL) return -1;
    int type = -1;
    for (int t = 0; t < MS_COLLIDER_TYPE_COUNT; ++t)
        if (strcmp(name, ms_collider_type_name(t)) == 0) type = t;
    if (type < 0) {
        PyErr_Format(PyExc_ValueError, "collider kind %R is unknown; choose plane, sphere, box or cylinder", kind);
        return -1;
    }
    c->type = (ms_collider_type)type;
    if (parse_vector3(PyTuple_GET_ITEM(args, offset + 1), "center", c->center) < 0 ||
        parse_vector3(PyTuple_GET_ITEM(args, offset + 2), "axis", c->axis) < 0 ||
        parse_vector3(PyTuple_GET_ITEM(args, offset + 3), "size", c->size) < 0 ||
        parse_vector3(PyTuple_GET_ITEM(args, offset + 4), "velocity", c->velocity) < 0 ||
        parse_real(PyTuple_GET_ITEM(args, offset + 5), "restitution", &c->restitution) < 0 ||
        parse_real(PyTuple_GET_ITEM(args, offset + 6), "friction", &c->friction) < 0 ||
        parse_real(PyTuple_GET_ITEM(args, offset + 7), "thickness", &c->thickness) < 0)
        return -1;
    return 0;
}

static PyObject* System_add_collider(SystemObject* self, PyObject* args) {
    if (require_idle(self) < 0) return NULL;
    ms_collider c;
    memset(&c, 0, sizeof c);
    if (parse_collider(args, 0, &c) < 0) return NULL;
    ms_error err;
    int64_t id = ms_add_collider(self->model, self->state, &c, &err);
    if (id < 0) return raise_ms_error(&err);
    return PyLong_FromLongLong(id);
}

/* A collider id (any int64; one that names no collider is a KeyError later). */
static int parse_id(PyObject* value, int64_t* out) {
    long long id = 0;
    if (parse_integer(value, "collider id", LLONG_MIN, LLONG_MAX, &id) < 0) return -1;
    *out = (int64_t)id;
    return 0;
}

static PyObject* System_set_collider(SystemObject* self, PyObject* args) {
    if (require_idle(self) < 0) return NULL;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "expected (id, kind, center, axis, size, velocity, restitution, friction, thickness)");
        return NULL;
    }
    ms_collider c;
    memset(&c, 0, sizeof c);
    if (parse_id(PyTuple_GET_ITEM(args, 0), &c.id) < 0 || parse_collider(args, 1, &c) < 0) return NULL;
    ms_error err;
    if (ms_set_collider(self->model, self->state, &c, &err) != MS_OK) return raise_ms_error(&err);
    Py_RETURN_NONE;
}

static PyObject* vector_tuple(const double v[3]) { return Py_BuildValue("(ddd)", v[0], v[1], v[2]); }

static PyObject* System_get_collider(SystemObject* self, PyObject* id_obj) {
    if (require_ready(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    const ms_collider* c = ms_find_collider(self->model, id);
    const double* center = ms_collider_position(self->state, id);
    if (c == NULL || center == NULL) {
        PyErr_Format(PyExc_KeyError, "no collider with id %lld in this system (it was removed?)", (long long)id);
        return NULL;
    }
    return Py_BuildValue("(sNNNNddd)", ms_collider_type_name(c->type), vector_tuple(center), vector_tuple(c->axis),
                         vector_tuple(c->size), vector_tuple(c->velocity), c->restitution, c->friction, c->thickness);
}

static PyObject* System_collider_start(SystemObject* self, PyObject* id_obj) {
    if (require_ready(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    const ms_collider* c = ms_find_collider(self->model, id);
    if (c == NULL) {
        PyErr_Format(PyExc_KeyError, "no collider with id %lld in this system (it was removed?)", (long long)id);
        return NULL;
    }
    return vector_tuple(c->center);
}

static PyObject* System_remove_collider(SystemObject* self, PyObject* id_obj) {
    if (require_idle(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    ms_error err;
    if (ms_remove_collider(self->model, self->state, id, &err) != MS_OK) {
        PyErr_SetString(PyExc_KeyError, err.message);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject* System_collider_ids(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    PyObject* ids = PyTuple_New((Py_ssize_t)self->model->ncollider);
    if (ids == NULL) return NULL;
    for (int64_t k = 0; k < self->model->ncollider; ++k) {
        PyObject* id = PyLong_FromLongLong(self->model->colliders[k].id);
        if (id == NULL) {
            Py_DECREF(ids);
            return NULL;
        }
        PyTuple_SET_ITEM(ids, (Py_ssize_t)k, id);
    }
    return ids;
}

static PyObject* System_vertex_normals(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    npy_intp dims[2] = {(npy_intp)self->model->nnode, 3};
    PyObject* out = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (out == NULL) return NULL;
    ms_vertex_normals(self->model, self->state, (double*)PyArray_DATA((PyArrayObject*)out));
    return out;
}

static PyObject* System_wind_at(SystemObject* self, PyObject* args) {
    if (require_ready(self) < 0) return NULL;
    PyObject *points_in, *t_in;
    double t;
    if (!PyArg_ParseTuple(args, "OO:_wind_at", &points_in, &t_in) || parse_real(t_in, "t", &t) < 0) return NULL;
    PyArrayObject* points = input_array(points_in, "points", NPY_DOUBLE, 2, -1, 3);
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

static PyObject* System_initial_state(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
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

static PyObject* System_restore_clock(SystemObject* self, PyObject* args) {
    if (require_idle(self) < 0) return NULL;
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

static PyObject* System_watched_energy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(self->state->watched ? self->state->watched_energy : NAN);
}

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

static PyObject* System_record_state(SystemObject* self, PyObject* args) {
    PyObject *positions, *velocities = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:_record_state", &positions, &velocities)) return NULL;
    if (require_ready(self) < 0) return NULL;
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

static PyObject* System_keep_start_energy(SystemObject* self, PyObject* flag) {
    const int keep = PyObject_IsTrue(flag);
    if (keep < 0) return NULL;
    self->keep_start_energy = keep;
    Py_RETURN_NONE;
}

static PyObject* System_continue_calls(SystemObject* self, PyObject* flag) {
    if (require_ready(self) < 0) return NULL;
    const int continued = PyObject_IsTrue(flag);
    if (continued < 0) return NULL;
    self->continue_calls = continued;
    if (!continued && !busy(self)) ms_step_end_call(self->state);
    Py_RETURN_NONE;
}

static PyObject* System_roll_back(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0 || require_idle(self) < 0) return NULL;
    return PyBool_FromLong(ms_step_roll_back(self->model, self->state));
}

static PyObject* System_check_dt(SystemObject* self, PyObject* dt_obj) {
    (void)self;
    double dt;
    if (parse_real(dt_obj, "dt", &dt) < 0) return NULL;
    ms_error err;
    if (ms_time_step_check(dt, &err) != MS_OK) return raise_ms_error(&err);
    Py_RETURN_NONE;
}

static PyObject* System_shares_state(SystemObject* self, PyObject* obj) {
    if (require_ready(self) < 0) return NULL;
    if (!PyArray_Check(obj)) Py_RETURN_FALSE;
    const char *low, *high;
    array_bounds((PyArrayObject*)obj, &low, &high);
    return PyBool_FromLong(meets_state(self, low, high));
}

static PyObject* System_leave_forces(SystemObject* self, PyObject* flag) {
    const int leave = PyObject_IsTrue(flag);
    if (leave < 0) return NULL;
    self->forces_unread = leave;
    Py_RETURN_NONE;
}

static PyObject* System_start_energy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    const ms_state* s = self->state;
    if (!s->start_energy_valid) Py_RETURN_NONE;
    return Py_BuildValue("(ddd)", s->start_energy[0], s->start_energy[1], s->start_energy[2]);
}

static PyObject* System_check_values(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    ms_error err;
    if (ms_model_check_values(self->model, &err) != MS_OK || ms_state_check(self->model, self->state, &err) != MS_OK)
        return raise_ms_error(&err);
    Py_RETURN_NONE;
}

static PyObject* System_eigenvalue_bounds(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (require_ready(self) < 0) return NULL;
    double omega2 = 0.0, gamma = 0.0;
    ms_eigenvalue_bounds(self->model, self->state, &omega2, &gamma);
    return Py_BuildValue("(dd)", omega2, gamma);
}

static PyMethodDef System_methods[] = {
    {"step", (PyCFunction)(void (*)(void))System_step, METH_FASTCALL | METH_KEYWORDS,
     "step(dt, n=1)\n--\n\nAdvance n steps of dt seconds with the current integrator, inside C with the GIL "
     "released.\n\nRaises ValueError (nothing changed) for a bad dt or n or a bad value written through a view, "
     "and DivergenceError if the state becomes non-finite; KeyboardInterrupt (Ctrl-C, checked about every 25 ms "
     "of the call's work) likewise: the call is undone, the state is as it was before it."},
    {"_accounts", (PyCFunction)System_accounts, METH_NOARGS,
     "((kinetic, spring, gravity, dissipated, work), (the ledger's eleven parts)) in J, from one pass."},
    {"_ledger", (PyCFunction)System_ledger, METH_VARARGS,
     "_ledger(pending=True): (dampers, drag, contact, energy_loss, numerical, wind, external, pins, colliders, "
     "constraints, user) in J; user includes the caller's change that the next step books unless pending is false."},
    {"momentum", (PyCFunction)System_momentum, METH_NOARGS,
     "momentum()\n--\n\nTotal linear momentum sum(m v) of the free nodes (kg m/s), shape (3,)."},
    {"lengths", (PyCFunction)System_lengths, METH_NOARGS,
     "lengths()\n--\n\nCurrent length l of every spring (m), shape (m,)."},
    {"strain", (PyCFunction)System_strain, METH_NOARGS,
     "strain()\n--\n\n(l - L) / L of every spring (dimensionless); inf for a stretched zero-rest-length "
     "spring."},
    {"tension", (PyCFunction)System_tension, METH_NOARGS,
     "tension()\n--\n\nAxial force k (l - L) + c (v_j - v_i).n of every spring (N), positive when it pulls its "
     "ends together."},
    {"update_forces", (PyCFunction)System_update_forces, METH_NOARGS,
     "update_forces()\n--\n\nEvaluate the total force on every node at the current state into f and return "
     "the f view (N).  It is summed as a step on one thread sums it, so it equals the f such a step from this "
     "state leaves behind (a step on several threads sums in another order: equal to round-off)."},
    {"vertex_normals", (PyCFunction)System_vertex_normals, METH_NOARGS,
     "vertex_normals()\n--\n\nArea-weighted unit normals of the triangles at every node, (n, 3); zero for a node in "
     "no triangle."},
    {"_wind_at", (PyCFunction)System_wind_at, METH_VARARGS, "_wind_at(points (k, 3), t) -> wind velocity (k, 3)"},
    {"_initial_state", (PyCFunction)System_initial_state, METH_NOARGS,
     "(x0, v0): copies of the positions and velocities that reset() restores."},
    {"_restore_clock", (PyCFunction)System_restore_clock, METH_VARARGS,
     "_restore_clock(t, steps, ledger, watched=nan): set the time, step count, the ledger's eleven values and the "
     "recorded energy that the next step books the caller's changes against (nan: none) (model files)."},
    {"_watched_energy", (PyCFunction)System_watched_energy, METH_NOARGS,
     "The mechanical energy (J) the next step books the caller's changes against, or nan."},
    {"_record_state", (PyCFunction)System_record_state, METH_VARARGS,
     "_record_state(positions, velocities=None): copies x (m) and, unless velocities is None, v (m/s) into these "
     "rows of a recording (writable C-contiguous float64, nodes x 3), bypassing the caches where it can."},
    {"_continue_calls", (PyCFunction)System_continue_calls, METH_O,
     "_continue_calls(flag): from now on, whether each step call continues the one before (a recording): a failure "
     "then undoes every call since the first, and _roll_back() can; False ends such a series."},
    {"_roll_back", (PyCFunction)System_roll_back, METH_NOARGS,
     "_roll_back(): undoes the step calls made since _continue_calls(True), as a failure of the next would; "
     "returns False if there is nothing to undo."},
    {"_keep_start_energy", (PyCFunction)System_keep_start_energy, METH_O,
     "_keep_start_energy(flag): from now on, whether each step call keeps the mechanical energy of the state it "
     "starts from for _start_energy (a by-product of its first forces)."},
    {"_check_dt", (PyCFunction)System_check_dt, METH_O,
     "_check_dt(dt): TypeError or ValueError, as step() raises them, unless dt is a finite number of seconds > 0."},
    {"_shares_state", (PyCFunction)System_shares_state, METH_O,
     "_shares_state(array): whether the array's memory meets the state's x, v, f or external force."},
    {"_leave_forces", (PyCFunction)System_leave_forces, METH_O,
     "_leave_forces(flag): from now on, whether step calls may leave f as it is, for a caller that reads f only "
     "after a call without the flag (a recording between records)."},
    {"_start_energy", (PyCFunction)System_start_energy, METH_NOARGS,
     "(kinetic, spring, gravity) in J of the state the last step call started from, as energy() has them to "
     "rounding, or None if that call did not keep them."},
    {"_check_values", (PyCFunction)System_check_values, METH_NOARGS,
     "_check_values(): ValueError if a value written through a view is invalid (the check step() makes)."},
    {"_eigenvalue_bounds", (PyCFunction)System_eigenvalue_bounds, METH_NOARGS,
     "(omega2_bound, gamma_bound): Gershgorin upper bounds on the values _max_eigenvalues estimates."},
    {"_max_eigenvalues", (PyCFunction)System_max_eigenvalues, METH_NOARGS,
     "(omega2_max, gamma_max): largest eigenvalues of M^-1 K (1/s^2) and M^-1 C (1/s), pinned nodes removed."},
    {"_add_collider", (PyCFunction)System_add_collider, METH_VARARGS,
     "_add_collider(kind, center, axis, size, velocity, restitution, friction, thickness) -> id"},
    {"_set_collider", (PyCFunction)System_set_collider, METH_VARARGS,
     "_set_collider(id, kind, center, axis, size, velocity, restitution, friction, thickness)"},
    {"_get_collider", (PyCFunction)System_get_collider, METH_O,
     "_get_collider(id) -> (kind, center, axis, size, velocity, restitution, friction, thickness)"},
    {"_remove_collider", (PyCFunction)System_remove_collider, METH_O, "_remove_collider(id)"},
    {"_collider_start", (PyCFunction)System_collider_start, METH_O,
     "_collider_start(id) -> where the collider starts: its center after reset() (m)"},
    {"_collider_ids", (PyCFunction)System_collider_ids, METH_NOARGS, "ids of the colliders, in order"},
    {"reset", (PyCFunction)System_reset, METH_NOARGS,
     "reset()\n--\n\nReturn to the initial positions and velocities with t = 0, steps = 0 and an empty energy "
     "ledger; parameters, options and the external force are kept."},
    {"copy", (PyCFunction)System_copy, METH_NOARGS,
     "copy()\n--\n\nAn independent deep copy: parameters, options, state and initial state."},
    {NULL, NULL, 0, NULL}};

/* ---- attributes ----------------------------------------------------------------- */

/* A getter returning a zero-copy view of one C array (see make_view). */
#define VIEW_GETTER(name, pointer, ndim, d0, d1, typenum, writeable)                          \
    static PyObject* get_##name(SystemObject* self, void* closure) {                        \
        (void)closure;                                                                      \
        if (require_ready(self) < 0) return NULL;                                           \
        return make_view(self, pointer, ndim, (npy_intp)(d0), d1, typenum, writeable);      \
    }

/* The same for a writable view through which the caller can change the energy or the
   parameters (kinds: see watch_view). */
#define WATCHED_VIEW_GETTER(name, pointer, ndim, d0, d1, typenum, kinds)                      \
    static PyObject* get_##name(SystemObject* self, void* closure) {                        \
        (void)closure;                                                                      \
        if (require_ready(self) < 0) return NULL;                                           \
        return watch_view(self, make_view(self, pointer, ndim, (npy_intp)(d0), d1, typenum, 1), kinds); \
    }

WATCHED_VIEW_GETTER(x, self->state->x, 2, self->model->nnode, 3, NPY_DOUBLE, VIEW_ENERGY)
WATCHED_VIEW_GETTER(v, self->state->v, 2, self->model->nnode, 3, NPY_DOUBLE, VIEW_ENERGY)
VIEW_GETTER(f, self->state->f, 2, self->model->nnode, 3, NPY_DOUBLE, 1)

/* The external force is allocated (as zeros) the first time it is asked for. */
static PyObject* get_external(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    /* allocating it changes the state: not while another thread steps */
    if (self->state->external == NULL && require_idle(self) < 0) return NULL;
    ms_error err;
    double* external = ms_state_external(self->model, self->state, &err);
    if (external == NULL) return raise_ms_error(&err);
    return make_view(self, external, 2, (npy_intp)self->model->nnode, 3, NPY_DOUBLE, 1);
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
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nnode);
}
static PyObject* get_n_faces(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nface);
}
static PyObject* get_n_springs(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->model->nspring);
}
static PyObject* get_workers(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLong(self->state->workers);
}

static PyObject* get_t(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(self->state->t);
}
static PyObject* get_steps(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyLong_FromLongLong(self->state->steps);
}
static PyObject* get_dissipated(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    return PyFloat_FromDouble(ms_ledger_dissipated(&self->state->ledger));
}
static PyObject* get_work(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    const ms_ledger ledger = ms_state_ledger(self->model, self->state);
    return PyFloat_FromDouble(ms_ledger_work(&ledger));
}

static PyObject* get_solver_stats(SystemObject* self, void* closure) {
    (void)closure;
    if (require_ready(self) < 0) return NULL;
    const ms_solver_stats* st = &self->state->solver;
    return Py_BuildValue("{s:i,s:L,s:d,s:d,s:O,s:O,s:L}", "newton_iterations", st->newton_iterations,
                         "cg_iterations", (long long)st->cg_iterations, "newton_residual", st->newton_residual,
                         "cg_residual", st->cg_residual, "newton_converged",
                         st->newton_converged ? Py_True : Py_False, "cg_converged",
                         st->cg_converged ? Py_True : Py_False, "cg_failures", (long long)st->cg_failures);
}

/* The attributes that are not options (system_type adds one per row of the option table). */
static const PyGetSetDef System_attributes[] = {
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
     "implicit_euler: what the solver did in the last step (a new dict): newton_iterations, cg_iterations, "
     "newton_residual, cg_residual, newton_converged, cg_converged, and cg_failures (steps since reset whose CG "
     "solve hit cg_max_iter).",
     NULL},
};
#define ATTRIBUTE_COUNT (sizeof System_attributes / sizeof System_attributes[0])

static PyMemberDef System_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(SystemObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

static const PyType_Slot System_slots[] = {
    {Py_tp_dealloc, System_dealloc},
    {Py_tp_init, System_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_methods, System_methods},
    {Py_tp_members, System_members},
    {Py_tp_doc, "System(positions, springs, mass, k, c, rest, pinned, velocities, gravity=(0, -9.81, 0), "
                "drag=0.0, energy_loss=0.0, integrator='symplectic_euler')\n--\n\n"
                "Core mass-spring system with exact-shape inputs; use msprings.System, which accepts scalars, "
                "index lists and defaults."},
    {0, NULL}};

/* The System type: its attributes are System_attributes and one per option of the table,
   whose closure is the table's row.  The list of them lives in the module state, so it
   lasts as long as the type (which holds the module). */
static PyObject* system_type(PyObject* module, module_state* st) {
    st->getset = PyMem_Calloc(ATTRIBUTE_COUNT + OPTION_COUNT + 1, sizeof(PyGetSetDef));
    if (st->getset == NULL) return PyErr_NoMemory();
    memcpy(st->getset, System_attributes, sizeof System_attributes);
    for (size_t i = 0; i < OPTION_COUNT; ++i)
        st->getset[ATTRIBUTE_COUNT + i] = (PyGetSetDef){options[i].name, (getter)get_option, (setter)set_option,
                                                        options[i].doc, (void*)&options[i]};
    PyType_Slot slots[sizeof System_slots / sizeof System_slots[0] + 1] = {{Py_tp_getset, st->getset}};
    memcpy(slots + 1, System_slots, sizeof System_slots);
    PyType_Spec spec = {
        .name = "msprings._core.System",
        .basicsize = sizeof(SystemObject),
        .itemsize = 0,
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .slots = slots,
    };
    return PyType_FromModuleAndSpec(module, &spec, NULL);
}

/* ---- module --------------------------------------------------------------------- */

static PyObject* core_version(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(MS_VERSION);
}

static PyObject* core_avx2(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyBool_FromLong(ms_avx2_supported());
}

static PyObject* core_vector_path(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(ms_vector_path());
}

static PyObject* core_thread_layer(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(ms_thread_layer());
}

static PyObject* core_set_num_threads(PyObject* module, PyObject* value) {
    long long number = 0;
    if (parse_integer(value, "n", 0, THREADS_MAX, &number) < 0) return NULL;
    ((module_state*)PyModule_GetState(module))->num_threads = (int)number;
    Py_RETURN_NONE;
}

static PyObject* core_get_num_threads(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    return PyLong_FromLong(ms_resolve_threads(((module_state*)PyModule_GetState(module))->num_threads));
}

static PyObject* core_after_fork(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    ((module_state*)PyModule_GetState(module))->process = ms_process_id();
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"set_num_threads", core_set_num_threads, METH_O,
     "set_num_threads(n)\n--\n\nWorker threads of every system whose threads is 0 (0: all online cores)."},
    {"get_num_threads", core_get_num_threads, METH_NOARGS,
     "get_num_threads()\n--\n\nWorker threads that a system whose threads is 0 uses."},
    {"_after_fork", core_after_fork, METH_NOARGS,
     "_after_fork()\n--\n\nTakes note of the process id in a forked child (registered with os.register_at_fork)."},
    {"version", core_version, METH_NOARGS, "version()\n--\n\nVersion of the C core."},
    {"avx2", core_avx2, METH_NOARGS,
     "avx2()\n--\n\nTrue if steps use the AVX2 vector path on this processor."},
    {"vector_path", core_vector_path, METH_NOARGS,
     "vector_path()\n--\n\nThe vector path steps use: 'avx2', 'sse2', 'neon' or 'plain' (all give the same bits)."},
    {"thread_layer", core_thread_layer, METH_NOARGS,
     "thread_layer()\n--\n\nThe threads the core was built on: 'posix' or 'win32'."},
    {NULL, NULL, 0, NULL}};

/* One record of _core.OPTIONS: the option's row of the table, as Python sees it. */
static PyObject* option_record(PyTypeObject* type, const option_spec* spec) {
    PyObject* record = PyStructSequence_New(type);
    if (record == NULL) return NULL;
    const int ranged = spec->kind != OPTION_INTEGRATOR;
    PyObject* fields[] = {
        PyUnicode_FromString(spec->name),
        PyUnicode_FromString(option_kind_names[spec->kind]),
        !ranged                           ? Py_NewRef(Py_None)
        : spec->kind == OPTION_INTEGER ? PyLong_FromDouble(spec->low)
                                          : PyFloat_FromDouble(spec->low),
        !ranged                           ? Py_NewRef(Py_None)
        : spec->kind == OPTION_INTEGER ? PyLong_FromDouble(spec->high)
                                          : PyFloat_FromDouble(spec->high),
        ranged ? PyBool_FromLong(spec->low_open) : Py_NewRef(Py_None),
        ranged ? PyBool_FromLong(spec->high_open) : Py_NewRef(Py_None),
        PyUnicode_FromString(spec->doc),
    };
    const Py_ssize_t count = (Py_ssize_t)(sizeof fields / sizeof fields[0]);
    int complete = 1;
    for (Py_ssize_t i = 0; i < count; ++i) complete = complete && fields[i] != NULL;
    for (Py_ssize_t i = 0; i < count; ++i) {
        if (complete)
            PyStructSequence_SetItem(record, i, fields[i]); /* steals the reference */
        else
            Py_XDECREF(fields[i]);
    }
    if (!complete) Py_CLEAR(record);
    return record;
}

/* _core.Option (a named tuple type) and _core.OPTIONS (a tuple of one Option per row of
   the table, in its order). */
static int add_options(PyObject* module) {
    PyStructSequence_Field fields[] = {
        {"name", "attribute of System, and the model file's entry option_<name>"},
        {"kind", "how it reads and writes: 'real', 'real_or_none' (None writes 0, off), 'optional_real' (None "
                 "when off), 'integer', 'vector3' or 'integrator' (a name in INTEGRATORS)"},
        {"low", "lowest valid value (of each component of a vector); None for an integrator"},
        {"high", "highest valid value (of each component of a vector); None for an integrator"},
        {"low_open", "True if low itself is refused (an infinite end always is)"},
        {"high_open", "True if high itself is refused (an infinite end always is)"},
        {"doc", "what it does, its units and default"},
        {NULL, NULL}};
    PyStructSequence_Desc desc = {"msprings._core.Option", "One option of System, as the binding describes it.",
                                  fields, (int)(sizeof fields / sizeof fields[0]) - 1};
    int result = -1;
    PyObject* records = NULL;
    PyTypeObject* type = PyStructSequence_NewType(&desc);
    if (type == NULL || PyModule_AddObjectRef(module, "Option", (PyObject*)type) < 0) goto done;
    if ((records = PyTuple_New((Py_ssize_t)OPTION_COUNT)) == NULL) goto done;
    for (size_t i = 0; i < OPTION_COUNT; ++i) {
        PyObject* record = option_record(type, &options[i]);
        if (record == NULL) goto done;
        PyTuple_SET_ITEM(records, (Py_ssize_t)i, record);
    }
    result = PyModule_AddObjectRef(module, "OPTIONS", records);
done:
    Py_XDECREF(records);
    Py_XDECREF(type);
    return result;
}

/* A forked child takes note of its own process id (no-op where os cannot fork). */
static int register_after_fork(PyObject* module) {
    PyObject* os = PyImport_ImportModule("os");
    if (os == NULL) return -1;
    int result = 0;
    PyObject* hook = PyObject_GetAttrString(module, "_after_fork");
    PyObject* register_at_fork = PyObject_HasAttrString(os, "register_at_fork")
                                     ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    if (hook == NULL) {
        result = -1;
    } else if (register_at_fork != NULL) {
        PyObject* args = PyTuple_New(0);
        PyObject* kwargs = Py_BuildValue("{sO}", "after_in_child", hook);
        PyObject* done = args != NULL && kwargs != NULL ? PyObject_Call(register_at_fork, args, kwargs) : NULL;
        if (done == NULL) result = -1;
        Py_XDECREF(done);
        Py_XDECREF(args);
        Py_XDECREF(kwargs);
    }
    Py_XDECREF(register_at_fork);
    Py_XDECREF(hook);
    Py_DECREF(os);
    return result;
}

static int core_exec(PyObject* module) {
    int result = -1;
    PyObject* integrators = NULL;
    if (PyArray_ImportNumPyAPI() < 0) goto done;
    module_state* st = (module_state*)PyModule_GetState(module);
    st->process = ms_process_id();
    if (register_after_fork(module) < 0) goto done;
    st->system_type = system_type(module, st);
    if (st->system_type == NULL) goto done;
    if (PyModule_AddObjectRef(module, "System", st->system_type) < 0) goto done;
    st->divergence_error = PyErr_NewExceptionWithDoc(
        "msprings.DivergenceError",
        "The motion blew up: a position or velocity became non-finite.  The step call is undone: the system "
        "is as it was before the call.  Attributes: step (the step that blew up, counted as System.steps "
        "counts), time (s, the time that step would have reached), call_step (which step of the call: 1 is "
        "its first); System.step adds dt (s) and critical_dt (s, the integrator's stable limit for the "
        "system, or None).",
        PyExc_FloatingPointError, NULL);
    if (st->divergence_error == NULL) goto done;
    if (PyModule_AddObjectRef(module, "DivergenceError", st->divergence_error) < 0) goto done;
    if ((integrators = PyTuple_New(MS_INTEGRATOR_COUNT)) == NULL) goto done;
    for (int i = 0; i < MS_INTEGRATOR_COUNT; ++i) {
        PyObject* name = PyUnicode_FromString(ms_integrator_name(i));
        if (name == NULL) goto done;
        PyTuple_SET_ITEM(integrators, i, name);
    }
    if (PyModule_AddObjectRef(module, "INTEGRATORS", integrators) < 0) goto done;
    result = add_options(module);
done:
    Py_XDECREF(integrators);
    return result;
}

static int core_traverse(PyObject* module, visitproc visit, void* arg) {
    module_state* st = (module_state*)PyModule_GetState(module);
    Py_VISIT(st->system_type);
    Py_VISIT(st->divergence_error);
    return 0;
}

static int core_clear(PyObject* module) {
    module_state* st = (module_state*)PyModule_GetState(module);
    Py_CLEAR(st->system_type);
    Py_CLEAR(st->divergence_error);
    return 0;
}

static void core_free(void* module) {
    core_clear((PyObject*)module);
    module_state* st = (module_state*)PyModule_GetState((PyObject*)module);
    PyMem_Free(st->getset);
    st->getset = NULL;
}

static PyModuleDef_Slot core_slots[] = {{Py_mod_exec, core_exec}, {0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "msprings._core",
    .m_doc = "The C core of msprings: mass-spring systems stepped in C, state shared with NumPy.",
    .m_size = sizeof(module_state),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
