/*
 * The System type: its object's life (construction from exact-shape arrays, deallocation,
 * copy(), reset()), the checks that it is ready and not being stepped, its methods table
 * and the type itself, made per module from a spec.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <structmember.h>

#include <string.h>

int mspy_require_ready(SystemObject* self) {
    if (self->model == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "System is not initialised: construct it with System(positions, springs, ...)");
        return -1;
    }
    return 0;
}

/* The id of this process, as the module keeps it (ms_process_id without a system call). */
static long long this_process(const SystemObject* self) {
    const module_state* st = mspy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        PyErr_Clear();
        return ms_process_id();
    }
    return st->process;
}

/* Whether a thread of this process is stepping the system.  A process forked while one
   was has no such thread: there the system is idle, in the state the fork caught it in. */
int mspy_busy(const SystemObject* self) { return self->stepping != 0 && self->stepping == this_process(self); }

int mspy_require_idle(SystemObject* self) {
    if (mspy_require_ready(self) < 0) return -1;
    if (mspy_busy(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this System is being stepped by another thread; wait for that step to finish "
                        "(use a lock or step a copy())");
        return -1;
    }
    return 0;
}

static void System_dealloc(SystemObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)self);
    Py_XDECREF(self->energy_views);
    Py_XDECREF(self->parameter_views);
    ms_call_destroy(self->call);
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
        if (options_in[i] != NULL && mspy_parse_option(option_names[i], options_in[i], &opt) < 0)
            goto done;

    if ((positions = mspy_input_array(positions_in, "positions", NPY_DOUBLE, 2, -1, 3)) == NULL) goto done;
    npy_intp nnode = PyArray_DIM(positions, 0);
    if ((springs = mspy_input_array(springs_in, "springs", NPY_INT32, 2, -1, 2)) == NULL) goto done;
    npy_intp nspring = PyArray_DIM(springs, 0);
    if ((mass = mspy_input_array(mass_in, "mass", NPY_DOUBLE, 1, nnode, 0)) == NULL) goto done;
    if ((k = mspy_input_array(k_in, "k", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((c = mspy_input_array(c_in, "c", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((rest = mspy_input_array(rest_in, "rest", NPY_DOUBLE, 1, nspring, 0)) == NULL) goto done;
    if ((pinned = mspy_input_array(pinned_in, "pinned", NPY_BOOL, 1, nnode, 0)) == NULL) goto done;
    if ((velocities = mspy_input_array(velocities_in, "velocities", NPY_DOUBLE, 2, nnode, 3)) == NULL) goto done;
    if (faces_in != NULL && faces_in != Py_None &&
        (faces = mspy_input_array(faces_in, "faces", NPY_INT32, 2, -1, 3)) == NULL)
        goto done;
    npy_intp nface = faces != NULL ? PyArray_DIM(faces, 0) : 0;

    model = ms_model_create(nnode, nspring, nface, &err);
    if (model == NULL) {
        mspy_raise_ms_error(&err);
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
        mspy_raise_ms_error(&err);
        goto done;
    }
    state = ms_state_create(model, &err);
    if (state == NULL) {
        mspy_raise_ms_error(&err);
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

PyObject* System_reset(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_idle(self) < 0) return NULL;
    ms_state_reset(self->model, self->state);
    ms_call_end(self->call); /* a recording's series of calls ends with its state */
    self->energy_written = 1; /* x and v are no longer as the last step left them */
    Py_RETURN_NONE;
}

PyObject* System_copy(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_idle(self) < 0) return NULL;
    PyTypeObject* type = Py_TYPE(self);
    SystemObject* copy = (SystemObject*)type->tp_alloc(type, 0);
    if (copy == NULL) return NULL;
    ms_error err;
    copy->model = ms_model_copy(self->model, &err);
    if (copy->model != NULL) copy->state = ms_state_copy(self->model, self->state, &err);
    if (copy->model == NULL || copy->state == NULL) {
        Py_DECREF(copy);
        return mspy_raise_ms_error(&err);
    }
    copy->start_energy_valid = self->start_energy_valid;
    memcpy(copy->start_energy, self->start_energy, sizeof copy->start_energy);
    return (PyObject*)copy;
}

/* The methods of System, each defined in the file of its concern (see binding.h). */
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
    {"_pickle_state", (PyCFunction)System_pickle_state, METH_NOARGS,
     "_pickle_state() -> dict: the model and state as arrays and numbers, bit for bit (options apart), for "
     "pickle; RuntimeError while another thread steps the system."},
    {"_unpickle_state", (PyCFunction)System_unpickle_state, METH_VARARGS,
     "_unpickle_state(state, options): fills a System made by __new__ from _pickle_state()'s dict and a dict of "
     "options (name: value); TypeError or ValueError, the object left uninitialised, for damaged data."},
    {"_gradient_check", (PyCFunction)System_gradient_check, METH_NOARGS,
     "_gradient_check(): ValueError unless steps of this system have a gradient"},
    {"_gradient_backward", (PyCFunction)(void (*)(void))System_gradient_backward, METH_FASTCALL,
     "_gradient_backward(dt, steps, checkpoint_every, checkpoints, record_steps, dx, dv, threads) -> (x, v, k, c, rest, "
     "mass, external)"},
    {"_gradient_tangent", (PyCFunction)(void (*)(void))System_gradient_tangent, METH_FASTCALL,
     "_gradient_tangent(dt, steps, checkpoint_every, checkpoints, record_steps, dx0, dv0, k, c, rest, mass, external, "
     "velocities) -> (record_dx, record_dv or None)"},
    {"reset", (PyCFunction)System_reset, METH_NOARGS,
     "reset()\n--\n\nReturn to the initial positions and velocities with t = 0, steps = 0 and an empty energy "
     "ledger; parameters, options and the external force are kept."},
    {"copy", (PyCFunction)System_copy, METH_NOARGS,
     "copy()\n--\n\nAn independent deep copy: parameters, options, state and initial state."},
    {NULL, NULL, 0, NULL}};

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

/* The System type: its attributes are mspy_system_attributes and one per option of the
   table, whose closure is the table's row.  The list of them lives in the module state, so
   it lasts as long as the type (which holds the module). */
PyObject* mspy_system_type(PyObject* module, module_state* st) {
    st->getset = PyMem_Calloc(mspy_system_attribute_count + mspy_option_count + 1, sizeof(PyGetSetDef));
    if (st->getset == NULL) return PyErr_NoMemory();
    memcpy(st->getset, mspy_system_attributes, mspy_system_attribute_count * sizeof(PyGetSetDef));
    mspy_option_attributes(st->getset + mspy_system_attribute_count);
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
