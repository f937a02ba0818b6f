/* Private helpers shared by the files in csrc/src; not part of the public interface. */
#ifndef MSPRINGS_INTERNAL_H
#define MSPRINGS_INTERNAL_H

#include "msprings/msprings.h"
#include "portable.h"

/* Fills err (if not NULL) with a status and a printf-style message; returns the status. */
int ms_error_set(ms_error* err, ms_status status, const char* format, ...) MS_PRINTF_LIKE(3, 4);

/* Clears err to MS_OK with an empty message. */
void ms_error_clear(ms_error* err);

/* Returns non-zero if every one of the count values is finite. */
int ms_all_finite(const double* values, size_t count);

/* Checks that every component of count 3-vectors is finite; the error names the array
   (e.g. "x") and the first bad row. */
int ms_check_finite_vectors(const double* vectors, int64_t count, const char* name, ms_error* err);

/* The total force at (x, v) and time t into f, summed exactly as a step sums it (the
   state's layout, after ms_state_ensure_step and ms_layout_refresh), with the external
   force if s->external_active and the pins' power if s->moving_pins.  *flow receives the
   power flows (W). */
void ms_step_forces(const ms_model* m, ms_state* s, const double* x, const double* v, double t, double* f,
                    ms_flow* flow);

/* Gravity, external force and drag relative to the wind of nodes [begin, end), written to
   f (the air on the triangles is separate: ms_face_forces); adds the drag's, the wind's
   and the external force's power (W) to flow (or NULL). */
void ms_node_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    int64_t begin, int64_t end, double* f, ms_flow* flow);

/* The external force's power sum external.v over the free nodes of [begin, end) (W). */
double ms_external_power(const ms_model* m, const double* external, const double* v, int64_t begin, int64_t end);

/* The power (W) that the pinned nodes of [begin, end) put into the system by moving with
   their velocities, once f holds the complete force on them. */
double ms_pin_power(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    const double* f, int64_t begin, int64_t end);

/* What a step needs to know of the state before it starts: inverse masses (0 for pinned
   nodes), whether some force depends on velocity, whether the external force is non-zero
   anywhere, and whether a pinned node moves (after ms_layout_refresh, which notes the
   dampers). */
void ms_state_prepare(const ms_model* m, ms_state* s);

/* A network whose numbering does not keep the nodes of a spring close together steps on a
   copy of the model and the state renumbered by rank (ranked.c), s->ranked.
   ms_ranked_create makes it from the ranks' order node_order (ms_rank_nodes), which it
   takes over; ms_ranked_step is a step call on the copy after ms_step's checks
   (parameters: the masses and pins may have changed since the last call; motion: x and v
   may have been written since);
   ms_ranked_forces is ms_state_forces on the copy; ms_ranked_filled: the copy read the
   parameters in an earlier call; ms_ranked_free frees s->ranked. */
typedef struct ms_ranked {
    ms_model m;         /* the model renumbered by rank */
    ms_state* s;        /* the state renumbered by rank, with its layout */
    int32_t* node_order; /* the node of each rank (nnode) */
    int32_t* rank;      /* the rank of each node (nnode) */
    void* buffer;       /* rank and the renumbered model's masses, pins, spring ends and triangles */
    int current;        /* the copy's x and v are the state's (set as a call or ms_state_forces
                           copies them, cleared by ms_state_reset) */
} ms_ranked;

int ms_ranked_create(const ms_model* m, ms_state* s, int32_t* node_order, ms_error* err);
int ms_ranked_step(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, int motion,
                   const ms_interrupt* interrupt, ms_error* err);
int ms_ranked_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err);
int ms_ranked_filled(const ms_state* s);
void ms_ranked_free(void* ranked);

/* Frees what a step call keeps of where it began (ms_state.call_start, step.c). */
void ms_call_start_free(void* start);

/* Kinetic + spring + gravitational energy (J) of positions x and velocities v. */
double ms_mechanical_energy(const ms_model* m, const double* x, const double* v);

/* The kinetic and gravitational energy (J) of the free nodes of [begin, end). */
void ms_node_energy(const ms_model* m, const double* x, const double* v, int64_t begin, int64_t end, double* kinetic,
                    double* gravity);

/* ledger += what a step booked; ledger += the integrated flows of its forces. */
void ms_ledger_add(ms_ledger* ledger, const ms_ledger* booked);
void ms_ledger_add_flow(ms_ledger* ledger, const ms_flow* flow);
int ms_ledger_finite(const ms_ledger* ledger);

/* flow += weight * rate: a step integrates its forces' power with its own quadrature. */
void ms_flow_add(ms_flow* flow, const ms_flow* rate, double weight);
int ms_flow_finite(const ms_flow* flow);

/* Non-zero if the air has any wind or gusts. */
int ms_air_has_wind(const ms_air* air);

