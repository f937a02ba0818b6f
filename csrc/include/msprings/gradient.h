/* Gradients through a run: the exact adjoint (reverse mode) and tangent (forward mode) of
 * the discrete steps that ms_step computes, for explicit and symplectic Euler, velocity
 * Verlet, RK4 and implicit Euler (its converged step: exact to the forward Newton solve's
 * tolerance), with springs, dampers, gravity, linear drag without wind, an external force
 * constant in time, pins, the energy loss and contact with colliders.
 *
 * Contact is differentiated along the branch each step took (kernels/contact.c): the identity
 * for a node that does not touch, the projection onto the surface with its curvature, the
 * restitution and sliding or sticking friction, and implicit Euler's resting contact held
 * inside its solve.  Where a node starts or stops touching, or switches between sliding and
 * sticking, the step is not differentiable and the derivative is the one-sided one of the
 * branch taken.  The colliders' poses, velocities and coefficients are constants.
 *
 * A run of `steps` steps of size h starts from the state at step 0.  A backward pass
 * takes the derivatives of a loss L with respect to the states recorded at some steps and
 * returns the derivatives of L with respect to the initial state and the parameters.  It
 * needs the state before every step: it keeps only checkpoints (the state every
 * checkpoint_every steps) and steps each stretch between two of them again with ms_step,
 * on a scratch state of the same model, checking that it arrives at the next checkpoint
 * bit for bit.
 */
#ifndef MSPRINGS_GRADIENT_H
#define MSPRINGS_GRADIENT_H

#include "msprings/msprings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One value per parameter of a model: per spring k, c and rest, per node mass and the
   external force.  Gradients (or tangent directions) in the parameters' own units: dL/dk in
   L per (N/m), dL/dc in L per (N s/m), dL/drest in L per m, dL/dmass in L per kg and
   dL/dexternal in L per N. */
typedef struct ms_parameter_arrays {
    double* k;        /* (nspring)    */
    double* c;        /* (nspring)    */
    double* rest;     /* (nspring)    */
    double* mass;     /* (nnode)      */
    double* external; /* (nnode x 3)  */
} ms_parameter_arrays;

/* A recorded run, as a backward or tangent pass reads it. */
typedef struct ms_gradient_run {
    double h;                    /* step size (s) */
    int64_t steps;               /* steps of the run, >= 1 */
    int64_t checkpoint_every;    /* steps between checkpoints, >= 1 */
    const double* checkpoints;   /* x then v (m, m/s) at steps 0, C, 2C, ... and at steps
                                    (ncheckpoint x 2 x nnode x 3), ncheckpoint = ceil(steps / C) + 1 */
    int64_t nrecord;             /* records, >= 1 */
    const int64_t* record_steps; /* the step of each record, ascending in [0, steps] (nrecord) */
    const ms_interrupt* interrupt; /* the caller's check, or NULL */
    int threads;                 /* the backward pass's workers: with 2 or more (and more than one
                                    stretch, no colliders, a step on one worker) it steps each
                                    stretch again on a second thread while it takes the next one
                                    back; 0 or 1: one after the other.  The same bits either way */
} ms_gradient_run;

/* MS_OK if steps of this model have a gradient here; else MS_ERR_VALUE naming what has
   none (the integrator, strain limiting, self-collision, the air on faces, wind). */
int ms_gradient_check(const ms_model* m, ms_error* err);

/* The backward pass.  dx_records and dv_records hold dL/dx and dL/dv of each record (nrecord x
   nnode x 3; dv_records may be NULL: zero).  Writes dL/dx and dL/dv of the state at step 0
   into grad_x and grad_v (nnode x 3) and adds dL/d(parameters) to grad (all five arrays).
   s is a scratch state of m with its colliders where they were at step 0 (a moving collider
   is moved from there as the run's steps moved it; its x, v, t, ledger and colliders'
   positions are overwritten).  MS_ERR_VALUE for a bad run, a model with no gradient or an
   implicit Euler derivative whose linear solve did not converge, MS_ERR_MEMORY,
   MS_ERR_INTERRUPTED, or MS_ERR_DIVERGED if stepping again does not reproduce the
   checkpoints. */
int ms_gradient_backward(const ms_model* m, ms_state* s, const ms_gradient_run* run, const double* dx_records,
                         const double* dv_records, double* grad_x, double* grad_v, ms_parameter_arrays* grad,
                         ms_error* err);

/* The tangent (forward-mode) pass for ndirection directions at once: direction d moves the
   initial state by (dx0, dv0) + d (ndirection x nnode x 3 each) and the parameters by
   directions[d] (all five arrays).  Writes the derivative of each record's positions along
   each direction into record_dx (ndirection x nrecord x nnode x 3) and of its velocities into
   record_dv (the same, or NULL).  s as for ms_gradient_backward; the same statuses. */
int ms_gradient_tangent(const ms_model* m, ms_state* s, const ms_gradient_run* run, int64_t ndirection,
                        const double* dx0, const double* dv0, const ms_parameter_arrays* directions,
                        double* record_dx, double* record_dv, ms_error* err);

#ifdef __cplusplus
}
#endif

#endif
