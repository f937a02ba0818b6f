/* The adjoint and the tangent of one step of the explicit integrators (adjoint.c): the
 * derivatives of the map (x, v, parameters) -> (x', v') that their stages compute
 * (explicit.c), with the energy loss after it. */
#ifndef MSPRINGS_SOLVERS_ADJOINT_H
#define MSPRINGS_SOLVERS_ADJOINT_H

#include "kernels/derivatives.h"

/* Doubles of work storage the functions below need for model m. */
int64_t ms_adjoint_work_size(const ms_model* m);

/* Reverse mode: on entry (lx, lv) is the adjoint of the step's result (x', v'), on return
   that of its start (x, v); the step's share of the parameters' gradient is added to g.
   inv_mass: 1/m of free nodes, 0 of pinned ones (nnode); external: the constant external
   force or NULL. */
void ms_adjoint_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                     const double* v, double h, double* lx, double* lv, const ms_parameter_arrays* g, double* work);

/* Forward mode: on entry (dx, dv) is the derivative of the step's start along a direction
   that moves the parameters by d, on return that of its result. */
void ms_tangent_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                     const double* v, double h, double* dx, double* dv, const ms_parameter_arrays* d, double* work);

#endif
