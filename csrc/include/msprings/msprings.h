/*
 * msprings: the public C interface of the mass-spring core.
 *
 * A system is a model (what the network is: sizes, masses, pins, springs and their
 * parameters, options) and a state (what changes: positions, velocities, forces, time).
 * Each is one flat allocation whose sizes never change after creation, so pointers into
 * them stay valid for the life of the object (the Python binding hands them out as
 * zero-copy NumPy arrays).
 *
 * Units are SI throughout (m, kg, s, N); y is up.  Every function that can fail takes an
 * ms_error* and returns MS_OK (0) on success; on failure the error says which argument was
 * wrong and why, and no state has changed.  The library never aborts and keeps no global
 * mutable state.
 */
#ifndef MSPRINGS_MSPRINGS_H
#define MSPRINGS_MSPRINGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MS_VERSION "0.1.0"

typedef enum ms_integrator {
    MS_EXPLICIT_EULER = 0,   /* x' = x + h v;  v' = v + h a(x, v) */
    MS_SYMPLECTIC_EULER = 1, /* v' = v + h a(x, v);  x' = x + h v' */
    MS_VELOCITY_VERLET = 2,  /* kick-drift-kick with a predicted end velocity for dampers */
    MS_RK4 = 3,              /* classical fourth-order Runge-Kutta on (x, v) */
    MS_INTEGRATOR_COUNT
} ms_integrator;

typedef enum ms_status {
    MS_OK = 0,
    MS_ERR_VALUE = 1,    /* an argument or a parameter has a bad value */
    MS_ERR_MEMORY = 2,   /* an allocation failed */
    MS_ERR_DIVERGED = 3  /* the state became non-finite; it was rolled back */
} ms_status;

typedef struct ms_error {
    ms_status status;
    int64_t step;      /* MS_ERR_DIVERGED: index of the step that failed (state.steps + 1) */
    double time;       /* MS_ERR_DIVERGED: time at the start of the failing step (s) */
    char message[320]; /* names the argument, the offending item and the fix */
} ms_error;

typedef struct ms_options {
    double gravity[3];   /* gravitational acceleration (m/s^2), default (0, -9.81, 0) */
    double drag;         /* linear drag coefficient per node (N s/m), force -drag * v, >= 0 */
    double energy_loss;  /* non-physical: after every step free velocities are multiplied by
                            (1 - energy_loss); in [0, 1); its effect depends on the step size */
    ms_integrator integrator;
} ms_options;

typedef struct ms_model {
    int64_t nnode;       /* number of nodes, fixed */
    int64_t nspring;     /* number of springs, fixed */
    double* mass;        /* node mass (kg)                              (nnode)       */
    uint8_t* pinned;     /* 1 if the node ignores forces, else 0        (nnode)       */
    int32_t* springs;    /* node indices (i, j) of each spring          (nspring x 2) */
    double* rest;        /* rest length L (m), >= 0                     (nspring)     */
    double* k;           /* stiffness (N/m), >= 0                       (nspring)     */
    double* c;           /* axial damping (N s/m), >= 0                 (nspring)     */
    double* x_initial;   /* positions that ms_state_reset restores (m)  (nnode x 3)   */
    double* v_initial;   /* velocities that ms_state_reset restores     (nnode x 3)   */
    ms_options opt;
    void* buffer;        /* the one allocation that all arrays above live in */
} ms_model;

typedef struct ms_state {
    double* x;           /* positions (m)                               (nnode x 3) */
    double* v;           /* velocities (m/s)                            (nnode x 3) */
    double* f;           /* total force at the start of the last step (N) (nnode x 3) */
    double* external;    /* user force added every step (N)             (nnode x 3) */
    double t;            /* simulated time (s) */
    int64_t steps;       /* steps taken since creation or reset */
    double dissipated;   /* energy removed by dampers, drag and energy_loss (J) */
    /* scratch, not part of the observable state */
    double* inv_mass;    /* 1/m for free nodes, 0 for pinned            (nnode)     */
    double* x_next;      /* other half of the position double buffer    (nnode x 3) */
    double* v_next;      /* other half of the velocity double buffer    (nnode x 3) */
    double* work;        /* Verlet/RK4 stage storage, allocated on first use (nnode x 9) */
    void* buffer;        /* the one allocation that x .. v_next live in */
} ms_state;

