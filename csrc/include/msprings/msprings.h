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

/* The largest self-collision distance (m): a thousand kilometres, far beyond the node
   spacing of any network built in metres, and small enough that the squares and products
   of lengths that the pair and node-triangle tests form at that scale (up to the fourth
   power) stay far from overflowing. */
#define MS_SELF_COLLISION_MAX 1e6

typedef enum ms_integrator {
    MS_EXPLICIT_EULER = 0,   /* x' = x + h v;  v' = v + h a(x, v) */
    MS_SYMPLECTIC_EULER = 1, /* v' = v + h a(x, v);  x' = x + h v' */
    MS_VELOCITY_VERLET = 2,  /* kick-drift-kick with a predicted end velocity for dampers */
    MS_RK4 = 3,              /* classical fourth-order Runge-Kutta on (x, v) */
    MS_IMPLICIT_EULER = 4,   /* backward Euler solved by Newton's method with preconditioned CG */
    MS_PROJECTIVE = 5,       /* projective dynamics (Liu et al. 2013): local/global iterations towards
                                backward Euler, one prefactored sparse matrix */
    MS_XPBD = 6,             /* extended position-based dynamics: each spring a compliant constraint
                                (compliance 1/k, damping c), Gauss-Seidel over spring colours */
    MS_INTEGRATOR_COUNT
} ms_integrator;

typedef enum ms_status {
    MS_OK = 0,
    MS_ERR_VALUE = 1,    /* an argument or a parameter has a bad value */
    MS_ERR_MEMORY = 2,   /* an allocation failed */
    MS_ERR_DIVERGED = 3, /* the state became non-finite; the call was undone (ms_step) */
    MS_ERR_INTERRUPTED = 4 /* the caller's check (ms_interrupt) asked a long call to stop; the
                              call was undone as for MS_ERR_DIVERGED */
} ms_status;

typedef struct ms_error {
    ms_status status;
    int64_t step;      /* MS_ERR_DIVERGED: the step that blew up, counted as state.steps counts
                          (the count the state would have reached with it) */
    double time;       /* MS_ERR_DIVERGED: the time (s) the step that blew up would have reached */
    int64_t call_step; /* MS_ERR_DIVERGED: which step of the call blew up (1 = its first; a call
                          made in parts counts from the first part's start) */
    char message[320]; /* names the argument, the offending item and the fix */
} ms_error;

/* Settings of the implicit (backward Euler) solver. */
typedef struct ms_implicit_options {
    int newton_max_iter;  /* >= 1; 1 gives Baraff & Witkin's linearised step. Default 50 */
    double newton_tol;    /* > 0; Newton stops when |M dv - h f(x', v')| <= newton_tol * scale,
                             scale = max(|M dv|, |h f|, |h M g|). Default 1e-6 */
    int cg_max_iter;      /* >= 1; conjugate-gradient iterations per linear solve. Default 1000 */
    double cg_tol;        /* > 0; CG stops when |residual| <= cg_tol * |right-hand side|.  Each
                             Newton iteration's right-hand side is its current residual, so a
                             loose value only costs Newton iterations, not accuracy (inexact
                             Newton); newton_tol sets the final accuracy.  Default 1e-2 */
} ms_implicit_options;

/* Air: linear drag of the nodes is taken relative to the wind, and triangles feel pressure
   drag and lift from the air's velocity relative to them (see ms_face_forces). */
typedef struct ms_air {
    double density;          /* rho (kg/m^3), >= 0, default 1.2 */
    double drag_coefficient; /* C_d of the triangles, >= 0, default 0 (no face forces) */
    double lift_coefficient; /* C_l of the triangles, >= 0, default 0 */
    double wind[3];          /* uniform wind velocity W (m/s), default 0 */
    double gust;             /* amplitude A of the gust field (m/s), >= 0, default 0 */
    double gust_frequency;   /* omega of the gust field (rad/s), default 5 */
    double gust_wavenumber;  /* kappa of the gust field (rad/m), default 1 */
} ms_air;

