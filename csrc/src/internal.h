/* Private helpers shared by the files in csrc/src; not part of the public interface. */
#ifndef MSPRINGS_INTERNAL_H
#define MSPRINGS_INTERNAL_H

#include "msprings/msprings.h"

#if defined(__GNUC__)
#define MS_PRINTF_LIKE(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define MS_PRINTF_LIKE(format_index, first_arg)
#endif

/* Fills err (if not NULL) with a status and a printf-style message; returns the status. */
int ms_error_set(ms_error* err, ms_status status, const char* format, ...) MS_PRINTF_LIKE(3, 4);

/* Clears err to MS_OK with an empty message. */
void ms_error_clear(ms_error* err);

/* Returns non-zero if every one of the count values is finite. */
int ms_all_finite(const double* values, size_t count);

/* Checks that every component of count 3-vectors is finite; the error names the array
   (e.g. "x") and the first bad row. */
int ms_check_finite_vectors(const double* vectors, int64_t count, const char* name, ms_error* err);

/* Nodes per block, and the most springs per node that a block holds (see
   ms_model_sort_springs). */
#define MS_BLOCK_NODES 4
#define MS_MAX_BLOCK_SPRINGS 255

/* Fills m->spring_order (springs by lower node, then upper node), sorted_springs and
   spring_blocks, and sets spring_order_ready.  Where four consecutive nodes a..a+3 have
   the same number k of springs to their higher neighbours and the j-th spring of each
   reaches the same distance up the numbering (as in a grid), their 4 k springs form a
   block: stored in the order (j, node), spring_blocks[a] = k, and their parameters in
   sorted_params as, for each j, the four rest lengths, then the four k, then the four c. */
void ms_model_sort_springs(ms_model* m);

/* The first position r' >= r in the sorted springs at which ms_spring_forces may start
   (not inside a block); nspring if none. */
int64_t ms_model_unit_start(const ms_model* m, int64_t r);

/* Copies rest, k and c into sorted_params in spring_order (sorting first if needed):
   done by ms_step after checking the values, since views may have changed them. */
void ms_model_refresh_sorted(ms_model* m);

/* ms_forces for the step: the same forces, with the springs visited in node order from
   the sorted copies (valid during an ms_step call, after ms_model_refresh_sorted), the
   external force if s->external_active, and the pins' power if s->moving_pins.  *flow
   receives the power flows (W). */
void ms_step_forces(const ms_model* m, const ms_state* s, const double* x, const double* v, double t, double* f,
                    ms_flow* flow);

/* Gravity, external force and drag relative to the wind of nodes [begin, end), written to
   f (the air on the triangles is separate: ms_face_forces); adds the drag's, the wind's
   and the external force's power (W) to flow (or NULL). */
void ms_node_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    int64_t begin, int64_t end, double* f, ms_flow* flow);

/* The external force's power sum external.v over the free nodes (W). */
double ms_external_power(const ms_model* m, const double* external, const double* v);

/* The power (W) that the pinned nodes of [begin, end) put into the system by moving with
   their velocities, once f holds the complete force on them. */
double ms_pin_power(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    const double* f, int64_t begin, int64_t end);

/* What a step needs to know of the state before it starts: inverse masses (0 for pinned
   nodes), whether some force depends on velocity, whether the external force is non-zero
   anywhere, and whether a pinned node moves. */
void ms_state_prepare(const ms_model* m, ms_state* s);

/* Kinetic + spring + gravitational energy (J) of positions x and velocities v. */
double ms_mechanical_energy(const ms_model* m, const double* x, const double* v);

/* ledger += what a step booked; ledger += the integrated flows of its forces. */
void ms_ledger_add(ms_ledger* ledger, const ms_ledger* booked);
void ms_ledger_add_flow(ms_ledger* ledger, const ms_flow* flow);
int ms_ledger_finite(const ms_ledger* ledger);

/* flow += weight * rate: a step integrates its forces' power with its own quadrature. */
void ms_flow_add(ms_flow* flow, const ms_flow* rate, double weight);
int ms_flow_finite(const ms_flow* flow);

