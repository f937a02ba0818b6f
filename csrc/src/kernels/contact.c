/* Contact with the colliders: each node is projected out of the colliders it enters
 * during a step, then its velocity relative to the collider loses its normal part times
 * (1 + restitution) and its tangential part by at most friction times that change; and
 * how contact is booked in the ledger.  The storage it keeps with a state (where pushed
 * nodes came from, each node's springs, the gap bounds) is its own workspace. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "model/colliders.h"

/* What contact keeps with a state (slot MS_WORK_CONTACT). */
typedef struct contact_work {
    double* push_from;   /* position of each node before its first push in a step (nnode x 3) */
    uint8_t* pushed;     /* 1 for a node pushed in this step, else 0; a node range's marks are
                            cleared by its contact pass of the next step (nnode) */
    int64_t* node_spring_start; /* springs of node i: entries node_spring_start[i] ..
                                   node_spring_start[i + 1]]                     (nnode + 1) */
    int32_t* node_ends;         /* each node's springs as (other end, spring index) pairs,
                                   node_ends[2 e] and node_ends[2 e + 1]: the springs of a
                                   pushed node are read without a look-up in the model's
                                   spring list (a cache miss each on a large network), and
                                   both numbers of an entry come in one line    (4 nspring) */
    double* clearance;   /* per collider and node, a lower bound on the node's gap to the
                            collider, valid within one ms_step call (nnode x ncollider) */
    int64_t clearance_count; /* entries allocated in clearance */
    void* buffer;        /* push_from, node_spring_start, node_ends, pushed */
} contact_work;

static void contact_work_free(void* data) {
    contact_work* w = data;
    free(w->clearance);
    free(w->buffer);
    free(w);
}

int ms_contact_prepare(const ms_model* m, ms_state* s, ms_error* err) {
    contact_work* w = ms_workspace_get(s, MS_WORK_CONTACT);
    if (w == NULL) {
        const size_t count = (size_t)m->nnode, springs = (size_t)m->nspring;
        w = calloc(1, sizeof *w);
        /* push_from, node_spring_start, node_ends, pushed: widest first, so each is
           aligned */
        void* buffer = malloc(sizeof(double) * 3 * count + sizeof(int64_t) * (count + 1) +
                              sizeof(int32_t) * 4 * springs + count);
        if (w == NULL || buffer == NULL) {
            free(w);
            free(buffer);
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the contact storage of %lld nodes",
                                (long long)m->nnode);
        }
        w->buffer = buffer;
        w->push_from = buffer;
        w->node_spring_start = (int64_t*)(w->push_from + 3 * count);
        w->node_ends = (int32_t*)(w->node_spring_start + count + 1);
        w->pushed = (uint8_t*)(w->node_ends + 4 * springs);
        memset(w->pushed, 0, count);
        /* the spring indices by node, into the upper half, then spread out into pairs */
        int32_t* by_node = w->node_ends + 2 * springs;
        if (ms_node_springs(m, w->node_spring_start, by_node) != 0) {
            contact_work_free(w);
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the contact storage of %lld nodes",
                                (long long)m->nnode);
        }
        /* entry e's pair is written at 2 e and 2 e + 1 <= 2 springs + e (e < 2 springs):
           at or below the index it reads, above which the later entries' indices wait */
        for (int64_t node = 0; node < m->nnode; ++node)
            for (int64_t e = w->node_spring_start[node]; e < w->node_spring_start[node + 1]; ++e) {
                const int32_t spring = by_node[e];
                const int32_t* ends = m->springs + 2 * (int64_t)spring;
                w->node_ends[2 * e] = ends[0] == node ? ends[1] : ends[0];
                w->node_ends[2 * e + 1] = spring;
            }
        ms_workspace_set(s, MS_WORK_CONTACT, w, contact_work_free);
    }
    /* what contact knew between steps is forgotten at the start of every call, the one
       place it is invalidated, since between calls the positions and the colliders may
       have been changed from outside */
    const int64_t count = m->nnode * m->ncollider;
    if (count != w->clearance_count) {
        free(w->clearance);
        w->clearance = count > 0 ? malloc(sizeof(double) * (size_t)count) : NULL;
        w->clearance_count = w->clearance != NULL ? count : 0;
    }
    if (w->clearance != NULL) memset(w->clearance, 0, sizeof(double) * (size_t)count);
    return MS_OK;
}

/* First point of the relative segment r0 -> r1 (collider frame, collider at the origin)
   closer than thickness to the surface, by sphere tracing on the exact distance; start_gap
   is the gap at r0.  Returns the fraction t in (0, 1], or -1 if the segment stays outside. */
static double first_contact(const ms_collider* c, const double r0[3], const double r1[3], double start_gap) {
    static const double origin[3] = {0.0, 0.0, 0.0};
    const double travel[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
    const double distance = ms_length3(travel);
    if (!(distance > 0.0)) return -1.0;
    double normal[3], t = 0.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
        const double p[3] = {r0[0] + t * travel[0], r0[1] + t * travel[1], r0[2] + t * travel[2]};
        const double gap = iteration == 0 ? start_gap : ms_collider_distance_inline(c, origin, p, normal) - c->thickness;
        if (gap <= 1e-9 * distance) return t;
        t += gap / distance;
        if (t > 1.0) return -1.0;
    }
    return -1.0;
}