typedef struct ms_options {
    double gravity[3];   /* gravitational acceleration (m/s^2), default (0, -9.81, 0) */
    double drag;         /* linear drag coefficient per node (N s/m), force -drag * v, >= 0 */
    double energy_loss;  /* non-physical: after every step free velocities are multiplied by
                            (1 - energy_loss); in [0, 1); its effect depends on the step size */
    ms_integrator integrator;
    int strain_limiting; /* 1: after each step, springs longer than (1 + strain_limit) L are
                            shortened to that length (Provot 1995); default 0 */
    double strain_limit; /* tau >= 0, default 0.1 */
    double self_collision; /* > 0: after each step, nodes closer than this distance (m) that
                              no spring joins are pushed apart (found with a spatial hash
                              grid); 0 (default) turns self-collision off; at most
                              MS_SELF_COLLISION_MAX.  On a system with triangles the
                              step also sweeps every point-triangle and edge-edge pair
                              over the step and sends back the nodes of a pair that
                              would touch, so a surface never passes through itself */
    double self_friction;  /* Coulomb coefficient mu >= 0 between touching layers: a
                              self-collision push's impulse also reduces the pair's
                              tangential relative velocity by at most mu times the normal
                              velocity change; default 0 */
    int self_contact_sweep; /* 1 (default): the continuous sweep above runs when
                              self_collision > 0 and the system has triangles; 0: the
                              proximity pass only (discrete, may let layers cross) */
    ms_implicit_options implicit;
    ms_air air;
    int iterations;      /* solver iterations per step of projective and xpbd (>= 0; 0, the
                            default, means the integrator's own: 10 for projective, 1 for
                            xpbd, which favours many small steps) */
    double chebyshev;    /* projective: Chebyshev acceleration of the rounds (Wang 2015) with this
                            estimate of their convergence rate rho in [0, 1); 0 (default) = off */
    int threads;         /* worker threads for networks of 10,000 springs or more (every
                            integrator but projective dynamics, which runs on one);
                            0 (default) = the state's
                            default_threads (all online cores unless set), 1 = none.  Any
                            number of threads gives the same result, bit for bit */
} ms_options;

/* What the implicit solver did in the last step. */
typedef struct ms_solver_stats {
    int newton_iterations;   /* linear solves in the last step */
    int64_t cg_iterations;   /* CG iterations summed over those solves */
    double newton_residual;  /* final |M dv - h f(x', v')| / scale (see newton_tol) */
    double cg_residual;      /* relative residual of the last CG solve */
    int newton_converged;    /* 1 if the Newton residual met newton_tol */
    int cg_converged;        /* 1 if every CG solve of the last step met cg_tol */
    int64_t cg_failures;     /* steps since creation or reset with a CG solve at its cap */
} ms_solver_stats;

typedef enum ms_collider_type {
    MS_PLANE = 0,     /* half-space below a plane: center = a point on it, axis = unit normal */
    MS_SPHERE = 1,    /* center, size[0] = radius */
    MS_BOX = 2,       /* axis-aligned box: center, size = half extents */
    MS_CYLINDER = 3,  /* capped cylinder: center, axis = unit axis, size[0] = radius,
                         size[1] = half height (a round table is one) */
    MS_COLLIDER_TYPE_COUNT
} ms_collider_type;

/* A rigid, kinematic obstacle.  Nodes inside it (closer than thickness to its surface)
   are projected out; their velocity relative to the collider loses its normal part
   times (1 + restitution) and its tangential part by at most friction times that change. */
typedef struct ms_collider {
    int64_t id;            /* stable handle, unique within the model */
    ms_collider_type type;
    double center[3];      /* (m) */
    double axis[3];        /* plane normal or cylinder axis, unit length (ignored otherwise) */
    double size[3];        /* radius / half extents / (radius, half height) (m) */
    double velocity[3];    /* the collider moves by velocity * h each step (m/s) */
    double restitution;    /* e in [0, 1] */
    double friction;       /* Coulomb coefficient mu >= 0 */
    double thickness;      /* extra distance kept from the surface (m), >= 0 */
} ms_collider;

/* Where the energy of a state went since creation or reset (J).  The first five are
   dissipated: energy taken out of the system; the first four never negative and never
   decreasing, numerical of either sign (see below).  The rest is work done on the system
   from outside, of either sign.  For an exact integrator
   kinetic + spring + gravity + dissipated - work  stays constant.  The large-step solvers
   (implicit Euler, projective, xpbd) book what they remove themselves as numerical, so for
   them it stays constant to rounding; for the explicit integrators what it drifts by is
   the integrator's error. */
