/* Colliders: the list kept in the model, signed distances, and the contact response. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char* const collider_names[MS_COLLIDER_TYPE_COUNT] = {"plane", "sphere", "box", "cylinder"};

static int all_finite3(const double v[3]) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* The largest |component| of a and a / largest, whose length is in [1, sqrt 3]: scaling
   before squaring keeps the length of a finite vector of any size from overflowing or
   underflowing.  Returns 0 (and leaves scaled unset) for the zero vector. */
static double scale_vector(const double a[3], double scaled[3]) {
    const double largest = fmax(fabs(a[0]), fmax(fabs(a[1]), fabs(a[2])));
    if (!(largest > 0.0)) return 0.0;
    for (int q = 0; q < 3; ++q) scaled[q] = a[q] / largest;
    return largest;
}

static double scaled_length(const double scaled[3]) {
    return sqrt(scaled[0] * scaled[0] + scaled[1] * scaled[1] + scaled[2] * scaled[2]);
}

int ms_collider_check(const ms_collider* c, ms_error* err) {
    if ((int)c->type < 0 || c->type >= MS_COLLIDER_TYPE_COUNT)
        return ms_error_set(err, MS_ERR_VALUE, "collider type %d is unknown", (int)c->type);
    const char* name = collider_names[c->type];
    if (!all_finite3(c->center) || !all_finite3(c->axis) || !all_finite3(c->size) || !all_finite3(c->velocity))
        return ms_error_set(err, MS_ERR_VALUE, "%s: position, axis, size and velocity must be finite", name);
    if (c->type == MS_PLANE || c->type == MS_CYLINDER) {
        double scaled[3];
        const double largest = scale_vector(c->axis, scaled);
        if (!(largest > 0.0 && largest * scaled_length(scaled) > 1e-12))
            return ms_error_set(err, MS_ERR_VALUE, "%s: the %s must be a non-zero vector", name,
                                c->type == MS_PLANE ? "normal" : "axis");
    }
    const int sizes = c->type == MS_PLANE ? 0 : c->type == MS_SPHERE ? 1 : c->type == MS_BOX ? 3 : 2;
    static const char* const size_names[MS_COLLIDER_TYPE_COUNT][3] = {
        {"", "", ""}, {"radius", "", ""}, {"half extent x", "half extent y", "half extent z"},
        {"radius", "half height", ""}};
    for (int a = 0; a < sizes; ++a)
        if (!(c->size[a] > 0.0))
            return ms_error_set(err, MS_ERR_VALUE, "%s: %s = %g must be > 0 (m)", name, size_names[c->type][a],
                                c->size[a]);
    if (!isfinite(c->restitution) || c->restitution < 0.0 || c->restitution > 1.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: restitution = %g must be in [0, 1]", name, c->restitution);
    if (!isfinite(c->friction) || c->friction < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: friction = %g must be finite and >= 0", name, c->friction);
    if (!isfinite(c->thickness) || c->thickness < 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "%s: thickness = %g must be finite and >= 0 (m)", name, c->thickness);
    ms_error_clear(err);
    return MS_OK;
}

static ms_collider normalised(const ms_collider* c) {
    ms_collider copy = *c;
    if (c->type == MS_PLANE || c->type == MS_CYLINDER) {
        double scaled[3];
        const double largest = scale_vector(c->axis, scaled); /* > 0: checked */
        const double length = scaled_length(scaled);
        /* An axis that is already unit is kept bit for bit: normalising again is not
           idempotent in floating point, and a saved model must load exactly.  (largest *
           length may overflow to inf: then it is not unit.) */
        if (fabs(largest * length - 1.0) > 4.0 * DBL_EPSILON)
            for (int a = 0; a < 3; ++a) copy.axis[a] = scaled[a] / length;
    }
    return copy;
}

/* The row of the collider with that id in the model's list (and the state's), or -1. */
static int64_t collider_row(const ms_model* m, int64_t id) {
    for (int64_t k = 0; k < m->ncollider; ++k)
        if (m->colliders[k].id == id) return k;
    return -1;
}

int ms_state_same_colliders(const ms_model* m, const ms_state* s, ms_error* err) {
    int same = s->collider_count == m->ncollider;
    for (int64_t k = 0; same && k < m->ncollider; ++k) same = s->collider_id[k] == m->colliders[k].id;
    if (!same)
        return ms_error_set(err, MS_ERR_VALUE,
                            "the state's colliders are not the model's: add, change and remove colliders "
                            "through this state");
    return MS_OK;
}

int64_t ms_model_add_collider(ms_model* m, const ms_collider* c, ms_error* err) {
    if (ms_collider_check(c, err) != MS_OK) return -1;
    if (m->ncollider == m->collider_capacity) {
        const int64_t capacity = m->collider_capacity > 0 ? 2 * m->collider_capacity : 4;
        ms_collider* grown = realloc(m->colliders, sizeof(ms_collider) * (size_t)capacity);
        if (grown == NULL) {
            ms_error_set(err, MS_ERR_MEMORY, "out of memory adding a collider");
            return -1;
        }
        m->colliders = grown;
        m->collider_capacity = capacity;
    }
    ms_collider added = normalised(c);
    added.id = m->next_collider_id++;
    m->colliders[m->ncollider++] = added;
    ms_error_clear(err);
    return added.id;
}

int64_t ms_add_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK || ms_state_reserve_colliders(s, m->ncollider + 1, err) != MS_OK)
        return -1;
    const int64_t id = ms_model_add_collider(m, c, err);
    if (id < 0) return -1;
    const int64_t row = m->ncollider - 1;
    memcpy(s->collider_center + 3 * row, m->colliders[row].center, sizeof m->colliders[row].center);
    s->collider_id[row] = id;
    s->collider_count = m->ncollider;
    return id;
}