/* Velocity response of one node against a surface moving with the collider's velocity.
   Returns 1 when friction holds the node (its tangential velocity is removed entirely). */
static int respond(const ms_collider* c, const double normal[3], double v[3]) {
    const double relative[3] = {v[0] - c->velocity[0], v[1] - c->velocity[1], v[2] - c->velocity[2]};
    const double vn = relative[0] * normal[0] + relative[1] * normal[1] + relative[2] * normal[2];
    if (vn >= 0.0) return 0; /* separating or sliding: nothing to remove */
    const double change = -(1.0 + c->restitution) * vn; /* normal velocity change, > 0 */
    double tangent[3];
    for (int a = 0; a < 3; ++a) tangent[a] = relative[a] - vn * normal[a];
    const double speed = ms_length3(tangent);
    /* Coulomb: the tangential speed drops by at most mu times the normal change. */
    const double keep = speed > 0.0 && speed > c->friction * change ? 1.0 - c->friction * change / speed : 0.0;
    for (int a = 0; a < 3; ++a) v[a] = c->velocity[a] + (vn + change) * normal[a] + keep * tangent[a];
    return keep == 0.0 && c->friction > 0.0;
}

/* A plane's signed distance, as ms_collider_distance_inline computes it. */
static inline double plane_distance(const double axis[3], const double r[3]) {
    return r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2];
}

/* What one collider's pass over a node range shares with each node's full test. */
typedef struct collider_pass {
    const ms_collider* c;
    int64_t k;            /* its row */
    double start[3], end[3]; /* where it is at the start and the end of the step */
    int lipschitz;        /* its distance grows no faster than the path (see below) */
    double* known;        /* the nodes' gap bounds to it, or NULL */
} collider_pass;

/* The full test of free node i against one collider, whose gap bound did not pass it
   over: projection out of the collider, then restitution and friction, booked into
   contact.  Kept out of the loop over the nodes so that the loop stays small (most
   nodes are passed over by their bounds). */