typedef struct ms_energy {
    double kinetic;      /* 1/2 sum m |v|^2 over free nodes (J) */
    double spring;       /* 1/2 sum k (l - L)^2 over springs (J) */
    double gravity;      /* -sum m g.x over free nodes (J) */
    double dissipated;   /* accumulated energy removed by dampers, drag, energy_loss (J) */
} ms_energy;

/* ---- model ---------------------------------------------------------------------- */

/* Default options: gravity (0, -9.81, 0), no drag, no energy loss, symplectic Euler. */
ms_options ms_default_options(void);

/* Allocates a model with zeroed arrays and default options; the caller fills the arrays.
   nnode >= 1, 0 <= nspring, both <= INT32_MAX. Returns NULL and sets err on failure. */
ms_model* ms_model_create(int64_t nnode, int64_t nspring, ms_error* err);
ms_model* ms_model_copy(const ms_model* m, ms_error* err);
void ms_model_destroy(ms_model* m);

/* Checks topology (indices in range, no spring from a node to itself) and every value
   (finite, mass > 0 on free nodes and >= 0 on pinned ones, rest/k/c >= 0, pinned 0 or 1,
   options valid, initial state finite). */
int ms_model_check(const ms_model* m, ms_error* err);

/* Checks only what can change after creation (values, options), not the topology. */
int ms_model_check_values(const ms_model* m, ms_error* err);

int ms_options_check(const ms_options* opt, ms_error* err);

/* ---- state ---------------------------------------------------------------------- */

/* Allocates a state at the model's initial positions and velocities, t = 0. */
ms_state* ms_state_create(const ms_model* m, ms_error* err);
ms_state* ms_state_copy(const ms_model* m, const ms_state* s, ms_error* err);
void ms_state_destroy(ms_state* s);

/* Back to the initial positions and velocities; t, steps, dissipated and f zeroed;
   the external force is kept. */
void ms_state_reset(const ms_model* m, ms_state* s);

/* Checks that positions, velocities and external forces are finite. */
int ms_state_check(const ms_model* m, const ms_state* s, ms_error* err);

/* ---- stepping ------------------------------------------------------------------- */

/* Advances n >= 1 steps of size h > 0 with m->opt.integrator.  Checks the model values
   and the state first (MS_ERR_VALUE, nothing changed).  If a step produces a non-finite
   position or velocity, the state is left as it was before that step and
   MS_ERR_DIVERGED is returned with err->step and err->time set. */
int ms_step(const ms_model* m, ms_state* s, double h, int64_t n, ms_error* err);

/* Total force on every node at (x, v): springs, dampers, gravity, drag and the external
   force; written to f (nnode x 3).  Returns the power dissipated by dampers and drag (W).
   A spring of length ~0 exerts no force. */
double ms_forces(const ms_model* m, const double* x, const double* v,
                 const double* external, double* f);

/* ---- diagnostics ---------------------------------------------------------------- */

ms_energy ms_state_energy(const ms_model* m, const ms_state* s);
void ms_state_momentum(const ms_model* m, const ms_state* s, double out[3]); /* free nodes */
void ms_spring_lengths(const ms_model* m, const ms_state* s, double* out);   /* (nspring) m */
/* (l - L) / L; +inf when L = 0 and l > 0, 0 when both are 0 */
void ms_spring_strain(const ms_model* m, const ms_state* s, double* out);
/* axial force k (l - L) + c (v_j - v_i).n, positive when the spring pulls (N) */
void ms_spring_tension(const ms_model* m, const ms_state* s, double* out);

/* ---- names ---------------------------------------------------------------------- */

/* "explicit_euler", "symplectic_euler", "velocity_verlet", "rk4"; NULL if out of range. */
const char* ms_integrator_name(int integrator);
/* The integrator with that name, or -1. */
int ms_integrator_from_name(const char* name);

#ifdef __cplusplus
}
#endif
#endif
