/* The kernels: what a step computes on a model and a state, one loop over nodes or springs
 * each (forces, energies, contact, constraints, the air), below the solvers that combine
 * them.  The springs' layout and vector paths are in layout.h, the workers' stages in
 * team.h, the tangent stiffness in tangent.h. */
#ifndef MSPRINGS_KERNELS_KERNELS_H
#define MSPRINGS_KERNELS_KERNELS_H

#include "kernels/layout.h"
#include "model/model.h"

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

/* Kinetic + spring + gravitational energy (J) of positions x and velocities v. */
double ms_mechanical_energy(const ms_model* m, const double* x, const double* v);

/* The kinetic and gravitational energy (J) of the free nodes of [begin, end). */
void ms_node_energy(const ms_model* m, const double* x, const double* v, int64_t begin, int64_t end, double* kinetic,
                    double* gravity);

/* Non-zero if the air has any wind or gusts. */
int ms_air_has_wind(const ms_air* air);

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
    int bad;        /* some value contact changed is not finite */
} ms_contact;

/* Books a step's contact change (ms_contact.change with the springs' share added) into
   the ledger: -change as contact dissipation when negative, change as constraint work
   when positive, so that contact never books a negative amount. */
void ms_book_contact(ms_ledger* booked, double change);

/* Contact with every collider (moving from where the state has it by velocity times h
   over the step) for the free nodes [begin, end) of (x, v), which moved from x_old during
   a step of size h: projection out of the collider, then restitution and friction.  The
   springs' energy change is left to ms_push_spring_energy: each moved node is marked in
   contact's workspace with its position before its first push (the marks of [begin, end)
   from the step before are cleared first).  Each node meets the colliders in their order
   and independently of the other nodes, so splitting the nodes
   changes no node's result (only the order in which the energies are summed).  The
   workspace carries each node's known gap to each collider from step to step, so a node
   far from a collider is passed over without evaluating its distance. */
ms_contact ms_collide_nodes(const ms_model* m, ms_state* s, const double* x_old, double* x, double* v, double h,
                            int64_t begin, int64_t end);

/* The rounding margin of the gap bounds: a bound is taken as the path's L1 length plus
   MS_GAP_ROUNDING times the L1 lengths of the start's offset and the path and the thickness. */
#define MS_GAP_ROUNDING 1e-12

/* The rounding margin of the full test's pass-over: a node is passed over when its gap at
   the start exceeds its path's length by MS_FULL_TEST_ROUNDING times the L1 lengths of the
   start's offset and the path and the thickness. */
#define MS_FULL_TEST_ROUNDING 1e-12

/* The gap bounds' screening of the contact pass (gap_kernel.h, one per vector path): from
   node begin on, four nodes at a time while every one of the four is passed over by its bound
   (known[i], from the collider's start to the node's at x_old, greater than the bound of its
   path from x_old to x with the collider moving from start to finish), each of their
   known[i] reduced by its bound; or, for a plane collider (plane: its unit axis, else NULL),
   while none of the four bounds holds and every one of the four is passed over by the full
   test (its plane distance at x_old less the thickness greater than its path's length plus
   the margin), each known[i] then set to that difference, as the full test sets it; returns
   the first node not so passed over (a multiple of four past begin, or where fewer than four
   are left), which the caller tests one by one with the same arithmetic. */
typedef int64_t (*ms_gap_screen)(const double* x_old, const double* x, double* known, const double start[3],
                                 const double finish[3], double thickness, const double* plane, int64_t begin,
                                 int64_t end);
#define MS_DECLARE_GAP_KERNEL(path)                                                                               \
    int64_t ms_screen_gaps_##path(const double* x_old, const double* x, double* known, const double start[3],     \
                                  const double finish[3], double thickness, const double* plane, int64_t begin,   \
                                  int64_t end)
MS_DECLARE_GAP_KERNEL(plain);
MS_DECLARE_GAP_KERNEL(sse2);
MS_DECLARE_GAP_KERNEL(neon);
MS_DECLARE_GAP_KERNEL(avx2);

/* Contact with every collider, as ms_collide_nodes does it, again for the free nodes i
   with again[i] != 0 only (in node order, every collider tested in full), once the
   self-contact sweep has sent them back to x_old after the colliders' pass: a collider that
   moved during the step may have come over where they started.  The pushes' changes and
   work are in the result, whose pushes counts the nodes whose position changed; the
   springs' share is not in change (the caller measures it). */
ms_contact ms_collide_again(const ms_model* m, ms_state* s, const double* x_old, double* x, double* v, double h,
                            const unsigned char* again);

/* The change of the energy (J) of the springs whose lowest marked end is in [begin, end),
   from where the marked nodes were before their first push to their positions in x,
   summed in the order of those ends and their springs: the sums of fixed node blocks,
   added in block order, do not depend on how the blocks were shared out.  Reads the marks
   of every node, so it must follow a barrier after every node's contact, and precede one
   before the next step's contact. */
double ms_push_spring_energy(const ms_model* m, ms_state* s, const double* x, int64_t begin, int64_t end);

/* Asks for the lines ms_push_spring_energy will read for the marked nodes of [begin, end), in
   three rounds, each needing the lines the one before asked for (0: where each node's
   springs start; 1: their lists; 2: their other ends' positions, stiffness and rest length):
   the springs of pushed nodes are scattered lines that the step's pass over every spring has
   evicted, so their misses are made to overlap with the work on earlier node blocks. */
void ms_push_prefetch(const ms_model* m, const ms_state* s, const double* x, int64_t begin, int64_t end, int round);