static MS_NOINLINE void collide_node(const ms_model* m, contact_work* work, const collider_pass* pass,
                                     const double* MS_RESTRICT x_old, double* MS_RESTRICT x, double* MS_RESTRICT v,
                                     int64_t i, ms_contact* contact) {
    const ms_collider* c = pass->c;
    const double* start = pass->start;
    const double* end = pass->end;
    const double* g = m->opt.gravity;
    double* known = pass->known;
    double* xi = x + 3 * i;
    double* vi = v + 3 * i;
    const double* xo = x_old + 3 * i;
    const double r0[3] = {xo[0] - start[0], xo[1] - start[1], xo[2] - start[2]};
    const double r1[3] = {xi[0] - end[0], xi[1] - end[1], xi[2] - end[2]};
    const double path[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
    const double margin = MS_FULL_TEST_ROUNDING * (fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + fabs(path[0]) +
                                                   fabs(path[1]) + fabs(path[2]) + c->thickness);
    static const double origin[3] = {0.0, 0.0, 0.0};
    double normal[3], moved[3];
    /* the ground, where bodies rest: its distance written out (the same arithmetic) */
    const int plane = c->type == MS_PLANE;
    const double* axis = c->axis;
    const double start_gap =
        (plane ? plane_distance(axis, r0) : ms_collider_distance_inline(c, origin, r0, normal)) - c->thickness;
    const double travel = sqrt(path[0] * path[0] + path[1] * path[1] + path[2] * path[2]);
    if (pass->lipschitz && start_gap > travel + margin) {
        if (known != NULL) known[i] = start_gap - travel - margin;
        return;
    }
    if (known != NULL) known[i] = 0.0;
    double end_normal[3];
    const double end_gap =
        (plane ? plane_distance(axis, r1) : ms_collider_distance_inline(c, origin, r1, end_normal)) - c->thickness;
    if (plane)
        for (int a = 0; a < 3; ++a) normal[a] = end_normal[a] = axis[a];
    double t = -1.0;
    if (start_gap > 1e-9 * travel) t = first_contact(c, r0, r1, start_gap); /* entered during the step? */
    int through_entry = 0;
    if (t >= 0.0) {
        const double hit[3] = {r0[0] + t * (r1[0] - r0[0]), r0[1] + t * (r1[1] - r0[1]), r0[2] + t * (r1[2] - r0[2])};
        const double gap = ms_collider_distance_inline(c, origin, hit, normal) - c->thickness;
        /* Out through the face it came in by when the end is outside again (it crossed a
           thin collider) or nearest to another face (it went deep): onto the tangent plane
           at the entry point, keeping its motion along the surface.  A fast node must not
           come out on the far side. */
        const double agreement = normal[0] * end_normal[0] + normal[1] * end_normal[1] + normal[2] * end_normal[2];
        if (end_gap >= 0.0 || agreement < 0.5) {
            double depth = 0.0; /* of the end below the tangent plane */
            for (int a = 0; a < 3; ++a) depth += (r1[a] - (hit[a] - gap * normal[a])) * normal[a];
            if (depth > 0.0) depth = 0.0;
            for (int a = 0; a < 3; ++a) moved[a] = xi[a] - depth * normal[a];
            through_entry = 1;
        }
    }
    if (!through_entry) {
        if (end_gap >= 0.0) return;
        /* In contact: out along the nearest surface's normal. */
        for (int a = 0; a < 3; ++a) {
            normal[a] = end_normal[a];
            moved[a] = xi[a] - end_gap * normal[a];
        }
    }
    const double mass = m->mass[i];
    const double* V = c->velocity;
    const double v_before[3] = {vi[0], vi[1], vi[2]};
    if (respond(c, normal, vi)) {
        /* Static friction: a node that friction holds does not creep either -- undo the
           tangential part of its displacement relative to the collider. */
        double slip[3], along = 0.0;
        for (int a = 0; a < 3; ++a) {
            slip[a] = (moved[a] - xo[a]) - (end[a] - start[a]);
            along += slip[a] * normal[a];
        }
        for (int a = 0; a < 3; ++a) moved[a] -= slip[a] - along * normal[a];
    }
    /* The ledger (see ms_contact): the work of the collider, its impulse times its
       velocity (exactly 0 for a collider at rest), and the change of the node's kinetic
       energy in the collider's frame plus the gravitational energy the projection adds
       (the springs' share is summed afterwards from push_from). */
    double relative_before = 0.0, relative_after = 0.0, impulse_work = 0.0, lift = 0.0;
    for (int a = 0; a < 3; ++a) {
        relative_before += (v_before[a] - V[a]) * (v_before[a] - V[a]);
        relative_after += (vi[a] - V[a]) * (vi[a] - V[a]);
        impulse_work += V[a] * (vi[a] - v_before[a]);
        lift -= g[a] * (moved[a] - xi[a]);
    }
    contact->change += mass * (0.5 * (relative_after - relative_before) + lift);
    contact->work += mass * impulse_work;
    if (!work->pushed[i]) {
        work->pushed[i] = 1;
        for (int a = 0; a < 3; ++a) work->push_from[3 * i + a] = xi[a];
        contact->pushes += 1;
    }
    for (int a = 0; a < 3; ++a) xi[a] = moved[a];
    /* the only values of the step contact changes: their finiteness is the range's */
    if (!(isfinite(xi[0]) && isfinite(xi[1]) && isfinite(xi[2]) && isfinite(vi[0]) && isfinite(vi[1]) &&
          isfinite(vi[2])))
        contact->bad = 1;
    /* The push moved the node after the colliders before this one took its gap: their
       bounds no longer hold (the next step's path starts after the push). */
    if (work->clearance != NULL)
        for (int64_t e = 0; e < pass->k; ++e) work->clearance[e * m->nnode + i] = 0.0;
}

/* Collider k's pass over a step of h seconds: where it starts and ends, and its nodes' gap
   bounds.  The bounds' skip needs a distance that grows no faster than the path: true for a
   unit axis (as adding or setting a collider leaves it), not for one written into the
   model's list directly with another length. */
static void begin_pass(const ms_model* m, const ms_state* s, contact_work* work, int64_t k, double h,
                       collider_pass* pass) {
    const ms_collider* c = pass->c = &m->colliders[k];
    pass->k = k;
    for (int a = 0; a < 3; ++a) {
        pass->start[a] = s->collider_center[3 * k + a];
        pass->end[a] = pass->start[a] + h * c->velocity[a];
    }
    const double axis2 = c->axis[0] * c->axis[0] + c->axis[1] * c->axis[1] + c->axis[2] * c->axis[2];
    pass->lipschitz = (c->type != MS_PLANE && c->type != MS_CYLINDER) || fabs(axis2 - 1.0) <= 1e-12;
    pass->known = work->clearance != NULL && pass->lipschitz ? work->clearance + k * m->nnode : NULL;
}

ms_contact ms_collide_nodes(const ms_model* m, ms_state* s, const double* MS_RESTRICT x_old, double* MS_RESTRICT x,
                            double* MS_RESTRICT v, double h, int64_t begin, int64_t end_node) {
    ms_contact contact = {0.0, 0.0, 0, 0};
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    contact_work* work = ms_workspace_get(s, MS_WORK_CONTACT);
    /* the marks of the step before were read (ms_push_spring_energy) before this step began */
    memset(work->pushed + begin, 0, (size_t)(end_node - begin));
    for (int64_t k = 0; k < m->ncollider; ++k) {
        collider_pass pass;
        begin_pass(m, s, work, k, h, &pass);
        const ms_collider* c = pass.c;
        double* MS_RESTRICT known = pass.known;
        const double start[3] = {pass.start[0], pass.start[1], pass.start[2]};
        const double finish[3] = {pass.end[0], pass.end[1], pass.end[2]};
        const double thickness = c->thickness;
        const ms_gap_screen screen = MS_FASTEST_KERNEL(ms_screen_gaps);
        /* a plane's full test runs in the screening too (the first step of a call tests
           every node in full) */
        const double* plane = c->type == MS_PLANE ? c->axis : NULL;
        for (int64_t i = begin; i < end_node; ++i) {
            if (known != NULL && ((i - begin) & 3) == 0) {
                /* the nodes passed over, four at a time; the first four that are not
                   (or the last few) go through the test below one by one */
                i = screen(x_old, x, known, start, finish, thickness, plane, i, end_node);
                if (i == end_node) break;
            }
            if (inv_mass[i] == 0.0) continue;
            if (known != NULL) {
                /* The signed distances are 1-Lipschitz, so a node that starts farther from
                   the surface than its whole path is long cannot come within the
                   thickness: no contact, as the full test would find, and its gap at the
                   end is at least the difference.  known[i] keeps that lower bound from
                   step to step (0: none), so a node far from the collider is passed over
                   with no distance evaluated until its paths add up to its last known
                   gap.  The path's L1 length bounds its length; the margin covers the
                   rounding of the distances, which grows with the coordinates. */
                const double* xo = x_old + 3 * i;
                const double* xi = x + 3 * i;
                const double r0[3] = {xo[0] - start[0], xo[1] - start[1], xo[2] - start[2]};
                const double path[3] = {(xi[0] - finish[0]) - r0[0], (xi[1] - finish[1]) - r0[1],
                                        (xi[2] - finish[2]) - r0[2]};
                const double length = fabs(path[0]) + fabs(path[1]) + fabs(path[2]);
                const double bound =
                    length + MS_GAP_ROUNDING * (fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + length + thickness);
                if (known[i] > bound) {
                    known[i] -= bound;
                    continue;
                }
            }
            collide_node(m, work, &pass, x_old, x, v, i, &contact);
        }
    }
    return contact;
}

void ms_push_prefetch(const ms_model* m, const ms_state* s, const double* x, int64_t begin, int64_t end, int round) {
    const contact_work* work = ms_workspace_get(s, MS_WORK_CONTACT);
    const uint8_t* pushed = work->pushed;
    const int64_t* spring_start = work->node_spring_start;
    for (int64_t node = begin; node < end; ++node) {
        if (!pushed[node]) continue;
        if (round == 0) {
            MS_PREFETCH(spring_start + node);
            MS_PREFETCH(spring_start + node + 1);
        } else if (round == 1) {
            /* every line of the node's entries */
            if (spring_start[node + 1] == spring_start[node]) continue;
            const char* first = (const char*)(work->node_ends + 2 * spring_start[node]);
            const char* last = (const char*)(work->node_ends + 2 * spring_start[node + 1]) - 1;
            for (; first < last; first += 64) MS_PREFETCH(first);
            MS_PREFETCH(last);
        } else {
            for (int64_t e = spring_start[node]; e < spring_start[node + 1]; ++e) {
                const int64_t k = work->node_ends[2 * e + 1];
                MS_PREFETCH(x + 3 * (int64_t)work->node_ends[2 * e]);
                MS_PREFETCH(m->k + k);
                MS_PREFETCH(m->rest + k);
            }
        }
    }
}

ms_contact ms_collide_again(const ms_model* m, ms_state* s, const double* MS_RESTRICT x_old, double* MS_RESTRICT x,
                            double* MS_RESTRICT v, double h, const unsigned char* again) {
    ms_contact contact = {0.0, 0.0, 0, 0};
    contact_work* work = ms_workspace_get(s, MS_WORK_CONTACT);
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (!again[i] || s->inv_mass[i] == 0.0) continue;
        double* xi = x + 3 * i;
        const double found[3] = {xi[0], xi[1], xi[2]};
        /* the gaps the first pass kept were for a path the node no longer took: every
           collider's full test, each writing the node's bound for its new path */
        for (int64_t k = 0; k < m->ncollider; ++k) {
            collider_pass pass;
            begin_pass(m, s, work, k, h, &pass);
            const int64_t pushes = contact.pushes;
            collide_node(m, work, &pass, x_old, x, v, i, &contact);
            contact.pushes = pushes;
        }
        contact.pushes += xi[0] != found[0] || xi[1] != found[1] || xi[2] != found[2];
    }
    return contact;
}