typedef struct ms_ledger {
    double dampers;      /* spring dampers: c ((v_j - v_i).n)^2 */
    double drag;         /* the air in its own frame: node drag b |v - w|^2 and the triangles'
                            F.(w - v_mean) (pressure drag; lift does no work in that frame) */
    double contact;      /* what contact with the colliders removes in the collider's frame
                            (restitution and friction, less the energy the push out of the
                            collider gives back), and the approach velocity that
                            self-collision removes */
    double energy_loss;  /* the references' per-step velocity factor */
    double numerical;    /* implicit Euler, projective and xpbd only: what a step removed that
                            no other part accounts for (the step's residual of the ledger,
                            mechanical energy before - after - the other parts' increments):
                            the solver's own damping (and what the quadrature of the other
                            parts' power misses in the step).  A step that stops short of
                            convergence (few projective or xpbd iterations) can hand energy
                            back, so a step may book a negative amount; 0 for the other
                            integrators */
    double wind;         /* the wind's part of the air forces: -b (v - w).w + F.w */
    double external;     /* the external force: f_ext.v over free nodes */
    double pins;         /* pinned nodes moving with their velocity: -(force of the springs
                            and the air on the pin).v_pin */
    double colliders;    /* moving colliders: each push's impulse times the collider's
                            velocity; 0 for colliders at rest */
    double constraints;  /* strain limiting and self-collision's position corrections, and a
                            step's contact pushes when they add energy in the colliders' frame */
    double user;         /* the caller's changes between steps (see ms_state_watch) */
} ms_ledger;

/* Power flows of the forces at one state (W), or their integral over a step (J): the
   parts of the ledger that forces produce. */
typedef struct ms_flow {
    double dampers, drag, wind, external, pins;
} ms_flow;

typedef struct ms_model {
    int64_t nnode;       /* number of nodes, fixed */
    int64_t nspring;     /* number of springs, fixed */
    int64_t nface;       /* number of triangles, fixed */
    double* mass;        /* node mass (kg)                              (nnode)       */
    uint8_t* pinned;     /* 1 if the node ignores forces, else 0        (nnode)       */
    int32_t* springs;    /* node indices (i, j) of each spring          (nspring x 2) */
    double* rest;        /* rest length L (m), >= 0                     (nspring)     */
    double* k;           /* stiffness (N/m), >= 0                       (nspring)     */
    double* c;           /* axial damping (N s/m), >= 0                 (nspring)     */
    double* x_initial;   /* positions that ms_state_reset restores (m)  (nnode x 3)   */
    double* v_initial;   /* velocities that ms_state_reset restores     (nnode x 3)   */
    int32_t* faces;      /* node indices of each triangle               (nface x 3)   */
    ms_options opt;
    void* buffer;        /* the one allocation that all arrays above live in */
    /* colliders: a list that may grow and shrink; not shared with Python as memory */
    ms_collider* colliders;  /* (ncollider) */
    int64_t ncollider;
    int64_t collider_capacity;
    int64_t next_collider_id;
} ms_model;

/* Storage kept with a state by the part of the core that uses it (a solver, contact, the
   step driver): made on first use, freed with the state by destroy(data). */
#define MS_WORKSPACE_COUNT 8
typedef struct ms_workspace {
    void* data;
    void (*destroy)(void* data);
} ms_workspace;