/* Vector code for x86-64 processors with AVX2, compiled beside the plain code (unless
   MS_NO_AVX2 is defined) and chosen at run time (ms_avx2_supported): the spring blocks (ms_model_sort_springs makes blocks only
   where it runs) and the Euler update. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(MS_NO_AVX2)
#define MS_AVX2_CODE 1
#define MS_AVX2 __attribute__((target("avx2")))
#include <immintrin.h>
#endif

/* Spring forces of the sorted springs [begin, end) (m->sorted_springs and sorted_params,
   after ms_model_refresh_sorted), added to f (which may be offset so that only part of the
   nodes is addressable); returns the power of their dampers (W).  begin and end must be
   unit starts (ms_model_unit_start). */
double ms_spring_forces(const ms_model* m, int64_t begin, int64_t end, const double* x, const double* v, double* f);

/* Non-zero if the air has any wind or gusts. */
int ms_air_has_wind(const ms_air* air);

/* The external force array, or NULL when it is zero everywhere (s->external_active). */
const double* ms_active_external(const ms_state* s);

/* The second half of the double buffer (s->x_next, s->v_next), allocated on first use. */
int ms_state_ensure_next(const ms_model* m, ms_state* s, ms_error* err);

/* Stage storage for Verlet and RK4, allocated on first use: 3 arrays of nnode x 3. */
int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err);

/* s->clearance sized for the model's colliders and set to 0 (no gap known): done at the
   start of every ms_step call with colliders, since between calls the positions and the
   colliders may have been changed from outside.  NULL if there are no colliders or no
   memory (contact then works without it). */
double* ms_state_clearance(const ms_model* m, ms_state* s);

/* Implicit solver storage: per node dv, rhs, r, z, p, Ap, diagonal, forces, delta
   (3 each); per spring the unit vector and the two tangent stiffness coefficients. */
#define MS_IMPLICIT_NODE_DOUBLES 27
#define MS_IMPLICIT_SPRING_DOUBLES 5
int ms_state_ensure_implicit_work(const ms_model* m, ms_state* s, ms_error* err);

/* Tangent stiffness of every spring at positions x, as blocks[5 s ..]: the unit vector
   n (3), the transverse stiffness k_t = k max(0, 1 - L/l) and the axial excess k - k_t,
   so that K_s = k_t I + (k - k_t) n n^T.  Zero-length springs get a zero block. */
void ms_spring_blocks(const ms_model* m, const double* x, double* blocks);

/* y = a M p + b C p + c K p, where C = -df/dv (dampers c n n^T per spring, drag I per
   node) and K = -df/dx (the blocks K_s), each spring block acting on p_i - p_j and
   scattered with opposite signs to i and j.  With (a, b, c) = (1, h, h^2) it is the
   backward Euler matrix M - h df/dv - h^2 df/dx.  Rows of pinned nodes (inv_mass 0) are
   set to zero; p is used as given. */
void ms_system_product(const ms_model* m, const double* inv_mass, const double* blocks, double mass_scale,
                       double damping_scale, double stiffness_scale, const double* p, double* y);

/* Strain limiting (Provot 1995) on (x, v) after a step of size h. */
void ms_limit_strain(const ms_model* m, const double* inv_mass, double* x, double* v, double h);

/* What contact did in a step (J).  A push of node i (mass m) against a collider moving
   with velocity V takes its velocity from v to v' and its position from x to x':
     dissipated = 1/2 m (|v - V|^2 - |v' - V|^2) >= 0   (restitution and friction, in the
                                                         collider's frame)
     work       = m V.(v' - v) - m g.(x' - x) + the springs' energy change from the move
   so that kinetic + gravity + spring + dissipated - work does not change. */
typedef struct ms_contact {
    double dissipated;
    double work;
    int64_t pushes; /* nodes moved, whose springs' energy change is still to be added */
} ms_contact;

/* Contact with every collider (at its end-of-step position) for the free nodes of (x, v),
   which moved from x_old during a step of size h: projection out of the collider, then
   restitution and friction.  The work includes the springs' energy change. */
ms_contact ms_collide(const ms_model* m, ms_state* s, const double* x_old, double* x, double* v, double h);

/* ms_collide for nodes [begin, end) only, without the springs' energy change: each moved
   node is marked in s->pushed with its position before its first push in s->push_from,
   for ms_push_spring_energy.  Each node meets the colliders in their order and
   independently of the other nodes, so splitting the nodes changes no node's result
   (only the order in which the energies are summed).  s->clearance (nnode x ncollider,
   from ms_state_clearance, or NULL) carries each node's known gap from step to step, so
   a node far from a collider is passed over without evaluating its distance. */