double ms_push_spring_energy(const ms_model* m, ms_state* s, const double* x, int64_t begin, int64_t end) {
    contact_work* work = ms_workspace_get(s, MS_WORK_CONTACT);
    const uint8_t* pushed = work->pushed;
    const double* from = work->push_from;
    double change = 0.0;
    /* Each spring with a pushed end once, from its lowest pushed end, nodes in order.  A
       spring the loop passes over adds exactly 0 (its term is finite: the step is), and
       the ends' positions are picked, not branched on: at a resting body's underside
       half the springs of a pushed node lead to another pushed node, at random to the
       branch predictor.  The lines it reads were asked for ahead (ms_push_prefetch). */
    for (int64_t node = begin; node < end; ++node) {
        if (!pushed[node]) continue;
        const double* xn = x + 3 * node;
        const double* bn = from + 3 * node;
        for (int64_t e = work->node_spring_start[node]; e < work->node_spring_start[node + 1]; ++e) {
            const int64_t other = work->node_ends[2 * e];
            const int64_t k = work->node_ends[2 * e + 1];
            const double counted = other < node && pushed[other] ? 0.0 : 1.0;
            const double* xo = x + 3 * other;
            const double* bo = (pushed[other] ? from : x) + 3 * other;
            double before2 = 0.0, after2 = 0.0;
            for (int a = 0; a < 3; ++a) {
                before2 += (bo[a] - bn[a]) * (bo[a] - bn[a]);
                after2 += (xo[a] - xn[a]) * (xo[a] - xn[a]);
            }
            const double before = sqrt(before2), after = sqrt(after2);
            /* 1/2 k ((l_a - L)^2 - (l_b - L)^2) = 1/2 k (l_a - l_b) (l_a + l_b - 2 L): no
               difference of two large energies */
            change += counted * (0.5 * m->k[k] * (after - before) * (after + before - 2.0 * m->rest[k]));
        }
    }
    return change;
}

