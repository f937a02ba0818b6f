/*
 * The options of a System: one table describes each (name, kind, range, documentation),
 * and from it come the option attributes of System (get, set: checked whole before they
 * commit), the option arguments of the constructor, and _core.Option and _core.OPTIONS,
 * which the model files follow.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* How an option reads and writes in Python.  Each kind has one parser (mspy_parse_real and the
   others of convert.c, parse_integrator below). */
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
    {"threads", OPTION_INTEGER, OFFSET(threads), 0, RANGE_INTEGERS(0, MSPY_THREADS_MAX), 0,
     "Worker threads for large networks (>= 10000 springs), with every integrator but projective dynamics "
     "(which runs on one), "
     "in [0, 1024] (at most 64 are used): 0 (default) = the process-wide setting of "
     "msprings.set_num_threads (all online cores unless set), 1 = single-threaded. Any number of threads "
     "gives the same result, bit for bit; `workers` says how many the last step ran on. With 2 or more "
     "(or 0 on a machine of 2 or more cores), the backward pass of a differentiable run steps its stretches "
     "again on a second thread (any network size), holding two stretches of states instead of one."},
    {"self_collision", OPTION_REAL_OR_NONE, OFFSET(self_collision), 0, 0.0, MS_SELF_COLLISION_MAX, 0, 0, 0,
     "Self-collision distance (m, in [0, 1e6]): after each step, nodes closer than this that no spring joins "
     "are pushed apart and their approach velocity removed, and so are nodes and triangles, and mesh edges, "
     "that share no node (spatial hash grids, linear cost while the distance stays below about half the node "
     "spacing). On a system with triangles every point-triangle and edge-edge pair is then swept over the step "
     "(see self_contact_sweep), so the surface never passes through itself. 0 or None turns it off (the "
     "default; reads 0.0); a distance below 1e-12 m, the separation under which two nodes count as "
     "coincident, has nothing to act on."},
    {"self_friction", OPTION_REAL, OFFSET(self_friction), 0, RANGE_AT_LEAST_ZERO, 0,
     "Coulomb friction coefficient mu between touching layers (dimensionless, >= 0), the colliders' "
     "convention: a self-collision push that removes a normal approach velocity dv_n also reduces the "
     "pair's tangential relative velocity v_t by at most mu dv_n (v_t' = max(0, 1 - mu dv_n / |v_t|) v_t). "
     "Default 0."},
    {"self_contact_sweep", OPTION_INTEGER, OFFSET(self_contact_sweep), 0, RANGE_INTEGERS(0, 1), 0,
     "1 (default): with self_collision > 0 on a system with triangles, every point-triangle and edge-edge "
     "pair is also swept over the step (continuous collision detection), and the nodes of a pair that "
     "would come closer than a small gap go back to their start-of-step position with zero velocity, so "
     "the surface never passes through itself. 0: the end-of-step proximity pass only."},
    {"newton_max_iter", OPTION_INTEGER, OFFSET(implicit.newton_max_iter), 0, RANGE_INTEGERS(1, INT_MAX), 0,
     "implicit_euler: Newton iterations per step at most (>= 1; 1 gives the linearised Baraff-Witkin step). "
     "Default 50."},
    {"newton_tol", OPTION_REAL, OFFSET(implicit.newton_tol), 0, RANGE_ABOVE_ZERO, 0,
     "implicit_euler: relative Newton tolerance on |M dv - h f(x', v')| (dimensionless, > 0). Default 1e-6."},
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

/* The one parser of integrator names: a name ms_integrator_from_name knows, else a
   ValueError that lists them. */
static int parse_integrator(PyObject* value, const char* name, ms_integrator* out) {
    const char* text = mspy_parse_name(value, name);
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
        return mspy_parse_real(value, spec->name, (double*)field);
    case OPTION_REAL_OR_NONE:
        if (value != Py_None) return mspy_parse_real(value, spec->name, (double*)field);
        *(double*)field = 0.0;
        return 0;
    case OPTION_OPTIONAL_REAL: {
        const int on = value != Py_None;
        if (on && mspy_parse_real(value, spec->name, (double*)field) < 0) return -1;
        *(int*)((char*)opt + spec->on_offset) = on;
        return 0;
    }
    case OPTION_INTEGER: {
        long long number = 0;
        if (mspy_parse_integer(value, spec->name, (long long)spec->low, (long long)spec->high, &number) < 0)
            return -1;
        *(int*)field = (int)number;
        return 0;
    }
    case OPTION_VECTOR3:
        return mspy_parse_vector3(value, spec->name, (double*)field);
    case OPTION_INTEGRATOR:
        return parse_integrator(value, spec->name, (ms_integrator*)field);
    }
    PyErr_Format(PyExc_SystemError, "option %s has an unknown kind", spec->name);
    return -1;
}

static PyObject* get_option(SystemObject* self, void* closure) {
    const option_spec* spec = (const option_spec*)closure;
    if (mspy_require_ready(self) < 0) return NULL;
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
    if (mspy_require_idle(self) < 0) return -1;
    ms_options opt = self->model->opt;
    if (parse_option(spec, value, &opt) < 0) return -1;
    ms_error err;
    if (ms_options_check(&opt, &err) != MS_OK) {
        mspy_raise_ms_error(&err);
        return -1;
    }
    /* the energy before the change is the one the next step books it against */
    if (spec->changes_energy) ms_state_watch(self->model, self->state);
    self->model->opt = opt;
    return 0;
}

const size_t mspy_option_count = OPTION_COUNT;

/* The option attributes of System, one per row of the table, whose closure is the row. */
void mspy_option_attributes(PyGetSetDef* out) {
    for (size_t i = 0; i < OPTION_COUNT; ++i)
        out[i] = (PyGetSetDef){options[i].name, (getter)get_option, (setter)set_option, options[i].doc,
                               (void*)&options[i]};
}

/* Parses value as the option called name into opt (see parse_option); ValueError for a name
   that is not an option's. */
int mspy_parse_option(const char* name, PyObject* value, ms_options* opt) {
    const option_spec* spec = option_named(name);
    if (spec == NULL) {
        PyErr_Format(PyExc_ValueError, "%s is not an option of System (see msprings.OPTIONS)", name);
        return -1;
    }
    return parse_option(spec, value, opt);
}

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
int mspy_add_options(PyObject* module) {
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
