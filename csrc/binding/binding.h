/*
 * msprings._core: the CPython binding of the C core, and what its files share.
 *
 * One type, System, owns an ms_model and an ms_state.  Its array attributes are NumPy
 * arrays that alias the C buffers (zero copy); each array's base is the System, so the
 * buffers live as long as any view does.  Sizes never change after construction, so a
 * view can never dangle.  The files of csrc/binding are the only ones of the project that
 * include Python.h, each through this header, which comes before all their other includes.
 *
 * The NumPy C API is one table for all of them (PY_ARRAY_UNIQUE_SYMBOL), filled by
 * module.c when the module is made; every other file defines NO_IMPORT_ARRAY before
 * including this header.
 */
#ifndef MSPRINGS_BINDING_H
#define MSPRINGS_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL MSPRINGS_ARRAY_API
#include <numpy/arrayobject.h>

#include <stddef.h>
#include <stdint.h>

#include "msprings/msprings.h"

#define MSPY_THREADS_MAX 1024 /* worker threads a system or set_num_threads may ask for */

typedef struct {
    PyObject* system_type;
    PyObject* ensemble_type;
    PyObject* divergence_error;
    int num_threads; /* worker threads of systems whose threads is 0 (0: all online cores) */
    long long process; /* this process's id: set when the module is made and again in a forked
                          child (os.register_at_fork), so a step call asks no system for it */
    PyGetSetDef* getset; /* System's attributes and options, with a sentinel (see mspy_system_type);
                            freed with the module, which outlives the type (the type holds it) */
} module_state;

typedef struct {
    PyObject_HEAD
    ms_model* model;        /* NULL until __init__ succeeds */
    ms_state* state;
    long long stepping;     /* the process whose thread is stepping this system (set with the GIL
                               held), 0 when none; see mspy_busy() */
    PyObject* energy_views; /* weak references to the writable views through which the caller
                               can change the energy (x, v, mass, pinned, rest, k); a list,
                               created by the first such view */
    PyObject* parameter_views; /* the same for the writable views of the parameters (mass,
                                  pinned, rest, k, c), which a step must read again while one
                                  lives */
    int parameters_written; /* a parameter view was handed out since the last step */
    int energy_written;     /* an energy view was handed out since the last step */
    int keep_start_energy;  /* each step call keeps the mechanical energy of the state it
                               starts from (ms_step_options.start_energy), for a recording */
    int start_energy_valid; /* start_energy holds the last step call's */
    double start_energy[3]; /* kinetic, spring and gravitational energy (J) of the state the
                               last step call started from */
    int forces_unread;      /* step calls may leave f as it is (ms_step_options.forces_unread):
                               the caller reads it only after a call without this */
    int continue_calls;     /* step calls continue one another (a recording): 0 no, 1 the next
                               call begins such a series, 2 it continues one */
    ms_call* call;          /* the call made in parts that the chunks of a long step call, or a
                               recording's calls, are (made on first use) */
    PyObject* weakreflist;
} SystemObject;

/* ---- module.c: the module ------------------------------------------------------- */

/* The state of the module that defined type (a System type), or NULL with an exception. */
module_state* mspy_state_of_type(PyTypeObject* type);

/* ---- convert.c: Python arguments to C values, C errors to Python ---------------- */

PyObject* mspy_raise_ms_error(const ms_error* err);
PyArrayObject* mspy_input_array(PyObject* obj, const char* name, int typenum, int ndim, npy_intp d0,
                                npy_intp d1);
int mspy_parse_integer(PyObject* value, const char* name, long long low, long long high, long long* out);
const char* mspy_parse_name(PyObject* value, const char* name);
int mspy_parse_real(PyObject* value, const char* name, double* out);
int mspy_parse_vector3(PyObject* value, const char* name, double out[3]);

/* ---- options.c: the option table ------------------------------------------------ */

/* Options as System attributes: mspy_option_attributes writes one PyGetSetDef per option,
   mspy_option_count of them, whose closure is the option's row of the table. */
extern const size_t mspy_option_count;
void mspy_option_attributes(PyGetSetDef* out);
int mspy_parse_option(const char* name, PyObject* value, ms_options* opt);
int mspy_add_options(PyObject* module);

/* ---- system.c: the System type -------------------------------------------------- */

