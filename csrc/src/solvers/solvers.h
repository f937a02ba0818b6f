/* The solvers: each integrator's step as stages run by every worker of a call (kernels/
 * team.h), and the storage each keeps with a state in its own workspace slot, made by
 * its prepare function on first use.  The step driver (step/run.c) picks one by
 * m->opt.integrator.
 *
 * Every stages function reads (x, v) at time t and writes (x_out, v_out), which do not
 * alias them, finishing each node block with ms_finish_nodes and ending with a barrier;
 * it adds the flows of the forces over the step (J) to *flow and returns 1 if the new
 * state and the flows are finite (the same answer on every worker).  s->f receives the
 * force at the start.
 */
#ifndef MSPRINGS_SOLVERS_SOLVERS_H
#define MSPRINGS_SOLVERS_SOLVERS_H

#include "kernels/colouring.h"
#include "kernels/team.h"

typedef int (*ms_integrator_stages)(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out,
                                    double t, ms_flow* flow);

/* explicit.c: forward and symplectic Euler, velocity Verlet and classical RK4 (Verlet and
   RK4 use s->work, ms_state_ensure_work). */
int ms_explicit_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                             ms_flow* flow);
int ms_symplectic_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out,
                               double t, ms_flow* flow);
int ms_velocity_verlet_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                              ms_flow* flow);
int ms_rk4_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                  ms_flow* flow);

/* implicit.c: backward Euler by Newton's method; its storage (slot MS_WORK_IMPLICIT) made
   on first use by ms_implicit_prepare. */
int ms_implicit_prepare(const ms_model* m, ms_state* s, ms_error* err);
int ms_implicit_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                             ms_flow* flow);

/* projective.c: projective dynamics, on one worker (the driver gives it no others).
   ms_projective_prepare readies its storage (slot MS_WORK_PROJECTIVE) for steps of size
   h: its pattern made on first use (and again when the pins change), its factor made
   again when h, a mass or a stiffness changed.  MS_ERR_VALUE if the matrix cannot be
   factored, MS_ERR_MEMORY, MS_ERR_INTERRUPTED if the caller's check (or NULL) stopped the
   factorisation.  Its stages use s->work. */
int ms_projective_prepare(const ms_model* m, ms_state* s, double h, const ms_interrupt* interrupt, ms_error* err);
int ms_projective_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                         ms_flow* flow);

/* xpbd.c: extended position-based dynamics.  ms_xpbd_ensure_colours colours the springs
   on first use (slot MS_WORK_XPBD, an ms_colouring); ms_xpbd_prepare takes the springs'
   parameters for steps of size h, in colour order, after s->inv_mass, when the parameters
   may have changed (a view was written) or h differs from the last call's.  Its stages
   use s->work. */
int ms_xpbd_ensure_colours(const ms_model* m, ms_state* s, ms_error* err);
void ms_xpbd_prepare(const ms_model* m, const ms_state* s, double h, int parameters);
int ms_xpbd_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                   ms_flow* flow);

#endif
