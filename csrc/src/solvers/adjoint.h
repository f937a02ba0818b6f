/* The adjoint and the tangent of one step (adjoint.c): the derivatives of the map
 * (x, v, parameters) -> (x', v') that the stages of explicit and symplectic Euler, velocity
 * Verlet and RK4 compute (explicit.c), and of the converged implicit Euler step
 * (implicit.c), with the energy loss after it. */
#ifndef MSPRINGS_SOLVERS_ADJOINT_H
#define MSPRINGS_SOLVERS_ADJOINT_H

#include "kernels/cholesky.h"
#include "kernels/derivatives.h"

typedef struct ms_adjoint_preconditioner ms_adjoint_preconditioner;

/* Doubles of work storage the functions below need for model m. */
int64_t ms_adjoint_work_size(const ms_model* m);

/* Reverse mode: on entry (lx, lv) is the adjoint of the step's result, on return that of
   its start (x, v); the step's share of the parameters' gradient is added to g.  The step
   went from (x, v) to (x_next, v_next) (read by implicit Euler only).  inv_mass: 1/m of
   free nodes, 0 of pinned ones (nnode); external: the constant external force or NULL.
   preconditioner: implicit Euler's (ms_adjoint_preconditioner_create; NULL: a diagonal one).
   springs: the springs' adjoint on the step's layout (ms_spring_adjoint_create), which sums
   the springs' parameter derivatives until ms_spring_adjoint_collect adds them to g; NULL:
   spring by spring, straight into g.  Returns 0, or -1 if implicit Euler's linear solve did
   not converge (the result is then its best iterate's). */
int ms_adjoint_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                    const double* v, const double* x_next, const double* v_next, double h, double* lx, double* lv,
                    const ms_parameter_arrays* g, ms_adjoint_preconditioner* preconditioner,
                    ms_spring_adjoint* springs, double* work);

/* Forward mode: on entry (dx, dv) is the derivative of the step's start along a direction
   that moves the parameters by d, on return that of its result.  As ms_adjoint_step. */
int ms_tangent_step(const ms_model* m, const double* inv_mass, const double* external, const double* x,
                    const double* v, const double* x_next, const double* v_next, double h, double* dx, double* dv,
                    const ms_parameter_arrays* d, ms_adjoint_preconditioner* preconditioner, double* work);

/* Implicit Euler's resting contact (kernels.h, ms_find_held): per node the unit normal of the
   collider holding it for the step, zero for a node not held (nnode x 3), and the Hessian of
   that collider's signed distance at the node's start, the derivative of the normal
   (nnode x 9). */
typedef struct ms_held_contact {
    const double* normal;
    const double* hessian;
} ms_held_contact;

/* ms_adjoint_step and ms_tangent_step of an implicit Euler step that held some nodes on
   colliders at rest: their normal velocity kept, the rest of their rows solved as the
   free nodes' (the collider's reaction along the normal). */
int ms_implicit_held_adjoint(const ms_model* m, const double* inv_mass, const double* external, const double* v,
                             const double* x_next, const double* v_next, double h, const ms_held_contact* held,
                             double* lx, double* lv, const ms_parameter_arrays* g,
                             ms_adjoint_preconditioner* preconditioner, double* work);
int ms_implicit_held_tangent(const ms_model* m, const double* inv_mass, const double* external, const double* v,
                             const double* x_next, const double* v_next, double h, const ms_held_contact* held,
                             double* dx, double* dv, const ms_parameter_arrays* d,
                             ms_adjoint_preconditioner* preconditioner, double* work);

/* Implicit Euler's preconditioner for the linear solves of its derivatives (the forward
   solver's symmetric matrix, factored at each step), or NULL: for another integrator, or
   with err set if it could not be made (the solves then use a diagonal one). */
ms_adjoint_preconditioner* ms_adjoint_preconditioner_create(const ms_model* m, ms_error* err);
void ms_adjoint_preconditioner_destroy(ms_adjoint_preconditioner* p);

#endif
