/* The derivatives of the forces (derivatives.c): products of their Jacobian with a vector
 * (tangent, forward mode) and of its transpose with a vector (adjoint, reverse mode), with
 * respect to the positions, the velocities and the parameters, for the forces that have
 * them here: the springs and their dampers, gravity, linear drag without wind and the
 * external force (ms_gradient_check says which models qualify). */
#ifndef MSPRINGS_KERNELS_DERIVATIVES_H
#define MSPRINGS_KERNELS_DERIVATIVES_H

#include "kernels/kernels.h"
#include "kernels/layout.h"
#include "msprings/gradient.h"

/* The springs' part of ms_forces_adjoint over the step's spring layout and vector paths
   (spring_adjoint_kernel.h): adds J^T lf of the springs to lx and lv, unless grad is NULL
   their parameters' derivatives to grad (nspring x 3, in the layout's order of params),
   and unless pairing is NULL lf_i.f_i (the springs' force f_i on node i) to pairing[i]. */
typedef void (*ms_spring_adjoint_kernel)(const ms_layout* layout, const double* x, const double* v, const double* lf,
                                         double* lx, double* lv, double* grad, double* pairing);
#define MS_DECLARE_ADJOINT_KERNEL(path)                                                                               \
    void ms_springs_adjoint_##path(const ms_layout* layout, const double* x, const double* v, const double* lf,       \
                                   double* lx, double* lv, double* grad, double* pairing)
MS_DECLARE_ADJOINT_KERNEL(plain);
#if defined(MS_SSE2_PATH)
MS_DECLARE_ADJOINT_KERNEL(sse2);
#endif
#if defined(MS_NEON_PATH)
MS_DECLARE_ADJOINT_KERNEL(neon);
#endif
#if defined(MS_AVX2_PATH)
MS_DECLARE_ADJOINT_KERNEL(avx2);
#endif

/* What the adjoint of the spring forces works on: the model's springs in the layout's
   order (in the model's numbering, with its parameters), the kernel of the fastest path,
   and the springs' parameter derivatives summed in the layout's order until
   ms_spring_adjoint_collect adds them to a gradient. */
typedef struct ms_spring_adjoint {
    ms_layout* layout;
    ms_spring_adjoint_kernel kernel;
    double* grad; /* (nspring x 3) */
} ms_spring_adjoint;

/* Made for model m with its current parameters (NULL with err set if out of memory). */
ms_spring_adjoint* ms_spring_adjoint_create(const ms_model* m, ms_error* err);
void ms_spring_adjoint_destroy(ms_spring_adjoint* springs);

/* Adds the derivatives summed so far to g's k, c and rest (model order; the rest's sums times -k, the
   layout's k) and zeroes them. */
void ms_spring_adjoint_collect(ms_spring_adjoint* springs, const ms_parameter_arrays* g);

/* Adds J^T lf to (lx, lv) and to the parameters' gradient g, where J is the Jacobian of the
   total force f(x, v) (nnode x 3) with respect to (x, v) and the parameters, and lf the
   adjoint of f (nnode x 3).  Unless pairing is NULL, lf_i.f_i(x, v), the force's pairing
   with its adjoint at node i, is added to pairing[i] (nnode; what the adjoint of 1/m needs
   of the force; external: the external force, or NULL for none).  g may be NULL: J^T lf for
   (x, v) only.
   With springs NULL the springs are taken one by one in plain doubles, their derivatives
   added to g; else by springs' kernel, their derivatives summed in springs->grad (which
   ms_spring_adjoint_collect adds to g). */
void ms_forces_adjoint(const ms_model* m, ms_spring_adjoint* springs, const double* x, const double* v,
                       const double* external, const double* lf, double* lx, double* lv,
                       const ms_parameter_arrays* g, double* pairing);

/* df = J (dx, dv, d): the force's derivative at (x, v) along positions dx, velocities dv
   and parameters d (nnode x 3 each; written, not added; d NULL: no parameter moves); unless
   f is NULL, f receives the force f(x, v) itself. */
void ms_forces_tangent(const ms_model* m, const double* x, const double* v, const double* external,
                       const double* dx, const double* dv, const ms_parameter_arrays* d, double* df, double* f);

#endif