typedef struct ms_state {
    double* x;           /* positions (m)                               (nnode x 3) */
    double* v;           /* velocities (m/s)                            (nnode x 3) */
    double* f;           /* total force at the start of the last step (N) (nnode x 3) */
    double* external;    /* user force added every step (N)             (nnode x 3)
                            NULL (zero everywhere) until ms_state_external is called */
    double t;            /* simulated time (s) */
    int64_t steps;       /* steps taken since creation or reset */
    ms_ledger ledger;    /* where energy went since creation or reset (J) */
    /* Energy the caller changes between steps (writing positions, velocities, masses,
       pins, rest lengths, stiffnesses or gravity) is booked as ledger.user at the start
       of the next step: the caller marks the state with ms_state_watch before changing it,
       and the step books the difference of the mechanical energies. */
    double watched_energy; /* mechanical energy when the state was watched (J) */
    int watched;           /* watched_energy holds a value not yet booked */
    /* storage that a step needs beside x, v and f, made on first use and kept for the
       next call: scratch, and the inverse masses, which a call reads again unless told
       the parameters are unchanged */
    double* inv_mass;    /* 1/m for free nodes, 0 for pinned            (nnode)     */
    double* f_saved;     /* f as a step call found it, put back if it diverges; an in-place
                            Euler call's forces, which it copies to f in its last step
                            (nnode x 3) */
    double* x_next;      /* other half of the position double buffer    (nnode x 3) */
    double* v_next;      /* other half of the velocity double buffer    (nnode x 3)
                            both allocated on first use by a step that needs them:
                            Verlet, RK4, implicit Euler, or a step with constraints */
    double* work;        /* Verlet/RK4 stage storage, allocated on first use (nnode x 9) */
    /* what the solvers, contact and the step driver keep from call to call (their
       factorisations, colourings, grids, the step's layout, the renumbered copy), each
       made by its owner on first use and freed with the state by the function it left */
    ms_workspace workspace[MS_WORKSPACE_COUNT];
    /* where the colliders are: they move with their velocity during a run and go back to
       the model's collider positions (where they start) on reset */
    double* collider_center; /* current center of each collider        (ncollider x 3) */
    int64_t* collider_id;    /* the model collider each row belongs to  (ncollider)     */
    int64_t collider_count;  /* rows in use: m->ncollider */
    int64_t collider_capacity;
    int default_threads;  /* worker threads when the model's opt.threads is 0: 0 = all online
                             cores; set by the caller (the Python binding's process-wide setting) */
    int cores;            /* the processors online when the state was made (at least 1): what
                             "all online cores" means for its steps, read once, not per step */
    int workers;          /* the workers the last ms_step call ran on (0 before the first) */
    ms_solver_stats solver;
    void* buffer;        /* the one allocation that x, v, f and inv_mass live in */
} ms_state;

typedef struct ms_energy {
    double kinetic;      /* 1/2 sum m |v|^2 over free nodes (J) */
    double spring;       /* 1/2 sum k (l - L)^2 over springs (J) */
    double gravity;      /* -sum m g.x over free nodes (J) */
    double dissipated;   /* the dissipative part of the ledger: dampers + drag + contact +
                            energy_loss + numerical (J) */
    double work;         /* the work part of the ledger: wind + external + pins + colliders +
                            constraints + user (J), either sign */
} ms_energy;

/* ---- model ---------------------------------------------------------------------- */

/* Default options: gravity (0, -9.81, 0), no drag, no energy loss, symplectic Euler. */
ms_options ms_default_options(void);

/* Allocates a model with zeroed arrays and default options; the caller fills the arrays.
   nnode >= 1, nspring >= 0, nface >= 0, all <= INT32_MAX. Returns NULL and sets err on
   failure. */
ms_model* ms_model_create(int64_t nnode, int64_t nspring, int64_t nface, ms_error* err);
ms_model* ms_model_copy(const ms_model* m, ms_error* err);
void ms_model_destroy(ms_model* m);

/* Checks topology (indices in range, no spring from a node to itself, no triangle with a
   repeated node or zero area at the initial positions) and every value
   (finite, mass > 0 on free nodes and >= 0 on pinned ones, rest/k/c >= 0, pinned 0 or 1,
   options valid, initial state finite). */
int ms_model_check(const ms_model* m, ms_error* err);

/* Checks only what can change after creation (values, options), not the topology. */
int ms_model_check_values(const ms_model* m, ms_error* err);

int ms_options_check(const ms_options* opt, ms_error* err);

/* Checks a time step h (s): finite and > 0, as ms_step requires. */
int ms_time_step_check(double h, ms_error* err);

/* ---- colliders ------------------------------------------------------------------ */

/* Checks a collider's values (normalising nothing). */
int ms_collider_check(const ms_collider* c, ms_error* err);

/* Colliders belong to a model (what they are and where they start) and to a state (where
   they are now), so they are added, changed and removed through both.  A model's
   colliders can also be set up with ms_model_add_collider before its states are made
   (a state starts with the model's colliders where they start); a step refuses a state
   whose colliders are not its model's. */

/* Adds a copy of *c to the model alone (id assigned, axis normalised): for setting up a
   model before its states are made.  Returns the new id (>= 0), or -1 with err set. */
int64_t ms_model_add_collider(ms_model* m, const ms_collider* c, ms_error* err);

/* Adds a copy of *c (its id is assigned; the axis is normalised), starting at c->center.
   Returns the new id (>= 0), or -1 with err set. */
int64_t ms_add_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err);