/* A collider at rest does no work: what its pushes change is contact's.  The velocity
   response only removes relative speed, but the projection also moves the node, and for a
   node resting on the collider it undoes the sinking that the step paid for with kinetic
   energy: the response then removes kinetic energy that the projection gives back as
   gravitational (or spring) energy.  Booking the kinetic loss as dissipation and the lift as
   the collider's work would count that exchange twice, every step, so a resting node would
   dissipate without bound and a static floor would do work.  So the step's pushes are booked
   by their net change in the colliders' frame (they are taken together because the springs'
   share is measured for all pushed nodes at once): a loss is dissipated, a gain -- the
   projection giving back more than restitution and friction took, as when a first-order
   step's fall of g h^2 into the floor is undone -- is the position correction's work, with
   the constraints'.  Dissipation then never goes negative, the ledger closes exactly as
   before (the two parts differ only by their sign), and contact never dissipates more than
   there was: E0 - E_end, plus whatever the integrator itself added. */
void ms_book_contact(ms_ledger* booked, double change) {
    if (change < 0.0)
        booked->contact -= change;
    else
        booked->constraints += change;
}


void ms_filter_held(const double* held, double* y, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
        const double* n = held + 3 * i;
        if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
        double* yi = y + 3 * i;
        const double along = yi[0] * n[0] + yi[1] * n[1] + yi[2] * n[2];
        for (int a = 0; a < 3; ++a) yi[a] -= along * n[a];
    }
}

int ms_find_held(const ms_model* m, const ms_state* s, const double* x, const double* v, const double* f, double h,
                 double* held) {
    int any = 0;
    memset(held, 0, sizeof(double) * 3 * (size_t)m->nnode);
    for (int64_t k = 0; k < m->ncollider; ++k) {
        const ms_collider* c = m->colliders + k;
        const double* center = s->collider_center + 3 * k;
        /* a moving collider's pushes are its work in the ledger: it pushes after the step */
        if (c->velocity[0] != 0.0 || c->velocity[1] != 0.0 || c->velocity[2] != 0.0) continue;
        for (int64_t i = 0; i < m->nnode; ++i) {
            if (s->inv_mass[i] == 0.0) continue;
            const double* xi = x + 3 * i;
            const double* vi = v + 3 * i;
            double normal[3];
            const double gap = ms_collider_distance_inline(c, center, xi, normal) - c->thickness;
            const double reach = h * (fabs(vi[0]) + fabs(vi[1]) + fabs(vi[2])) +
                                 h * h * s->inv_mass[i] * (fabs(f[3 * i]) + fabs(f[3 * i + 1]) + fabs(f[3 * i + 2]));
            if (!(gap <= 1e-6 * reach + 1e-12 * (fabs(xi[0]) + fabs(xi[1]) + fabs(xi[2])))) continue;
            const double* fi = f + 3 * i;
            const double pressing = fi[0] * normal[0] + fi[1] * normal[1] + fi[2] * normal[2];
            const double approach = vi[0] * normal[0] + vi[1] * normal[1] + vi[2] * normal[2];
            if (pressing < 0.0 && approach <= 1e-9 * (fabs(vi[0]) + fabs(vi[1]) + fabs(vi[2]) + h * fabs(pressing) *
                                                                                          s->inv_mass[i])) {
                for (int a = 0; a < 3; ++a) held[3 * i + a] = normal[a];
                any = 1;
            }
        }
    }
    return any;
}

/* ---- the derivatives of contact ------------------------------------------------------
   For one node and one collider (centre c0 at the start of the step, c1 = c0 + h V at its
   end) contact maps the node's start x_o and its state (x, v) after the integrator to
   (x', v').  Where the node does not touch, the map is the identity.  Where it ends inside
   (gap phi(r) < 0 at r = x - c1, phi the signed distance less the thickness, n its
   gradient, H its Hessian), it is projected out along the normal,
       x' = x - phi n,                    dx' = (I - n n^T - phi H) dx,
   the projection onto the surface (for a plane I - n n^T; for a sphere of radius R the
   tangential part scaled by (R + thickness) / |r|).  A node entering fast enough to cross a
   thin collider, or to go deep, is pushed out onto the tangent plane at its entry point:
   there the entry point and its normal are held fixed (exact for a plane, where the two
   pushes are the same).  Then, with u = v - V the velocity relative to the collider,
   u_n = u.n < 0 and u_t = u - u_n n, the response
       slip:  v' = V - e u_n n + (1 - mu (1 + e) |u_n| / |u_t|) u_t    (|u_t| > mu (1 + e) |u_n|)
       stick: v' = V - e u_n n,   and x' loses its tangential slip relative to the collider,
   both smooth within their regimes (n depends on x through H).  Whether a node touches, and
   whether it slips or sticks, is decided by the step; the derivatives here are those of the
   branch the step took, which at the switch (a node arriving at or leaving the surface,
   u_n = 0, |u_t| = mu (1 + e) |u_n|) are one-sided.  The collider's own pose and velocity,
   restitution, friction and thickness are not parameters: no derivative is taken with
   respect to them. */