/* The external force array, or NULL when it is zero everywhere (s->external_active). */
const double* ms_active_external(const ms_state* s);

/* The second half of the double buffer (s->x_next, s->v_next), allocated on first use. */
int ms_state_ensure_next(const ms_model* m, ms_state* s, ms_error* err);

/* Stage storage for Verlet and RK4, allocated on first use: 3 arrays of nnode x 3. */
int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err);

/* The step's layout and block sums (s->layout, node_sums, block_flow, block_energy), or for
   a network that steps renumbered, its renumbered copy (s->ranked), made on first use. */
int ms_state_ensure_step(const ms_model* m, ms_state* s, ms_error* err);

/* Forgets what contact knew between steps: every gap bound in s->clearance (sized for the
   model's colliders, or NULL if there is no memory: contact then works without it) and
   every push mark.  Done at the start of every ms_step call with colliders, the one
   place they are invalidated, since between calls the positions and the colliders may
   have been changed from outside. */
void ms_state_clear_contact(const ms_model* m, ms_state* s);

/* Checks that the state's colliders are the model's, row for row. */
int ms_state_same_colliders(const ms_model* m, const ms_state* s, ms_error* err);

/* Room for count colliders in the state's arrays. */
int ms_state_reserve_colliders(ms_state* s, int64_t count, ms_error* err);

/* Moves every collider of the state by its velocity times h. */
void ms_state_move_colliders(const ms_model* m, ms_state* s, double h);

/* Implicit solver storage: per node dv, rhs, r, z, p, Ap (3 each), the inverse of its
   diagonal block (6), forces, delta (3 each); per spring the unit vector and the two
   tangent stiffness coefficients. */
#define MS_IMPLICIT_NODE_DOUBLES 30
#define MS_IMPLICIT_SPRING_DOUBLES 5
int ms_state_ensure_implicit_work(const ms_model* m, ms_state* s, ms_error* err);

/* The implicit solver's storage (s->implicit, zeroed): the arrays above and the sparsity
   pattern and factor of the solver's matrix (made by its first step).  NULL if out of
   memory. */
void* ms_implicit_create(const ms_model* m);
void ms_implicit_free(void* solver);

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
   with velocity V takes its velocity from v to v' and its position from x to x'.  In the
   lab frame its kinetic energy changes by
     1/2 m (|v' - V|^2 - |v - V|^2) + m V.(v' - v),
   the first term the change in the collider's frame, the second the collider's impulse
   times its velocity: the collider's work (0 for a collider at rest, which does none).
   The rest is what contact itself did, in the collider's frame:
     change = 1/2 m (|v' - V|^2 - |v - V|^2) - m g.(x' - x) + the springs' energy change
   Restitution and friction remove relative speed, but the projection out of the collider
   moves the node, and it undoes a sinking that the integrator paid for with kinetic
   energy, so a single push's change has no fixed sign; what the contact stage of a step
   changes in all (ms_book_contact) is dissipated when negative, and booked with the
   constraints' position corrections when positive.  Then
     kinetic + gravity + spring + dissipated - work
   does not change exactly and no collider at rest books work.  A node resting on a static
   collider, sinking and pushed back every step, books as constraint work what the push
   gives back of the integrator's own sink: nothing for RK4 and Verlet, 1/2 m g^2 h^2 a step
   for the first-order methods, the same that their step lost. */
typedef struct ms_contact {
    double change;  /* the sum of the pushes' changes, less the springs' (J) */
    double work;    /* the colliders' work, m V.(v' - v) summed over the pushes (J) */
    int64_t pushes; /* nodes moved, whose springs' energy change is still to be added */
} ms_contact;

/* Books a step's contact change (ms_contact.change with the springs' share added) into
   the ledger: -change as contact dissipation when negative, change as constraint work
   when positive, so that contact never books a negative amount. */
void ms_book_contact(ms_ledger* booked, double change);

/* Contact with every collider (moving from where the state has it by velocity times h
   over the step) for the free nodes [begin, end) of (x, v), which moved from x_old during
   a step of size h: projection out of the collider, then restitution and friction.  The
   springs' energy change is left to ms_push_spring_energy: each moved
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
   m->opt.self_collision and not joined by a spring, and puts the kinetic energy that
   removes (J) in *removed.  Returns MS_OK, or MS_ERR_MEMORY if its storage could not be
   allocated (then nothing changed).  A state that overflows while pushed is left
   non-finite (and *removed with it) for the step's checks: a divergence, never taken for
   a failed allocation. */
int ms_self_collide(const ms_model* m, ms_state* s, double* x, double* v, double* removed);
void ms_self_work_free(void* work);

/* The number of workers a step of this model and state may use. */
int ms_thread_count(const ms_model* m, const ms_state* s);

#endif