/* The collider with that id (where it starts: its center as of the state's reset), or NULL. */
const ms_collider* ms_find_collider(const ms_model* m, int64_t id);

/* Where the collider with that id is now (3 values, m), or NULL. */
const double* ms_collider_position(const ms_state* s, int64_t id);

/* Replaces the collider with c's id by *c (validated, axis normalised; its type cannot
   change).  The collider moves to c->center now; before the state's first step (steps
   == 0) that is also where it starts. */
int ms_set_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err);

int ms_remove_collider(ms_model* m, ms_state* s, int64_t id, ms_error* err);

/* "plane", "sphere", "box", "cylinder"; NULL if out of range. */
const char* ms_collider_type_name(int type);

/* Signed distance (m) from p to the surface of c placed at center (negative inside) and
   the outward unit normal of the nearest surface point. */
double ms_collider_distance(const ms_collider* c, const double center[3], const double p[3], double normal[3]);

/* ---- state ---------------------------------------------------------------------- */

/* Allocates a state at the model's initial positions and velocities, t = 0, with the
   colliders where they start. */
ms_state* ms_state_create(const ms_model* m, ms_error* err);
ms_state* ms_state_copy(const ms_model* m, const ms_state* s, ms_error* err);
void ms_state_destroy(ms_state* s);

/* Back to the initial positions and velocities and the colliders to where they start;
   t, steps, the ledger and f zeroed; the external force is kept. */
void ms_state_reset(const ms_model* m, ms_state* s);

/* Marks the state before the caller changes its energy between steps (positions,
   velocities, masses, pins, rest lengths, stiffnesses, gravity): records the mechanical
   energy now unless a recorded value is still waiting, and the next ms_step books the
   change as ledger.user.  Changes before the first step (steps == 0) set up the initial
   state and are not booked. */
void ms_state_watch(const ms_model* m, ms_state* s);

/* The external force array (nnode x 3), allocated as zeros on first use so that a
   system without external forces does not carry one; NULL (with err set) only if memory
   runs out.  The pointer stays valid for the life of the state. */
double* ms_state_external(const ms_model* m, ms_state* s, ms_error* err);

/* Checks that positions, velocities and external forces are finite. */
int ms_state_check(const ms_model* m, const ms_state* s, ms_error* err);

/* ---- stepping ------------------------------------------------------------------- */

/* A check that a long call makes from time to time on the thread that called it (never
   more often than about every 25 ms of the call's work, whatever the network's size, the
   number of steps or iterations): check(context) returns non-zero to stop the call. */
typedef struct ms_interrupt {
    int (*check)(void* context);
    void* context;
} ms_interrupt;

/* A call made in parts: one long call cut into several ms_step calls (between checks for
   Ctrl-C, or between the records of a recording) that succeeds or fails as a whole.  The
   caller owns it and passes it to each part (ms_step_options.call): the first part keeps
   in it the state as it found it (x, v, f, t, steps, the ledger, the solver's counts and
   where the colliders are), later parts continue it, and a failure of any part puts that
   start back.  The caller ends the call with ms_call_end once its last part is done. */
typedef struct ms_call ms_call;

ms_call* ms_call_create(void); /* NULL if out of memory */
void ms_call_destroy(ms_call* call);

/* The call is over: the next ms_step given it starts a new one. */
void ms_call_end(ms_call* call);

/* For a caller that abandons a call made in parts between two of them (interrupted): puts
   the state back as it was when the first part began, as a failed part would, and ends
   the call.  Returns 1 if it did, 0 if the call holds no start (ended, or undone by a
   failed part already). */
int ms_call_roll_back(const ms_model* m, ms_state* s, ms_call* call);

/* What one ms_step call is told beside its step size and count: everything a call needs,
   so nothing is left on the state from one call for the next.  Zeroed (or NULL for the
   options) means: check and read everything, write f, stand alone, no interruption. */