const ms_collider* ms_find_collider(const ms_model* m, int64_t id) {
    const int64_t row = collider_row(m, id);
    return row >= 0 ? &m->colliders[row] : NULL;
}

const double* ms_collider_position(const ms_state* s, int64_t id) {
    for (int64_t k = 0; k < s->collider_count; ++k)
        if (s->collider_id[k] == id) return s->collider_center + 3 * k;
    return NULL;
}

int ms_set_collider(ms_model* m, ms_state* s, const ms_collider* c, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK) return MS_ERR_VALUE;
    const int64_t row = collider_row(m, c->id);
    if (row < 0) return ms_error_set(err, MS_ERR_VALUE, "no collider with id %lld", (long long)c->id);
    ms_collider* target = &m->colliders[row];
    if (c->type != target->type)
        return ms_error_set(err, MS_ERR_VALUE, "a collider's type cannot change (%s)", collider_names[target->type]);
    if (ms_collider_check(c, err) != MS_OK) return MS_ERR_VALUE;
    double start[3];
    memcpy(start, target->center, sizeof start);
    *target = normalised(c);
    if (s->steps > 0) memcpy(target->center, start, sizeof start); /* where it starts stays */
    memcpy(s->collider_center + 3 * row, c->center, sizeof c->center);
    ms_error_clear(err);
    return MS_OK;
}

int ms_remove_collider(ms_model* m, ms_state* s, int64_t id, ms_error* err) {
    if (ms_state_same_colliders(m, s, err) != MS_OK) return MS_ERR_VALUE;
    const int64_t row = collider_row(m, id);
    if (row < 0) return ms_error_set(err, MS_ERR_VALUE, "no collider with id %lld", (long long)id);
    const size_t after = (size_t)(m->ncollider - row - 1);
    memmove(m->colliders + row, m->colliders + row + 1, sizeof(ms_collider) * after);
    memmove(s->collider_center + 3 * row, s->collider_center + 3 * (row + 1), sizeof(double) * 3 * after);
    memmove(s->collider_id + row, s->collider_id + row + 1, sizeof(int64_t) * after);
    m->ncollider -= 1;
    s->collider_count = m->ncollider;
    ms_error_clear(err);
    return MS_OK;
}

