/* The derivatives of the forces (derivatives.c): products of their Jacobian with a vector
 * (tangent, forward mode) and of its transpose with a vector (adjoint, reverse mode), with
 * respect to the positions, the velocities and the parameters, for the forces that have
 * them here: the springs and their dampers, gravity, linear drag without wind and the
 * external force (ms_gradient_check says which models qualify). */
#ifndef MSPRINGS_KERNELS_DERIVATIVES_H
#define MSPRINGS_KERNELS_DERIVATIVES_H

#include "kernels/kernels.h"
#include "msprings/gradient.h"

/* Adds J^T lf to (lx, lv) and to the parameters' gradient g, where J is the Jacobian of the
   total force f(x, v) (nnode x 3) with respect to (x, v) and the parameters, and lf the
   adjoint of f (nnode x 3).  Unless f is NULL it also receives the force f(x, v) itself
   (external: the external force, or NULL for none).  g may be NULL: J^T lf for (x, v) only. */
void ms_forces_adjoint(const ms_model* m, const double* x, const double* v, const double* external,
                       const double* lf, double* lx, double* lv, const ms_parameter_arrays* g, double* f);

/* df = J (dx, dv, d): the force's derivative at (x, v) along positions dx, velocities dv
   and parameters d (nnode x 3 each; written, not added; d NULL: no parameter moves); unless
   f is NULL, f receives the force f(x, v) itself. */
void ms_forces_tangent(const ms_model* m, const double* x, const double* v, const double* external,
                       const double* dx, const double* dv, const ms_parameter_arrays* d, double* df, double* f);

#endif