typedef struct ms_step_options {
    int parameters_unchanged; /* mass, pinned, rest, k and c are as the previous ms_step call
                                 on this state left them: the call neither checks nor re-reads
                                 them (the Python binding says so when no writable view of
                                 them can have been written since) */
    int motion_unchanged;     /* x and v are as the previous ms_step call on this state left
                                 them (not written, nor reset, since): the call does not check
                                 them, nor copy them into the renumbered copy, again */
    int forces_unread;        /* the caller will not read f before its next step call (a
                                 recording between two records): a symplectic or explicit
                                 Euler call stepping in place, and a call on a renumbered copy,
                                 then leave f as it is instead of writing the call's last
                                 forces into it */
    double* start_energy;     /* NULL, or 3 values that a call that steps fills with the
                                 kinetic, spring and gravitational energy (J) of the state it
                                 started from: as ms_state_energy's, but summed by the step's
                                 blocks as a by-product of its first forces (equal to rounding;
                                 the same bits on every vector path and for any number of
                                 threads).  A call that fails after its first forces fills it
                                 too (the energy of the state it is undone to); a call refused
                                 by its checks leaves it as it is */
    ms_call* call;            /* NULL: the call stands alone.  Else this call is a part of the
                                 call made in parts *call: it starts it if *call holds no start,
                                 else it continues it */
    const ms_interrupt* interrupt; /* the caller's check, made inside every loop of the call
                                 that can run long (the steps, xpbd's and projective dynamics'
                                 iterations, implicit Euler's Newton and conjugate-gradient
                                 iterations); NULL for none.  Any number of workers takes the
                                 same decision */
    double* before_contact;   /* NULL, or 2 x nnode x 3 values that each step of a model with
                                 colliders fills with x then v as they are just before its
                                 contact pass (after the integrator and the energy loss): the
                                 point at which the gradients of a run take contact's
                                 derivative (every node, pinned ones too) */
} ms_step_options;

/* Advances n >= 1 steps of size h > 0 with m->opt.integrator; options may be NULL (all
   zero).  Checks the model values and the state first (MS_ERR_VALUE: nothing changed, or,
   for a later part of a call made in parts, the whole call undone).  A call is all or
   nothing: if a step produces a non-finite position or velocity (MS_ERR_DIVERGED, with
   err->step, err->time and err->call_step set), the caller's check asks it to stop
   (MS_ERR_INTERRUPTED, err->step and err->time naming the step it stopped in), or the call
   fails in any other way after its checks (MS_ERR_MEMORY), everything is put back as it
   was when the call began (or the first part of a call made in parts): x, v, f, t, steps,
   the ledger (with a change the caller made before the call pending again), the solver's
   counts and where the colliders are.  Colliders with a velocity move with it after every
   successful step (in the state).  The model is only read, so any number of states of one
   model step independently, each as it would alone. */
int ms_step(const ms_model* m, ms_state* s, double h, int64_t n, const ms_step_options* options, ms_error* err);

/* Total force on every node at (x, v) and time t (s): springs, dampers, gravity, drag
   relative to the wind, aerodynamic forces on the triangles and the external force
   (external may be NULL for none); written to f (nnode x 3).  If flow is not NULL it
   receives the power flows (W) of these forces, as the ledger splits them.  The springs
   are summed in the user's order here, not as a step sums them.  A spring of
   length ~0 exerts no force. */
void ms_forces(const ms_model* m, const double* x, const double* v, const double* external, double t, double* f,
               ms_flow* flow);

/* The total force (as ms_forces) at the state's own positions, velocities, external force
   and time, written to s->f and summed exactly as a step sums it, so that it equals the
   s->f a step from this state leaves behind; flow (or NULL) as in ms_forces.  Returns
   MS_ERR_MEMORY if the step's storage cannot be had. */
int ms_state_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err);

/* The wind velocity (m/s) at point p and time t:
   W + A (1.5 |sin(kappa x + omega t) + cos(kappa y + omega t)|, 0, 0.5 sin(omega t)). */
void ms_wind(const ms_air* air, const double p[3], double t, double out[3]);

/* Adds the aerodynamic forces of the triangles to f and, if flow is not NULL, their
   power to flow->drag and flow->wind (W).  For a triangle of area A with unit normal n
   turned towards the air's velocity u relative to it (wind w at the centroid minus the
   mean node velocity v_mean) and c = n.u/|u|: pressure drag 1/2 rho C_d A |u|^2 c n and
   lift 1/2 rho C_l A |u|^2 c (n - c u/|u|), shared equally by its three nodes.  The power
   F.v_mean they deliver splits as F.w (the wind's work) - F.u, where F.u >= 0 is what
   the air dissipates in its own frame (lift is perpendicular to u). */
void ms_face_forces(const ms_model* m, const double* x, const double* v, double t, double* f, ms_flow* flow);

/* Area-weighted unit vertex normals of the triangles at the current positions
   (nnode x 3); zero for a node in no triangle. */