static double length3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* ms_collider_distance, inlined into the contact loops. */
static inline double collider_distance(const ms_collider* c, const double center[3], const double p[3],
                                       double normal[3]) {
    const double r[3] = {p[0] - center[0], p[1] - center[1], p[2] - center[2]};
    switch (c->type) {
        case MS_PLANE: {
            for (int a = 0; a < 3; ++a) normal[a] = c->axis[a];
            return r[0] * c->axis[0] + r[1] * c->axis[1] + r[2] * c->axis[2];
        }
        case MS_SPHERE: {
            const double length = length3(r);
            if (length > 0.0)
                for (int a = 0; a < 3; ++a) normal[a] = r[a] / length;
            else
                normal[0] = 0.0, normal[1] = 1.0, normal[2] = 0.0;
            return length - c->size[0];
        }
        case MS_BOX: {
            /* q = |r| - half extents: the exact box distance, outside and inside. */
            double q[3], outside[3], largest = -INFINITY;
            int axis_of_largest = 0;
            for (int a = 0; a < 3; ++a) {
                q[a] = fabs(r[a]) - c->size[a];
                outside[a] = q[a] > 0.0 ? q[a] : 0.0;
                if (q[a] > largest) largest = q[a], axis_of_largest = a;
            }
            const double outside_length = length3(outside);
            if (outside_length > 0.0) {
                for (int a = 0; a < 3; ++a) normal[a] = (r[a] < 0.0 ? -outside[a] : outside[a]) / outside_length;
                return outside_length;
            }
            for (int a = 0; a < 3; ++a) normal[a] = 0.0;
            normal[axis_of_largest] = r[axis_of_largest] < 0.0 ? -1.0 : 1.0;
            return largest;
        }
        case MS_CYLINDER: {
            const double* axis = c->axis;
            const double along = r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2];
            double radial[3] = {r[0] - along * axis[0], r[1] - along * axis[1], r[2] - along * axis[2]};
            const double rho = length3(radial);
            if (rho > 0.0) {
                const double inv_rho = 1.0 / rho;
                for (int a = 0; a < 3; ++a) radial[a] *= inv_rho;
            }
            else {
                /* on the axis: any direction perpendicular to it */
                const double helper[3] = {fabs(axis[0]) < 0.9 ? 1.0 : 0.0, fabs(axis[0]) < 0.9 ? 0.0 : 1.0, 0.0};
                const double dot = helper[0] * axis[0] + helper[1] * axis[1] + helper[2] * axis[2];
                double perpendicular[3] = {helper[0] - dot * axis[0], helper[1] - dot * axis[1], helper[2] - dot * axis[2]};
                const double length = length3(perpendicular);
                for (int a = 0; a < 3; ++a) radial[a] = perpendicular[a] / length;
            }
            const double side = along < 0.0 ? -1.0 : 1.0;
            const double dr = rho - c->size[0], dh = fabs(along) - c->size[1];
            if (dr > 0.0 && dh > 0.0) {
                const double length = sqrt(dr * dr + dh * dh);
                const double inv_length = 1.0 / length;
                for (int a = 0; a < 3; ++a) normal[a] = (dr * radial[a] + dh * side * axis[a]) * inv_length;
                return length;
            }
            if (dr > dh) {
                for (int a = 0; a < 3; ++a) normal[a] = radial[a];
                return dr;
            }
            for (int a = 0; a < 3; ++a) normal[a] = side * axis[a];
            return dh;
        }
        default:
            normal[0] = 0.0, normal[1] = 1.0, normal[2] = 0.0;
            return INFINITY;
    }
}

double ms_collider_distance(const ms_collider* c, const double center[3], const double p[3], double normal[3]) {
    return collider_distance(c, center, p, normal);
}

/* First point of the relative segment r0 -> r1 (collider frame, collider at the origin)
   closer than thickness to the surface, by sphere tracing on the exact distance; start_gap
   is the gap at r0.  Returns the fraction t in (0, 1], or -1 if the segment stays outside. */