/* What one collider's contact did to one node, for its derivative. */
typedef struct contact_local {
    int touched;        /* 0: no contact (identity) */
    int project;        /* the push along the normal is active */
    double normal[3];
    double hessian[9];  /* of the signed distance at the end point (0 when the normal is fixed) */
    double gap;         /* phi at the end point (<= 0), 0 when the normal is fixed */
    int response;       /* 0: none (separating), 1: slip, 2: stick */
    double relative[3]; /* u = v - V before the response */
    int hold;           /* friction held the node: its slip was undone */
    double slip[3];     /* that slip */
} contact_local;

/* The Hessian of collider c's signed distance at r (collider at the origin), where the
   distance is smooth (zero on flat faces). */
static void distance_hessian(const ms_collider* c, const double r[3], double hessian[9]) {
    for (int q = 0; q < 9; ++q) hessian[q] = 0.0;
    switch (c->type) {
    case MS_SPHERE: {
        const double length = ms_length3(r);
        if (!(length > 0.0)) return;
        const double n[3] = {r[0] / length, r[1] / length, r[2] / length};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) hessian[3 * a + b] = ((a == b ? 1.0 : 0.0) - n[a] * n[b]) / length;
        return;
    }
    case MS_BOX: {
        double outside[3], active[3];
        for (int a = 0; a < 3; ++a) {
            const double q = fabs(r[a]) - c->size[a];
            active[a] = q > 0.0 ? 1.0 : 0.0;
            outside[a] = q > 0.0 ? (r[a] < 0.0 ? -q : q) : 0.0;
        }
        const double length = ms_length3(outside);
        if (!(length > 0.0)) return;
        const double n[3] = {outside[0] / length, outside[1] / length, outside[2] / length};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) hessian[3 * a + b] = ((a == b ? active[a] : 0.0) - n[a] * n[b]) / length;
        return;
    }
    case MS_CYLINDER: {
        const double* axis = c->axis;
        const double along = r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2];
        const double radial[3] = {r[0] - along * axis[0], r[1] - along * axis[1], r[2] - along * axis[2]};
        const double rho = ms_length3(radial);
        if (!(rho > 0.0)) return;
        const double e[3] = {radial[0] / rho, radial[1] / rho, radial[2] / rho};
        const double side = along < 0.0 ? -1.0 : 1.0;
        const double dr = rho - c->size[0], dh = fabs(along) - c->size[1];
        double ring[9]; /* the derivative of e: (I - a a^T - e e^T) / rho */
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                ring[3 * a + b] = ((a == b ? 1.0 : 0.0) - axis[a] * axis[b] - e[a] * e[b]) / rho;
        if (dr > 0.0 && dh > 0.0) { /* the rim: sqrt(dr^2 + dh^2) */
            const double length = sqrt(dr * dr + dh * dh);
            double n[3];
            for (int a = 0; a < 3; ++a) n[a] = (dr * e[a] + dh * side * axis[a]) / length;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b)
                    hessian[3 * a + b] = (e[a] * e[b] + axis[a] * axis[b] - n[a] * n[b]) / length +
                                         dr / length * ring[3 * a + b];
            return;
        }
        if (dr > dh)
            for (int q = 0; q < 9; ++q) hessian[q] = ring[q];
        return;
    }
    default: return;
    }
}

/* Collider k's contact with one node, as collide_node takes it (the same arithmetic, so the
   same branches), on (x, v) in place, with what its derivative needs in *local. */