void ms_vertex_normals(const ms_model* m, const ms_state* s, double* out);

/* ---- diagnostics ---------------------------------------------------------------- */

/* Largest eigenvalues of M^-1 K (the tangent stiffness of the springs at the current
   positions, with the transverse term clamped at zero for compressed springs) and of
   M^-1 C (dampers and drag), pinned nodes removed, by Lanczos iteration.  They are the
   squared highest angular frequency (1/s^2) and the highest damping rate (1/s).  Uses
   temporary memory; returns MS_ERR_MEMORY if it cannot be had. */
int ms_max_eigenvalues(const ms_model* m, const ms_state* s, double* omega2_max, double* gamma_max,
                       ms_error* err);

/* The energies and the ledger's two sums; work includes a change the caller made since
   the state was watched, which the next step books (so total is right between steps). */
ms_energy ms_state_energy(const ms_model* m, const ms_state* s);

/* The ledger by mechanism, with such a pending change in user. */
ms_ledger ms_state_ledger(const ms_model* m, const ms_state* s);

/* Both of the above from one pass over the nodes and springs (either pointer may be NULL). */
void ms_state_accounts(const ms_model* m, const ms_state* s, ms_energy* energy, ms_ledger* ledger);
/* The ledger's dissipated part (dampers + drag + contact + energy_loss + numerical) and its work part
   (wind + external + pins + colliders + constraints + user), in J. */
double ms_ledger_dissipated(const ms_ledger* ledger);
double ms_ledger_work(const ms_ledger* ledger);
void ms_state_momentum(const ms_model* m, const ms_state* s, double out[3]); /* free nodes */
void ms_spring_lengths(const ms_model* m, const ms_state* s, double* out);   /* (nspring) m */
/* (l - L) / L; +inf when L = 0 and l > 0, 0 when both are 0 */
void ms_spring_strain(const ms_model* m, const ms_state* s, double* out);
/* axial force k (l - L) + c (v_j - v_i).n, positive when the spring pulls (N) */
void ms_spring_tension(const ms_model* m, const ms_state* s, double* out);

/* Cheap upper bounds (Gershgorin row sums, O(nodes + springs)) on the two eigenvalues
   that ms_max_eigenvalues estimates. */
void ms_eigenvalue_bounds(const ms_model* m, const ms_state* s, double* omega2_bound, double* gamma_bound);

/* ---- ensembles ------------------------------------------------------------------ */

/* Many members of one topology (node count, springs, pins, triangles) stepped by one call,
   each with its own parameters, state, options and colliders.  Member i is a model and a
   state of its own (models[i], states[i]) whose mass, rest, k, c, x and v point into the
   ensemble's member-major arrays below, so that each of those is one (nmember x ...) array;
   each member steps exactly as its model and state would alone, bit for bit.  A member
   whose step call diverges is put back where that call began, marked diverged, and left
   out of later calls until the caller clears the mark. */
typedef struct ms_ensemble {
    int64_t nmember;       /* B >= 1 */
    int64_t nnode;         /* nodes of each member */
    int64_t nspring;       /* springs of each member */
    ms_model** models;     /* each member's model                          (nmember)          */
    ms_state** states;     /* each member's state                          (nmember)          */
    ms_call** calls;       /* each member's call made in parts             (nmember)          */
    double* x;             /* positions (m)                                (nmember x nnode x 3) */
    double* v;             /* velocities (m/s)                             (nmember x nnode x 3) */
    double* mass;          /* node masses (kg)                             (nmember x nnode)   */
    double* rest;          /* rest lengths (m)                             (nmember x nspring) */
    double* k;             /* stiffnesses (N/m)                            (nmember x nspring) */
    double* c;             /* axial damping (N s/m)                        (nmember x nspring) */
    double* gravity;       /* gravitational acceleration (m/s^2), copied into each member's
                              options when a call begins                   (nmember x 3)       */
    double* t;             /* each member's time (s), as its state has it  (nmember)          */
    int64_t* steps;        /* each member's step count                     (nmember)          */
    uint8_t* diverged;     /* 1: the member diverged and is not stepped    (nmember)          */
    double* divergence_time; /* the time (s) the step that blew up would have reached, NaN
                              while the member is not diverged             (nmember)          */
    int64_t* divergence_step; /* that step, counted as steps counts, or -1 (nmember)          */
    int* member_threads;   /* each member's own opt.threads                (nmember)          */
    void* buffer;          /* the one allocation of the arrays above */
    void* batch;           /* the batched path's storage, made on first use */
    int64_t nbatched;      /* members the last step call stepped on the batched path (four or eight to a
                              vector: small members of the Euler methods with nothing but
                              springs, gravity and pins acting) */
} ms_ensemble;