static double first_contact(const ms_collider* c, const double r0[3], const double r1[3], double start_gap) {
    static const double origin[3] = {0.0, 0.0, 0.0};
    const double travel[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
    const double distance = length3(travel);
    if (!(distance > 0.0)) return -1.0;
    double normal[3], t = 0.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
        const double p[3] = {r0[0] + t * travel[0], r0[1] + t * travel[1], r0[2] + t * travel[2]};
        const double gap = iteration == 0 ? start_gap : collider_distance(c, origin, p, normal) - c->thickness;
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
    const double speed = length3(tangent);
    /* Coulomb: the tangential speed drops by at most mu times the normal change. */
    const double keep = speed > 0.0 && speed > c->friction * change ? 1.0 - c->friction * change / speed : 0.0;
    for (int a = 0; a < 3; ++a) v[a] = c->velocity[a] + (vn + change) * normal[a] + keep * tangent[a];
    return keep == 0.0 && c->friction > 0.0;
}

ms_contact ms_collide_nodes(const ms_model* m, ms_state* s, const double* MS_RESTRICT x_old, double* MS_RESTRICT x,
                            double* MS_RESTRICT v, double h, int64_t begin, int64_t end_node) {
    ms_contact contact = {0.0, 0.0, 0};
    const double* g = m->opt.gravity;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    double* MS_RESTRICT clearance = s->clearance;
    for (int64_t k = 0; k < m->ncollider; ++k) {
        const ms_collider* c = &m->colliders[k];
        const double* start = s->collider_center + 3 * k;
        const double end[3] = {start[0] + h * c->velocity[0], start[1] + h * c->velocity[1],
                               start[2] + h * c->velocity[2]};
        /* The skip below needs a distance that grows no faster than the path: true for a
           unit axis (as adding or setting a collider leaves it), not for one written
           into the model's list directly with another length. */
        const double axis2 = c->axis[0] * c->axis[0] + c->axis[1] * c->axis[1] + c->axis[2] * c->axis[2];
        const int lipschitz = (c->type != MS_PLANE && c->type != MS_CYLINDER) || fabs(axis2 - 1.0) <= 1e-12;
        double* known = clearance != NULL && lipschitz ? clearance + k * m->nnode : NULL;
        for (int64_t i = begin; i < end_node; ++i) {
            if (inv_mass[i] == 0.0) continue;
            double* xi = x + 3 * i;
            double* vi = v + 3 * i;
            /* Relative path from the start of the step, in the collider's frame. */
            const double* xo = x_old + 3 * i;
            const double r0[3] = {xo[0] - start[0], xo[1] - start[1], xo[2] - start[2]};
            const double r1[3] = {xi[0] - end[0], xi[1] - end[1], xi[2] - end[2]};
            const double path[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
            /* The signed distances are 1-Lipschitz, so a node that starts farther from the
               surface than its whole path is long cannot come within the thickness: no
               contact, as the full test below would find, and its gap at the end is at
               least the difference.  known[i] keeps that lower bound from step to step
               (0: none), so a node far from the collider is passed over with no distance
               evaluated until its paths add up to its last known gap.  The path's L1 length
               bounds its length; the margins cover the rounding of the distances, which
               grows with the coordinates. */
            const double scale = fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + fabs(path[0]) + fabs(path[1]) +
                                 fabs(path[2]) + c->thickness;
            const double margin = 1e-12 * scale;
            if (known != NULL) {
                const double bound = fabs(path[0]) + fabs(path[1]) + fabs(path[2]) + margin;
                if (known[i] > bound) {
                    known[i] -= bound;
                    continue;
                }
            }
            static const double origin[3] = {0.0, 0.0, 0.0};
            double normal[3], moved[3];
            const double start_gap = collider_distance(c, origin, r0, normal) - c->thickness;
            const double travel = sqrt(path[0] * path[0] + path[1] * path[1] + path[2] * path[2]);
            if (lipschitz && start_gap > travel + margin) {
                if (known != NULL) known[i] = start_gap - travel - margin;
                continue;
            }
            if (known != NULL) known[i] = 0.0;
            double end_normal[3];
            const double end_gap = collider_distance(c, origin, r1, end_normal) - c->thickness;
            double t = -1.0;
            if (start_gap > 1e-9 * travel) t = first_contact(c, r0, r1, start_gap); /* entered during the step? */
            int through_entry = 0;
            if (t >= 0.0) {
                const double hit[3] = {r0[0] + t * (r1[0] - r0[0]), r0[1] + t * (r1[1] - r0[1]),
                                       r0[2] + t * (r1[2] - r0[2])};
                const double gap = collider_distance(c, origin, hit, normal) - c->thickness;
                /* Out through the face it came in by when the end is outside again (it
                   crossed a thin collider) or nearest to another face (it went deep): onto
                   the tangent plane at the entry point, keeping its motion along the
                   surface.  A fast node must not come out on the far side. */
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
                if (end_gap >= 0.0) continue;
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
                /* Static friction: a node that friction holds does not creep either -- undo
                   the tangential part of its displacement relative to the collider. */
                double slip[3], along = 0.0;
                for (int a = 0; a < 3; ++a) {
                    slip[a] = (moved[a] - x_old[3 * i + a]) - (end[a] - start[a]);
                    along += slip[a] * normal[a];
                }
                for (int a = 0; a < 3; ++a) moved[a] -= slip[a] - along * normal[a];
            }
            /* The ledger (see ms_contact): the work of the collider, its impulse times its
               velocity (exactly 0 for a collider at rest), and the change of the node's
               kinetic energy in the collider's frame plus the gravitational energy the
               projection adds (the springs' share is summed afterwards from push_from). */
            double relative_before = 0.0, relative_after = 0.0, impulse_work = 0.0, lift = 0.0;
            for (int a = 0; a < 3; ++a) {
                relative_before += (v_before[a] - V[a]) * (v_before[a] - V[a]);
                relative_after += (vi[a] - V[a]) * (vi[a] - V[a]);
                impulse_work += V[a] * (vi[a] - v_before[a]);
                lift -= g[a] * (moved[a] - xi[a]);
            }
            contact.change += mass * (0.5 * (relative_after - relative_before) + lift);
            contact.work += mass * impulse_work;
            if (!s->pushed[i]) {
                s->pushed[i] = 1;
                for (int a = 0; a < 3; ++a) s->push_from[3 * i + a] = xi[a];
                contact.pushes += 1;
            }
            for (int a = 0; a < 3; ++a) xi[a] = moved[a];
            /* The push moved the node after the colliders before this one took its gap:
               their bounds no longer hold (the next step's path starts after the push). */
            if (clearance != NULL)
                for (int64_t e = 0; e < k; ++e) clearance[e * m->nnode + i] = 0.0;
        }
    }
    return contact;
}

double ms_push_spring_energy(const ms_model* m, ms_state* s, const double* x) {
    uint8_t* pushed = s->pushed;
    const double* from = s->push_from;
    double change = 0.0;
    /* Each spring with a pushed end once, from its lowest pushed end, nodes in order. */
    for (int64_t node = 0; node < m->nnode; ++node) {
        if (!pushed[node]) continue;
        for (int64_t e = s->node_spring_start[node]; e < s->node_spring_start[node + 1]; ++e) {
            const int64_t k = s->node_springs[e];
            const int64_t i = m->springs[2 * k], j = m->springs[2 * k + 1];
            const int64_t other = i == node ? j : i;
            if (other < node && pushed[other]) continue;
            const double* xi = x + 3 * i;
            const double* xj = x + 3 * j;
            const double* bi = pushed[i] ? from + 3 * i : xi;
            const double* bj = pushed[j] ? from + 3 * j : xj;
            double before2 = 0.0, after2 = 0.0;
            for (int a = 0; a < 3; ++a) {
                before2 += (bj[a] - bi[a]) * (bj[a] - bi[a]);
                after2 += (xj[a] - xi[a]) * (xj[a] - xi[a]);
            }
            const double before = sqrt(before2), after = sqrt(after2);
            /* 1/2 k ((l_a - L)^2 - (l_b - L)^2) = 1/2 k (l_a - l_b) (l_a + l_b - 2 L): no
               difference of two large energies */
            change += 0.5 * m->k[k] * (after - before) * (after + before - 2.0 * m->rest[k]);
        }
    }
    memset(pushed, 0, (size_t)m->nnode);
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

const char* ms_collider_type_name(int type) {
    if (type < 0 || type >= MS_COLLIDER_TYPE_COUNT) return NULL;
    return collider_names[type];
}