static void contact_again(const ms_model* m, const double* centers, double h, int64_t k, const double xo[3],
                          double xi[3], double vi[3], contact_local* local) {
    const ms_collider* c = &m->colliders[k];
    static const double origin[3] = {0.0, 0.0, 0.0};
    double start[3], end[3];
    for (int a = 0; a < 3; ++a) {
        start[a] = centers[3 * k + a];
        end[a] = start[a] + h * c->velocity[a];
    }
    const double axis2 = c->axis[0] * c->axis[0] + c->axis[1] * c->axis[1] + c->axis[2] * c->axis[2];
    const int lipschitz = (c->type != MS_PLANE && c->type != MS_CYLINDER) || fabs(axis2 - 1.0) <= 1e-12;
    local->touched = 0;
    const double r0[3] = {xo[0] - start[0], xo[1] - start[1], xo[2] - start[2]};
    const double r1[3] = {xi[0] - end[0], xi[1] - end[1], xi[2] - end[2]};
    const double path[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
    const double margin = MS_FULL_TEST_ROUNDING * (fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + fabs(path[0]) +
                                                   fabs(path[1]) + fabs(path[2]) + c->thickness);
    double normal[3], moved[3], end_normal[3];
    const int plane = c->type == MS_PLANE;
    const double* axis = c->axis;
    const double start_gap =
        (plane ? plane_distance(axis, r0) : ms_collider_distance_inline(c, origin, r0, normal)) - c->thickness;
    const double travel = sqrt(path[0] * path[0] + path[1] * path[1] + path[2] * path[2]);
    if (lipschitz && start_gap > travel + margin) return;
    const double end_gap =
        (plane ? plane_distance(axis, r1) : ms_collider_distance_inline(c, origin, r1, end_normal)) - c->thickness;
    if (plane)
        for (int a = 0; a < 3; ++a) normal[a] = end_normal[a] = axis[a];
    double t = -1.0;
    if (start_gap > 1e-9 * travel) t = first_contact(c, r0, r1, start_gap);
    int through_entry = 0;
    if (t >= 0.0) {
        const double hit[3] = {r0[0] + t * (r1[0] - r0[0]), r0[1] + t * (r1[1] - r0[1]), r0[2] + t * (r1[2] - r0[2])};
        const double gap = ms_collider_distance_inline(c, origin, hit, normal) - c->thickness;
        const double agreement = normal[0] * end_normal[0] + normal[1] * end_normal[1] + normal[2] * end_normal[2];
        if (end_gap >= 0.0 || agreement < 0.5) {
            double depth = 0.0;
            for (int a = 0; a < 3; ++a) depth += (r1[a] - (hit[a] - gap * normal[a])) * normal[a];
            local->project = depth < 0.0;
            if (depth > 0.0) depth = 0.0;
            for (int a = 0; a < 3; ++a) moved[a] = xi[a] - depth * normal[a];
            through_entry = 1;
            local->gap = 0.0;
            for (int q = 0; q < 9; ++q) local->hessian[q] = 0.0;
        }
    }
    if (!through_entry) {
        if (end_gap >= 0.0) return;
        for (int a = 0; a < 3; ++a) {
            normal[a] = end_normal[a];
            moved[a] = xi[a] - end_gap * normal[a];
        }
        local->project = 1;
        local->gap = end_gap;
        distance_hessian(c, r1, local->hessian);
    }
    local->touched = 1;
    for (int a = 0; a < 3; ++a) {
        local->normal[a] = normal[a];
        local->relative[a] = vi[a] - c->velocity[a];
    }
    /* the response's branch, as respond takes it */
    const double* u = local->relative;
    const double vn = u[0] * normal[0] + u[1] * normal[1] + u[2] * normal[2];
    local->response = 0;
    if (vn < 0.0) {
        const double change = -(1.0 + c->restitution) * vn;
        double tangent[3];
        for (int a = 0; a < 3; ++a) tangent[a] = u[a] - vn * normal[a];
        const double speed = ms_length3(tangent);
        local->response = speed > 0.0 && speed > c->friction * change ? 1 : 2;
    }
    local->hold = respond(c, normal, vi);
    if (local->hold) {
        double along = 0.0;
        for (int a = 0; a < 3; ++a) {
            local->slip[a] = (moved[a] - xo[a]) - (end[a] - start[a]);
            along += local->slip[a] * normal[a];
        }
        for (int a = 0; a < 3; ++a) moved[a] -= local->slip[a] - along * normal[a];
    }
    for (int a = 0; a < 3; ++a) xi[a] = moved[a];
}

static double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void hessian_times(const double* hessian, const double* y, double* out) {
    for (int a = 0; a < 3; ++a) out[a] = hessian[3 * a] * y[0] + hessian[3 * a + 1] * y[1] + hessian[3 * a + 2] * y[2];
}

/* The tangent of one collider's contact with one node: (dxo, dx, dv) -> (dx', dv') in place. */
static void contact_local_tangent(const ms_collider* c, const contact_local* local, const double* dxo, double* dx,
                                  double* dv) {
    const double* n = local->normal;
    double dn[3], dmoved[3];
    hessian_times(local->hessian, dx, dn);
    const double push = local->project ? dot3(n, dx) : 0.0;
    for (int a = 0; a < 3; ++a) dmoved[a] = dx[a] - push * n[a] - local->gap * dn[a];
    if (local->response != 0) {
        const double* u = local->relative;
        const double big_e = 1.0 + c->restitution, vn = dot3(u, n), change = -big_e * vn;
        const double dvn = dot3(dv, n) + dot3(u, dn), dchange = -big_e * dvn;
        double out[3];
        for (int a = 0; a < 3; ++a) out[a] = (dvn + dchange) * n[a] + (vn + change) * dn[a];
        if (local->response == 1) {
            double t[3], dt[3];
            for (int a = 0; a < 3; ++a) {
                t[a] = u[a] - vn * n[a];
                dt[a] = dv[a] - dvn * n[a] - vn * dn[a];
            }
            const double speed = ms_length3(t);
            const double keep = 1.0 - c->friction * change / speed;
            const double dspeed = dot3(t, dt) / speed;
            const double dkeep = -c->friction * (dchange / speed - change * dspeed / (speed * speed));
            for (int a = 0; a < 3; ++a) out[a] += dkeep * t[a] + keep * dt[a];
        }
        for (int a = 0; a < 3; ++a) dv[a] = out[a];
    }
    if (local->hold) {
        const double* slip = local->slip;
        double dslip[3];
        for (int a = 0; a < 3; ++a) dslip[a] = dmoved[a] - dxo[a];
        const double along = dot3(n, dslip) + dot3(slip, dn), slip_n = dot3(slip, n);
        for (int a = 0; a < 3; ++a) dmoved[a] = dxo[a] + along * n[a] + slip_n * dn[a];
    }
    for (int a = 0; a < 3; ++a) dx[a] = dmoved[a];
}

/* Its adjoint: (lx', lv') -> (lx, lv) in place, with lxo added to. */
static void contact_local_adjoint(const ms_collider* c, const contact_local* local, double* lx, double* lv,
                                  double* lxo) {
    const double* n = local->normal;
    double ln[3] = {0.0, 0.0, 0.0}, lmoved[3] = {lx[0], lx[1], lx[2]};
    if (local->hold) {
        const double* slip = local->slip;
        const double along = dot3(n, lmoved), slip_n = dot3(slip, n);
        for (int a = 0; a < 3; ++a) {
            lxo[a] += lmoved[a] - along * n[a];
            ln[a] += along * slip[a] + slip_n * lmoved[a];
        }
        for (int a = 0; a < 3; ++a) lmoved[a] = along * n[a];
    }
    if (local->response != 0) {
        const double* u = local->relative;
        const double big_e = 1.0 + c->restitution, vn = dot3(u, n), change = -big_e * vn;
        double lu[3] = {0.0, 0.0, 0.0};
        double lvn = (1.0 - big_e) * dot3(n, lv);
        for (int a = 0; a < 3; ++a) ln[a] += (vn + change) * lv[a];
        if (local->response == 1) {
            double t[3], lt[3];
            for (int a = 0; a < 3; ++a) t[a] = u[a] - vn * n[a];
            const double speed = ms_length3(t);
            const double keep = 1.0 - c->friction * change / speed;
            const double lkeep = dot3(t, lv);
            lvn += c->friction * big_e / speed * lkeep;
            const double lspeed = c->friction * change / (speed * speed) * lkeep;
            for (int a = 0; a < 3; ++a) lt[a] = keep * lv[a] + lspeed * t[a] / speed;
            const double n_lt = dot3(n, lt);
            for (int a = 0; a < 3; ++a) {
                lu[a] += lt[a];
                ln[a] -= vn * lt[a];
            }
            lvn -= n_lt;
        }
        for (int a = 0; a < 3; ++a) {
            lu[a] += lvn * n[a];
            ln[a] += lvn * u[a];
        }
        for (int a = 0; a < 3; ++a) lv[a] = lu[a];
    }
    const double push = local->project ? dot3(n, lmoved) : 0.0;
    double h_moved[3], h_normal[3];
    hessian_times(local->hessian, lmoved, h_moved);
    hessian_times(local->hessian, ln, h_normal);
    for (int a = 0; a < 3; ++a) lx[a] = lmoved[a] - push * n[a] - local->gap * h_moved[a] + h_normal[a];
}

size_t ms_contact_derivative_bytes(const ms_model* m) {
    return sizeof(contact_local) * (size_t)(m->ncollider > 0 ? m->ncollider : 1);
}

void ms_contact_tangent(const ms_model* m, const double* inv_mass, const double* centers, double h,
                        const double* x_old, const double* x, const double* v, const double* dx_old, double* dx,
                        double* dv) {
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (inv_mass[i] == 0.0) continue;
        double xi[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, vi[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
        for (int64_t k = 0; k < m->ncollider; ++k) {
            contact_local local;
            contact_again(m, centers, h, k, x_old + 3 * i, xi, vi, &local);
            if (local.touched) contact_local_tangent(&m->colliders[k], &local, dx_old + 3 * i, dx + 3 * i, dv + 3 * i);
        }
    }
}

void ms_contact_adjoint(const ms_model* m, const double* inv_mass, const double* centers, double h,
                        const double* x_old, const double* x, const double* v, double* lx, double* lv,
                        double* lx_old, void* scratch) {
    contact_local* locals = scratch;
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (inv_mass[i] == 0.0) continue;
        double xi[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, vi[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
        int64_t last = -1;
        for (int64_t k = 0; k < m->ncollider; ++k) {
            contact_again(m, centers, h, k, x_old + 3 * i, xi, vi, &locals[k]);
            if (locals[k].touched) last = k;
        }
        for (int64_t k = last; k >= 0; --k)
            if (locals[k].touched)
                contact_local_adjoint(&m->colliders[k], &locals[k], lx + 3 * i, lv + 3 * i, lx_old + 3 * i);
    }
}

void ms_held_hessians(const ms_model* m, const double* centers, const double* x, const double* held,
                      double* hessian) {
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* n = held + 3 * i;
        double* out = hessian + 9 * i;
        for (int q = 0; q < 9; ++q) out[q] = 0.0;
        if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
        /* the last collider at rest whose normal at x_i is the one found: ms_find_held's */
        for (int64_t k = m->ncollider - 1; k >= 0; --k) {
            const ms_collider* c = m->colliders + k;
            if (c->velocity[0] != 0.0 || c->velocity[1] != 0.0 || c->velocity[2] != 0.0) continue;
            double normal[3];
            ms_collider_distance_inline(c, centers + 3 * k, x + 3 * i, normal);
            if (normal[0] != n[0] || normal[1] != n[1] || normal[2] != n[2]) continue;
            const double r[3] = {x[3 * i] - centers[3 * k], x[3 * i + 1] - centers[3 * k + 1],
                                 x[3 * i + 2] - centers[3 * k + 2]};
            distance_hessian(c, r, out);
            break;
        }
    }
}