/* An ensemble of copies of the count models and states (of one topology: else
   MS_ERR_VALUE naming the first member that differs and how).  Returns NULL with err set
   on failure. */
ms_ensemble* ms_ensemble_create(const ms_model* const* models, const ms_state* const* states, int64_t count,
                                ms_error* err);
void ms_ensemble_destroy(ms_ensemble* e);

/* Checks the values every member that is not diverged would be stepped with (parameters,
   options with the ensemble's gravity, positions, velocities, colliders): MS_ERR_VALUE
   naming the first bad member and item. */
int ms_ensemble_check(const ms_ensemble* e, ms_error* err);

/* What one ms_ensemble_step call is told beside its step size and count. */
typedef struct ms_ensemble_options {
    int threads;    /* workers of the call (>= 1); members are shared out among them, each
                       member stepped by one worker, or by its own threads if there is one */
    int continuing; /* 0: the call begins a call made in parts; 1: it continues the one that
                       an earlier call began (each member goes back to where the first part
                       began if it diverges) */
} ms_ensemble_options;

/* Advances every member that is not diverged by n >= 1 steps of size h > 0 with its own
   integrator.  Checks the call and every member first (MS_ERR_VALUE naming the member:
   nothing changed).  A member that diverges is put back where the call (made in parts:
   its first part) began, marked, with its divergence_time and divergence_step set; the
   call goes on with the others and returns MS_OK.  MS_ERR_MEMORY (or a value refused in a
   later part) fails the call: the caller then puts every member back with
   ms_ensemble_roll_back. */
int ms_ensemble_step(ms_ensemble* e, double h, int64_t n, const ms_ensemble_options* options, ms_error* err);

/* Ends the call made in parts, as ms_call_end does for each member, and marks every member
   state (ms_state_watch) so that changes the caller makes through the arrays before the
   next call are booked in its ledger. */
void ms_ensemble_end_call(ms_ensemble* e);

/* Puts every member back where the call made in parts began (an interrupted call, or one
   that failed), and ends it. */
void ms_ensemble_roll_back(ms_ensemble* e);

/* A standalone model and state (copies, not sharing the ensemble's arrays) of member i,
   with the member's own threads option; NULL (with err set) if memory runs out. */
int ms_ensemble_member_copy(const ms_ensemble* e, int64_t i, ms_model** model, ms_state** state, ms_error* err);

/* ---- threads -------------------------------------------------------------------- */

/* The number of worker threads that a request means: n > 0 is n (at most 64), 0 is the
   number of online cores (asked of the operating system now; a state asks once, when it is
   made, and keeps the answer in ms_state.cores). */
int ms_resolve_threads(int n);

/* The thread layer the core was built with: "posix" (POSIX threads) or "win32" (Windows
   threads). */
const char* ms_thread_layer(void);

/* The id of the calling process: a process forked from another has an id of its own. */
long long ms_process_id(void);

/* ---- build ---------------------------------------------------------------------- */

/* Non-zero if steps use the AVX2 vector path (x86-64 builds, on a processor that has
   AVX2 and an operating system that saves its registers). */
int ms_avx2_supported(void);

/* The vector path that steps use: "avx2", "sse2" (x86-64), "neon" (arm64) or "plain".
   Every path gives the same results, bit for bit. */
const char* ms_vector_path(void);

/* The vector path of the batched ensemble kernel (small members of the Euler methods, one
   member per lane): "avx512" where the processor and the operating system run AVX-512 F,
   else as ms_vector_path.  MSPRINGS_BATCH_PATH in the environment, read when an
   ensemble's step call begins, caps it: "avx2", or the build's path ("sse2", "neon",
   "plain").  Every path gives the same results, bit for bit. */
const char* ms_batch_path(void);

/* ---- names ---------------------------------------------------------------------- */

/* "explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler";
   NULL if out of range. */
const char* ms_integrator_name(int integrator);
/* The integrator with that name, or -1. */
int ms_integrator_from_name(const char* name);

#ifdef __cplusplus
}
#endif
#endif