/* The derivatives of contact (contact.c): for the free nodes of (x, v), the state a step
   reached before its contact pass from x_old, with the colliders' centres at the start of
   the step in centers (ncollider x 3), contact taken again node by node with the step's
   branches.  ms_contact_tangent maps the tangent (dx, dv) of (x, v) in place to that of the
   state after contact, dx_old being the tangent of x_old; ms_contact_adjoint maps the
   adjoint (lx, lv) of the state after contact in place to that of (x, v) and adds x_old's
   share to lx_old, with scratch of ms_contact_derivative_bytes(m) bytes.  The colliders'
   poses and coefficients are constants. */
size_t ms_contact_derivative_bytes(const ms_model* m);
void ms_contact_tangent(const ms_model* m, const double* inv_mass, const double* centers, double h,
                        const double* x_old, const double* x, const double* v, const double* dx_old, double* dx,
                        double* dv);
void ms_contact_adjoint(const ms_model* m, const double* inv_mass, const double* centers, double h,
                        const double* x_old, const double* x, const double* v, double* lx, double* lv,
                        double* lx_old, void* scratch);

/* For each node ms_find_held found held (held: its normals, as ms_find_held wrote them for
   positions x and the colliders' centres centers), the Hessian of the signed distance of the
   collider holding it at x_i, the derivative of its normal (nnode x 9; zero for the others). */
void ms_held_hessians(const ms_model* m, const double* centers, const double* x, const double* held,
                      double* hessian);

/* Contact's storage ready for a step call (made on first use), with what it knew of the
   gaps from an earlier call forgotten (each step's contact clears the push marks itself).
   Done at the start of every ms_step call with colliders, the one place the gaps are
   invalidated, since between calls the positions and the colliders may have been changed
   from outside. */
int ms_contact_prepare(const ms_model* m, ms_state* s, ms_error* err);

/* Resting contact inside a large-step solve.  A node that touches a collider (within its
   thickness plus a millionth of the step's reach) while the forces f at the start of the
   step press it in is held there for the step (a collider at rest; a moving one pushes
   after the step, as the ledger books its work): its velocity along the collider's normal
   n keeps the value it starts with (zero after the last contact), and the solver solves
   for the body with that constraint, as for a pin along n.  The contact pass after the
   step then projects, bounces and rubs as for every integrator.  Without it the solve
   would see the body fall freely through the step and the projection afterwards would
   crush the layer on the collider, by about h^2 g times the body's stiffness over its
   bottom layer's.  ms_find_held writes held[3 i .. 3 i + 2], the unit normal of the
   collider holding node i or zero for a node not held (all nodes), and returns whether
   any node is held; ms_filter_held removes from y (nodes [begin, end)) its component
   along each held node's normal. */
int ms_find_held(const ms_model* m, const ms_state* s, const double* x, const double* v, const double* f, double h,
                 double* held);
void ms_filter_held(const double* held, double* y, int64_t begin, int64_t end);

/* Self-collision: pushes apart the nodes of (x, v) that are closer than
   m->opt.self_collision and not joined by a spring, and puts the kinetic energy that
   removes (J) in *removed.  Returns MS_OK, or MS_ERR_MEMORY if its storage could not be
   allocated (then nothing changed).  A state that overflows while pushed is left
   non-finite (and *removed with it) for the step's checks: a divergence, never taken for
   a failed allocation. */
int ms_self_collide(const ms_model* m, ms_state* s, double* x, double* v, double* removed);

/* Closest point of triangle (a, b, c) to p, as barycentric weights summing to 1 (selfcontact.c,
   beside the sweep's other closest-point functions). */
void ms_closest_on_triangle(const double* p, const double* a, const double* b, const double* c, double weight[3]);

/* The gap the self-contact sweep keeps, as a fraction of m->opt.self_collision or of the
   mean edge length at the start of the step, whichever is less. */
#define MS_SELF_CONTACT_GAP 0.05

/* Self-contact sweep (selfcontact.c) over the step x0 -> x1 of a system with triangles:
   every node of a point-triangle or edge-edge pair that comes closer than the gap
   (at most the given one) during the straight-line motion goes back to x0 (a free one with
   zero velocity), until no pair does;
   a state x0 that crosses itself nowhere gives an x1 that crosses itself nowhere.
   *sent_back receives how many nodes went back, *removed the kinetic energy they lost (J),
   and ms_self_contact's *back the nodes' marks (back[i] != 0: node i went back; valid until
   the next sweep).  The sweep runs the caller's interruption check (interrupt, or NULL) every
   MS_CHECK_PERIOD at most, on the thread that calls it.  ms_self_contact gets its storage
   from the self-collision workspace.  Returns MS_OK, MS_ERR_MEMORY or MS_ERR_INTERRUPTED
   (then x1 and v are unchanged). */
typedef struct ms_sweep_work ms_sweep_work;
ms_sweep_work* ms_sweep_work_new(const ms_model* m);
void ms_sweep_work_free(ms_sweep_work* w);
const int32_t* ms_sweep_edges(const ms_sweep_work* w, int64_t* nedge); /* (nedge, 2), lower node first */
const unsigned char* ms_sweep_sent_back(const ms_sweep_work* w); /* (nnode): 1 if the node went back */
double ms_segment_closest(const double* p1, const double* q1, const double* p2, const double* q2, double* s,
                          double* t);
int ms_self_contact_sweep(const ms_model* m, ms_state* s, ms_sweep_work* w, const double* x0, double* x1, double* v,
                          double gap, const ms_interrupt* interrupt, int64_t* sent_back, double* removed);
int ms_self_contact(const ms_model* m, ms_state* s, const double* x0, double* x1, double* v,
                    const ms_interrupt* interrupt, int64_t* sent_back, double* removed, const unsigned char** back);

#endif