ms_contact ms_collide_nodes(const ms_model* m, ms_state* s, const double* x_old, double* x, double* v, double h,
                            int64_t begin, int64_t end);

/* The change of the springs' energy (J) from the positions in s->push_from of the nodes
   marked in s->pushed to their positions in x; clears the marks.  Springs are summed in
   their order, so the result does not depend on how the nodes were split. */
double ms_push_spring_energy(const ms_model* m, ms_state* s, const double* x);

/* s->push_from and s->pushed, allocated on first use (systems with colliders). */
int ms_state_ensure_pushes(const ms_model* m, ms_state* s, ms_error* err);

/* Self-collision: pushes apart the nodes of (x, v) that are closer than
   m->opt.self_collision and not joined by a spring.  Returns the kinetic energy removed
   (J), or a negative value if its storage could not be allocated. */
double ms_self_collide(const ms_model* m, ms_state* s, double* x, double* v);
void ms_self_work_free(void* work);

/* Moves every collider by velocity * h. */
void ms_move_colliders(ms_model* m, double h);

/* Multithreaded explicit/symplectic Euler (threads.c): used for networks of at least
   MS_PARALLEL_MIN_SPRINGS springs when more than one thread is allowed and no constraint,
   energy loss or face force is on (ms_parallel_eligible); colliders are allowed.  Without
   colliders it steps in place, checking each step before writing it; with them it steps
   through the double buffer (s->x_next, s->v_next, which must be allocated), each worker
   applying the contacts of its own nodes, and moves the colliders after every step.  It
   stops before the first step that would leave a non-finite value and returns the number
   of steps taken (t, steps and the ledger advanced for them; the state is left in s->x and
   s->v).  *failed is set when threads could not be
   started, and then nothing has changed. */
#define MS_PARALLEL_MIN_SPRINGS 10000
int ms_thread_count(const ms_model* m);
int ms_parallel_eligible(const ms_model* m);
int64_t ms_parallel_euler(ms_model* m, ms_state* s, double h, int64_t n, int* failed);

/* The explicit (explicit_euler != 0) or symplectic Euler update of nodes [begin, end)
   from x, v and the force f with step h: ms_euler_check returns 1 if every new value would
   be finite, without writing; ms_euler_commit writes it in place. */
int ms_euler_check(const double* inv_mass, const double* x, const double* v, const double* f, double h,
                   int explicit_euler, int64_t begin, int64_t end);
void ms_euler_commit(const double* inv_mass, double* x, double* v, const double* f, double h, int explicit_euler,
                     int64_t begin, int64_t end);

/* The explicit (explicit_euler != 0) or symplectic Euler update of nodes [begin, end)
   from x, v and f into x_out and v_out (which may be x and v); returns 1 if all of it is
   finite. */
int ms_euler_into(const double* inv_mass, const double* x, const double* v, const double* f, double h,
                  int explicit_euler, int64_t begin, int64_t end, double* x_out, double* v_out);

/* One step of each integrator: reads (x, v) and writes (x_out, v_out), which do not
   alias them.  s->f receives the force at the start of the step and s->inv_mass must hold
   1/m for free nodes and 0 for pinned ones.  *flow receives (added) the flows of the
   forces over the step (J), integrated with the method's own quadrature.  Returns 1 if
   x_out, v_out and the flows are finite. */
typedef int (*ms_step_function)(const ms_model* m, ms_state* s, const double* x, const double* v,
                                double* x_out, double* v_out, double h, ms_flow* flow);
int ms_step_explicit_euler(const ms_model* m, ms_state* s, const double* x, const double* v,
                           double* x_out, double* v_out, double h, ms_flow* flow);
int ms_step_symplectic_euler(const ms_model* m, ms_state* s, const double* x, const double* v,
                             double* x_out, double* v_out, double h, ms_flow* flow);
int ms_step_velocity_verlet(const ms_model* m, ms_state* s, const double* x, const double* v,
                            double* x_out, double* v_out, double h, ms_flow* flow);
int ms_step_rk4(const ms_model* m, ms_state* s, const double* x, const double* v,
                double* x_out, double* v_out, double h, ms_flow* flow);
int ms_step_implicit_euler(const ms_model* m, ms_state* s, const double* x, const double* v,
                           double* x_out, double* v_out, double h, ms_flow* flow);

#endif