PyObject* mspy_system_type(PyObject* module, module_state* st);
int mspy_require_ready(SystemObject* self);
int mspy_busy(const SystemObject* self);
int mspy_require_idle(SystemObject* self);

/* ---- ensemble.c: the Ensemble type -------------------------------------------- */

PyObject* mspy_ensemble_type(PyObject* module);

/* ---- system_views.c: zero-copy views and the attributes ------------------------- */

/* The attributes that are not options, mspy_system_attribute_count of them. */
extern const PyGetSetDef mspy_system_attributes[];
extern const size_t mspy_system_attribute_count;
PyObject* mspy_owned_array(PyObject* owner, void* data, int ndim, npy_intp* dims, int typenum, int writeable);
PyObject* mspy_make_view(SystemObject* self, void* data, int ndim, npy_intp d0, npy_intp d1, int typenum,
                         int writeable);
int mspy_views_alive(PyObject* views);

/* ---- the methods of System, listed in system.c ---------------------------------- */

/* system.c */
PyObject* System_reset(SystemObject* self, PyObject* ignored);
PyObject* System_copy(SystemObject* self, PyObject* ignored);
/* system_step.c */
PyObject* System_step(SystemObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
PyObject* System_keep_start_energy(SystemObject* self, PyObject* flag);
PyObject* System_continue_calls(SystemObject* self, PyObject* flag);
PyObject* System_roll_back(SystemObject* self, PyObject* ignored);
PyObject* System_check_dt(SystemObject* self, PyObject* dt_obj);
PyObject* System_leave_forces(SystemObject* self, PyObject* flag);
PyObject* System_start_energy(SystemObject* self, PyObject* ignored);
/* system_gradient.c */
PyObject* System_gradient_check(SystemObject* self, PyObject* ignored);
PyObject* System_gradient_backward(SystemObject* self, PyObject* const* args, Py_ssize_t nargs);
PyObject* System_gradient_tangent(SystemObject* self, PyObject* const* args, Py_ssize_t nargs);
/* system_record.c */
PyObject* System_record_state(SystemObject* self, PyObject* args);
PyObject* System_shares_state(SystemObject* self, PyObject* obj);
/* system_state.c */
PyObject* System_accounts(SystemObject* self, PyObject* ignored);
PyObject* System_ledger(SystemObject* self, PyObject* args);
PyObject* System_momentum(SystemObject* self, PyObject* ignored);
PyObject* System_lengths(SystemObject* self, PyObject* ignored);
PyObject* System_strain(SystemObject* self, PyObject* ignored);
PyObject* System_tension(SystemObject* self, PyObject* ignored);
PyObject* System_update_forces(SystemObject* self, PyObject* ignored);
PyObject* System_max_eigenvalues(SystemObject* self, PyObject* ignored);
PyObject* System_eigenvalue_bounds(SystemObject* self, PyObject* ignored);
PyObject* System_vertex_normals(SystemObject* self, PyObject* ignored);
PyObject* System_wind_at(SystemObject* self, PyObject* args);
PyObject* System_initial_state(SystemObject* self, PyObject* ignored);
PyObject* System_restore_clock(SystemObject* self, PyObject* args);
PyObject* System_watched_energy(SystemObject* self, PyObject* ignored);
PyObject* System_check_values(SystemObject* self, PyObject* ignored);
/* system_pickle.c */
PyObject* System_pickle_state(SystemObject* self, PyObject* ignored);
PyObject* System_unpickle_state(SystemObject* self, PyObject* args);
/* system_colliders.c */
/* Parses the items offset .. offset + 7 of the tuple args: (kind, center, axis, size, velocity,
   restitution, friction, thickness).  Returns 0, or -1 with an exception set. */
int mspy_parse_collider(PyObject* args, Py_ssize_t offset, ms_collider* c);
PyObject* System_add_collider(SystemObject* self, PyObject* args);
PyObject* System_set_collider(SystemObject* self, PyObject* args);
PyObject* System_get_collider(SystemObject* self, PyObject* id_obj);
PyObject* System_collider_start(SystemObject* self, PyObject* id_obj);
PyObject* System_remove_collider(SystemObject* self, PyObject* id_obj);
PyObject* System_collider_ids(SystemObject* self, PyObject* ignored);

#endif /* MSPRINGS_BINDING_H */
